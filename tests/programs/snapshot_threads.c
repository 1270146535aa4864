/*
 * tests/programs/snapshot_threads.c - three workers take turns on shared
 * state, each with what a snapshot of the process must bring back in a
 * recreated thread (tests/gdb/test_gdb_snapshots.py): its thread-local
 * counter (TLS, through its fs base), its thread-specific value
 * (pthread_getspecific, in glibc's struct pthread), an error-checking mutex
 * it holds across other events (glibc checks the owner's thread id at
 * unlock), and a join that waits on its thread id. Each worker prints a line
 * per round; main prints the totals and exits 0 only if they add up.
 *
 * Built without optimization (the pragma): the test reads locals by name.
 *
 * Usage: snapshot_threads [ROUNDS]   (default 40)
 */
#pragma GCC optimize("O0")
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define WORKERS 3

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t held; /* error-checking: held across the shared update */
static pthread_key_t key;
static long counter;
static long progress[WORKERS];
static __thread long mine;
static long rounds = 40;

static void *work(void *arg)
{
	long id = (long)arg;
	long *spec = malloc(sizeof(*spec));
	*spec = 0;
	pthread_setspecific(key, spec);
	for (long i = 0; i < rounds; i++) {
		pthread_mutex_lock(&held);
		pthread_mutex_lock(&lock);
		long now = counter += id + 1;
		pthread_mutex_unlock(&lock);
		mine++;
		*(long *)pthread_getspecific(key) += 2;
		if (pthread_mutex_unlock(&held) != 0) {
			printf("T%ld: unlock of a mutex it holds failed\n", id);
			exit(3);
		}
		progress[id] = mine;
		printf("worker %ld round %ld counter %ld\n", id, i, now);
	}
	long got = *(long *)pthread_getspecific(key);
	free(spec);
	return (void *)(got == 2 * mine && mine == rounds ? 0L : 1L);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atol(argv[1]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&held, &a);
	pthread_key_create(&key, NULL);
	pthread_t t[WORKERS];
	for (long i = 0; i < WORKERS; i++)
		pthread_create(&t[i], NULL, work, (void *)i);
	long bad = 0;
	for (int i = 0; i < WORKERS; i++) {
		void *r;
		pthread_join(t[i], &r);
		bad += (long)r;
	}
	long want = rounds * (1 + 2 + 3);
	printf("counter %ld of %ld, %ld workers wrong, rounds %ld %ld %ld\n", counter, want, bad, progress[0],
	       progress[1], progress[2]);
	return counter == want && !bad ? 0 : 1;
}
