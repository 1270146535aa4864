/*
 * kmod/harness/slowpoke.c - a thread that keeps another waiting for its
 * turn: the guest's test of what detreplay says about a stalled replay
 * with the kmod backend (kmod/harness/guest.py).
 *
 *     slowpoke SECONDS
 *
 * Rules of this file: main holds a lock, starts a thread that wants it,
 * and computes for SECONDS before letting it go; it reads the clock with
 * a raw system call, which det neither sees nor replays, so a replay
 * computes as long as the recording did while the thread waits for its
 * turn.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static double raw_now(void)
{
	struct timespec ts;
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(SYS_clock_gettime), "D"(CLOCK_MONOTONIC), "S"(&ts)
			 : "rcx", "r11", "memory");
	return ret ? 0 : (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1;
	pthread_t t;

	pthread_mutex_lock(&m);
	pthread_create(&t, NULL, waiter, NULL);
	for (double end = raw_now() + secs; raw_now() < end;)
		;
	pthread_mutex_unlock(&m);
	pthread_join(t, NULL);
	printf("slowpoke: done\n");
	return 0;
}
