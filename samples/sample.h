/*
 * samples/sample.h - the few helpers every sample shares.
 *
 * Rules: a sample prints its result and exits 0 when the bug did not show;
 * when it did, it prints one line "BUG: <what>" and exits 1. Optional
 * arguments scale the run (tests use small values, demos the defaults).
 * With SAMPLE_KEEP_GOING set in the environment a bug is reported and the
 * run goes on, so that it does a fixed amount of work (benchmarks); its
 * exit status then says nothing about the bug.
 */
#ifndef DET_SAMPLE_H
#define DET_SAMPLE_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* One thread reports at a time, and the first to exit keeps the lock:
 * exit's flush of stdout takes no lock, so a second thread printing while
 * the first exits could have its line written twice or not at all (a race
 * in libc's exit, not the sample's bug, and different in every run). */
static pthread_mutex_t sample_bug_lock __attribute__((unused)) = PTHREAD_MUTEX_INITIALIZER;

#define BUG(...)                                                                                   \
	do {                                                                                       \
		pthread_mutex_lock(&sample_bug_lock);                                              \
		printf("BUG: ");                                                                   \
		printf(__VA_ARGS__);                                                               \
		printf("\n");                                                                      \
		fflush(stdout);                                                                    \
		if (!getenv("SAMPLE_KEEP_GOING"))                                                  \
			exit(1);                                                                   \
		pthread_mutex_unlock(&sample_bug_lock);                                            \
	} while (0)

/* argv[i] as a number, or dflt when absent. */
static inline long arg_long(int argc, char **argv, int i, long dflt)
{
	if (argc <= i)
		return dflt;
	char *end;
	long v = strtol(argv[i], &end, 10);
	if (*end || v <= 0) {
		fprintf(stderr, "%s: argument %d must be a positive number\n", argv[0], i);
		exit(2);
	}
	return v;
}

/* Burn a little time without any synchronization: widens a race window. */
static inline void spin(unsigned n)
{
	for (volatile unsigned i = 0; i < n; i++)
		;
}

#endif
