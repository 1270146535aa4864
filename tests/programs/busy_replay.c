/*
 * tests/programs/busy_replay.c - a replay that takes seconds and few
 * events: two threads take turns on a lock ROUNDS times, with WORK steps of
 * computing between turns, for tests that act on a replay while it runs
 * (det-dap's pause: tests/dap/pause.js). Prints the count at the end.
 *
 * Usage: busy_replay ROUNDS WORK
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long count, rounds, work;

static void *worker(void *arg)
{
	(void)arg;
	for (long i = 0; i < rounds; i++) {
		pthread_mutex_lock(&lock);
		count++;
		pthread_mutex_unlock(&lock);
		for (volatile long k = 0; k < work; k++)
			;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: busy_replay ROUNDS WORK\n");
		return 2;
	}
	rounds = atol(argv[1]);
	work = atol(argv[2]);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("count %ld\n", count);
	return 0;
}
