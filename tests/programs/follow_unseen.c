/*
 * follow_unseen PATH SECONDS [DELAY]: a worker takes a lock every
 * millisecond for SECONDS, then the program prints "done" and exits 0. With
 * PATH (not "-"), DELAY seconds into the run it prints "unseen" and does what
 * det cannot replay, on purpose: whether it takes a lock
 * or signals a condition depends on a file it creates with a raw system
 * call (the `syscall` instruction, which det does not see), so a replay run
 * after it finds the file there and takes the other branch: a divergence at
 * that event. (tests/e2e/test_follow.py: detrec --follow says so within a
 * second, while the program still runs.)
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER, other = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static double seconds;
static long counter;

static long raw_syscall3(long n, long a, long b, long c)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return r;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
	(void)arg;
	double end = now() + seconds;
	while (now() < end) {
		pthread_mutex_lock(&lock);
		counter++;
		pthread_mutex_unlock(&lock);
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: follow_unseen PATH|- SECONDS [DELAY]\n");
		return 2;
	}
	seconds = atof(argv[2]);
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	if (argc == 4) {
		struct timespec delay = {(time_t)atof(argv[3]), (long)((atof(argv[3]) - (long)atof(argv[3])) * 1e9)};
		nanosleep(&delay, NULL);
	}
	if (strcmp(argv[1], "-") != 0) {
		printf("unseen\n");
		fflush(stdout);
		pthread_mutex_lock(&lock);
		pthread_mutex_unlock(&lock);
		long fd = raw_syscall3(SYS_open, (long)argv[1], O_CREAT | O_EXCL | O_WRONLY, 0600);
		pthread_mutex_lock(&lock);
		pthread_mutex_unlock(&lock);
		if (fd >= 0) { /* the first run: the file was not there */
			raw_syscall3(SYS_close, fd, 0, 0);
			pthread_mutex_lock(&other);
			pthread_mutex_unlock(&other);
		} else {
			pthread_cond_signal(&cond);
		}
	}
	pthread_join(t, NULL);
	printf("done %ld\n", counter > 0 ? 1L : 0L);
	return 0;
}
