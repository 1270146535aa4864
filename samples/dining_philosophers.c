/*
 * dining_philosophers - N philosophers, N forks, everyone takes the left
 * fork first (the IRS thesis runs it with 16; Silberschatz's text with 5).
 *
 * The bug: a circular wait. Each philosopher holds its left fork and waits
 * for its right one, which its neighbour holds as a left fork.
 *
 * The interleaving that triggers it: every philosopher i does lock(fork i)
 * before any philosopher does its second lock(fork i+1 mod N).
 *
 * Output: "ok: N philosophers ate M meals each", or a hang (record with
 * `detrec --timeout 5`: the trace shows the N-thread wait-for cycle). The
 * trace of a hanging run replays into the same deadlock every time.
 *
 * Usage: dining_philosophers [PHILOSOPHERS] [MEALS]
 */
#include <pthread.h>

#include "sample.h"

#define MAX_PHIL 64

static pthread_mutex_t forks[MAX_PHIL];
static long n, meals;
static long eaten[MAX_PHIL];

static void *philosopher(void *arg)
{
	long i = (long)arg;
	pthread_mutex_t *left = &forks[i], *right = &forks[(i + 1) % n];
	for (long m = 0; m < meals; m++) {
		spin(300); /* think */
		pthread_mutex_lock(left);
		spin(1000);
		pthread_mutex_lock(right);
		eaten[i]++; /* eat */
		pthread_mutex_unlock(right);
		pthread_mutex_unlock(left);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	n = arg_long(argc, argv, 1, 5);
	meals = arg_long(argc, argv, 2, 500);
	if (n < 2 || n > MAX_PHIL) {
		fprintf(stderr, "dining_philosophers: 2 to %d philosophers\n", MAX_PHIL);
		return 2;
	}
	pthread_t t[MAX_PHIL];
	for (long i = 0; i < n; i++)
		pthread_mutex_init(&forks[i], NULL);
	for (long i = 0; i < n; i++)
		pthread_create(&t[i], NULL, philosopher, (void *)i);
	for (long i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	for (long i = 0; i < n; i++)
		if (eaten[i] != meals)
			BUG("philosopher %ld ate %ld of %ld meals", i, eaten[i], meals);
	printf("ok: %ld philosophers ate %ld meals each\n", n, meals);
	return 0;
}
