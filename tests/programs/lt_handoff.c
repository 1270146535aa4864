/* tests/programs/lt_handoff.c - threads hand one contended mutex around,
 * and the order of its holders (hashed) is the output: under logical time
 * it must be the same on every run. Each unlock wakes a waiter, whose
 * clock its waker puts after its own: a woken thread that takes its turn
 * by the clock it had before (it saw its wait end before its waker raised
 * the clock) changes the order (1 run in 10 on 2 cores).
 *
 * Usage: lt_handoff [THREADS] [ITERATIONS]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static uint64_t order = 1469598103934665603ull;
static long iters;

static void *worker(void *arg)
{
	uint64_t id = (uint64_t)(uintptr_t)arg;
	for (long i = 0; i < iters; i++) {
		pthread_mutex_lock(&m);
		order = (order ^ id) * 1099511628211ull;
		pthread_mutex_unlock(&m);
		for (volatile int k = 0; k < 50; k++)
			;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	iters = argc > 2 ? atol(argv[2]) : 20000;
	pthread_t t[64];
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("order %016llx\n", (unsigned long long)order);
	return 0;
}
