/*
 * bench/uncontended.c - one thread locks and unlocks its own mutex ITERS
 * times while a second thread exists (so glibc uses its multithreaded
 * paths). The loop's own time per lock/unlock pair (wall, and the thread's
 * CPU time, which a loaded machine does not inflate) goes to the file named
 * by $BENCH_REPORT (not to stdout: the output must not depend on timing, or
 * a replay would rightly call it different).
 * Usage: uncontended [ITERS]   (default 5000000)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t idle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cond = PTHREAD_COND_INITIALIZER;
static int done;

static void *idle(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&idle_lock);
	while (!done)
		pthread_cond_wait(&idle_cond, &idle_lock);
	pthread_mutex_unlock(&idle_lock);
	return NULL;
}

/* The raw syscall: the loop's own clock, outside anything det records. */
static double now(clockid_t clock)
{
	struct timespec ts;
	syscall(SYS_clock_gettime, clock, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 5000000;
	pthread_t t;
	pthread_create(&t, NULL, idle, NULL);
	double a = now(CLOCK_MONOTONIC), ca = now(CLOCK_THREAD_CPUTIME_ID);
	for (long i = 0; i < iters; i++) {
		pthread_mutex_lock(&lock);
		pthread_mutex_unlock(&lock);
	}
	double b = now(CLOCK_MONOTONIC), cb = now(CLOCK_THREAD_CPUTIME_ID);
	pthread_mutex_lock(&idle_lock);
	done = 1;
	pthread_cond_signal(&idle_cond);
	pthread_mutex_unlock(&idle_lock);
	pthread_join(t, NULL);
	const char *report = getenv("BENCH_REPORT");
	FILE *f = report ? fopen(report, "w") : NULL;
	if (f) {
		fprintf(f, "ns_per_pair %.2f\ncpu_ns_per_pair %.2f\n", (b - a) / iters * 1e9, (cb - ca) / iters * 1e9);
		fclose(f);
	}
	printf("%ld lock/unlock pairs\n", iters);
	return 0;
}
