/*
 * exit_busy [MS]: a worker takes and gives back a lock as fast as it can;
 * after MS milliseconds (default 100) the main thread prints "main exits"
 * and calls exit(0) while the worker still runs (nothing orders the two);
 * exit's handler computes for a while (no event), so the worker logs many
 * events after main's last one.
 * Every event the worker logged before the process died happened in the
 * recording, so a replay (and a live replica, detrec --follow) must do them
 * all before its exit ends the process: the replica's exit may not take
 * its own end as the recording's (tests/e2e/test_follow.py).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long rounds;

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		rounds++;
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

static void compute_at_exit(void)
{
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < 100000000ul; i++)
		x += i;
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 100;
	if (argc > 2 || ms < 0) {
		fprintf(stderr, "usage: exit_busy [MS]\n");
		return 2;
	}
	atexit(compute_at_exit);
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL) != 0)
		return 1;
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
	printf("main exits\n");
	exit(0);
}
