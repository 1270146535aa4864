/* tests/programs/split_increment.c - two threads each add 1 to a counter
 * in two critical sections (read it under the lock, write it back under the
 * lock). Fails (exit 1) when an update is lost: one thread must be
 * preempted between its two sections, a bug of depth 2 for PCT. Run
 * without a preemption inside a thread (PCT depth 1), it never fails. */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void *adder(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&m);
	long v = counter;
	pthread_mutex_unlock(&m);
	pthread_mutex_lock(&m);
	counter = v + 1;
	pthread_mutex_unlock(&m);
	return NULL;
}

int main(void)
{
	pthread_t a, b;
	pthread_create(&a, NULL, adder, NULL);
	pthread_create(&b, NULL, adder, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("counter %ld\n", counter);
	if (counter != 2) {
		printf("BUG: lost an update\n");
		return 1;
	}
	return 0;
}
