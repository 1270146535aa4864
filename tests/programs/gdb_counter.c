/*
 * tests/programs/gdb_counter.c - two threads add to one counter under a
 * mutex; what `counter` holds at event N depends only on the interleaving,
 * which makes it the variable the gdb tests read at events.
 *
 * Thread i (T1, T2) adds i per iteration, so at any event boundary
 *     counter == 1 * (T1's mutex_locks done) + 2 * (T2's mutex_locks done)
 * (a thread that holds the lock has already added: det settles it at its
 * unlock turnstile). With GDB_DIVERGE=1 in the environment, T1 takes
 * `other` instead of `lock` in its 6th iteration: a replay of a run
 * recorded without it diverges there.
 *
 * Usage: gdb_counter [ITERS]   (default 100)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t other = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t go; /* both workers start together: their locks interleave */
static long counter;
static long iters = 100;

static void *worker(void *arg)
{
	long id = (long)arg;
	int diverge = getenv("GDB_DIVERGE") != NULL;
	pthread_barrier_wait(&go);
	for (long i = 0; i < iters; i++) {
		pthread_mutex_t *m = (diverge && id == 1 && i == 5) ? &other : &lock;
		pthread_mutex_lock(m);
		counter += id;
		pthread_mutex_unlock(m);
		for (volatile int k = 0; k < 3000; k++)
			; /* work outside the lock: lets the other thread in */
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		iters = atol(argv[1]);
	pthread_t t[2];
	pthread_barrier_init(&go, NULL, 2);
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i + 1));
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("counter %ld\n", counter);
	return 0;
}
