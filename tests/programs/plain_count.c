/*
 * tests/programs/plain_count.c - two threads add to a plain counter (no
 * lock, no atomic) between events (a lock taken every few thousand adds).
 * In parallel, adds are lost and the total is short of the sum (exit 1), by
 * a count that differs from run to run, so a default-mode trace of that
 * failure replays another total. One thread at a time (strict mode, which
 * switches only at events), no add is lost: strict never fails.
 *
 * Output: "total N". Usage: plain_count
 */
#include <pthread.h>
#include <stdio.h>

#define ADDS 5000000L
#define EVERY 250000L

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long total;
static pthread_barrier_t start; /* both threads start adding together */

static void *adder(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	for (long i = 1; i <= ADDS; i++) {
		total = total + 1; /* the race */
		if (i % EVERY == 0) {
			pthread_mutex_lock(&m);
			pthread_mutex_unlock(&m);
		}
	}
	return NULL;
}

int main(void)
{
	pthread_t a, b;
	pthread_barrier_init(&start, NULL, 2);
	pthread_create(&a, NULL, adder, NULL);
	pthread_create(&b, NULL, adder, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("total %ld\n", total);
	if (total != 2 * ADDS) {
		printf("BUG: lost %ld adds\n", 2 * ADDS - total);
		return 1;
	}
	return 0;
}
