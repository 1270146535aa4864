/*
 * tests/programs/late_check.c - a failure decided by a data race between
 * events: a worker computes a while, then adds its share to a plain counter
 * (no lock, no atomic) and waits for main's check; main sleeps, then checks
 * the counter under one lock or another. Natively the worker wins: main sees its share, takes lock a
 * and fails (exit 1). Recorded in the default mode, that failure's trace does
 * not replay: replay skips the sleep, main reads first and takes lock b, a
 * divergence at the same event (a data race's shape). Recorded --strict, the
 * race's order is in the schedule and replays.
 *
 * Output: "total N". Usage: late_check
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t checked = PTHREAD_MUTEX_INITIALIZER; /* main holds it until it has checked */
static volatile long total;
static volatile unsigned long sink;

static void *worker(void *arg)
{
	(void)arg;
	for (unsigned long i = 0; i < 40000000ul; i++) /* some computing, no events */
		sink += i;
	total = total + 1; /* the race: a plain read and write */
	pthread_mutex_lock(&checked); /* its next event comes after main's check */
	pthread_mutex_unlock(&checked);
	return NULL;
}

int main(void)
{
	pthread_t t;
	for (int i = 0; i < 2; i++) { /* both locks known to det before the check (ids in this order) */
		pthread_mutex_lock(i ? &b : &a);
		pthread_mutex_unlock(i ? &b : &a);
	}
	pthread_mutex_lock(&checked);
	pthread_create(&t, NULL, worker, NULL);
	/* long enough for the worker natively; replay returns at once, and main
	 * reads first unless it loses the CPU for the worker's whole loop */
	usleep(400 * 1000);
	pthread_mutex_t *m = total ? &a : &b;
	pthread_mutex_lock(m);
	long seen = total;
	pthread_mutex_unlock(m);
	pthread_mutex_unlock(&checked);
	pthread_join(t, NULL);
	printf("total %ld\n", seen);
	if (seen != 0) {
		printf("BUG: the worker's share came before the check\n");
		return 1;
	}
	return 0;
}
