/*
 * bench/syscalls.c - input calls in a tight loop: MODE "clock" makes N
 * clock_gettime calls; MODE "pipe" sends N one-byte messages through a pipe
 * from one thread to another (N small reads). MODE clock writes the loop's
 * own time per call (wall and thread CPU) to the file named by $BENCH_REPORT.
 * Usage: syscalls clock|pipe [N]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The raw syscall: the loop's own clock, outside anything det records. */
static double now(clockid_t clock)
{
	struct timespec ts;
	syscall(SYS_clock_gettime, clock, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int fds[2];
static long n;

static void *writer(void *arg)
{
	(void)arg;
	char c = 'x';
	for (long i = 0; i < n; i++)
		if (write(fds[1], &c, 1) != 1)
			break;
	close(fds[1]);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "clock";
	n = argc > 2 ? atol(argv[2]) : 1000000;
	long sum = 0;
	if (!strcmp(mode, "clock")) {
		struct timespec ts;
		double a = now(CLOCK_MONOTONIC), ca = now(CLOCK_THREAD_CPUTIME_ID);
		for (long i = 0; i < n; i++) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			sum += ts.tv_nsec & 1;
		}
		double b = now(CLOCK_MONOTONIC), cb = now(CLOCK_THREAD_CPUTIME_ID);
		const char *report = getenv("BENCH_REPORT");
		FILE *f = report ? fopen(report, "w") : NULL;
		if (f) { /* (not stdout: a replay compares it) */
			fprintf(f, "ns_per_call %.2f\ncpu_ns_per_call %.2f\n", (b - a) / n * 1e9, (cb - ca) / n * 1e9);
			fclose(f);
		}
	} else {
		if (pipe(fds))
			return 2;
		pthread_t t;
		pthread_create(&t, NULL, writer, NULL);
		char c;
		while (read(fds[0], &c, 1) == 1)
			sum++;
		pthread_join(t, NULL);
	}
	printf("%s %ld\n", mode, n);
	return sum < 0;
}
