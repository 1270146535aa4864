/*
 * tests/programs/thread_cpu_clock.c - the main thread reads a worker's CPU
 * time through pthread_getcpuclockid while the worker lives, and its own,
 * and then after the worker ended (EINVAL). The clock's id holds the
 * worker's kernel thread id, another one in replay: replay took it for
 * another clock ("the same input from another file descriptor or clock")
 * until the event named the clock by the recorded id.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static pthread_barrier_t both;

static void *work(void *arg)
{
	(void)arg;
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < 2000000; i++)
		x += i;
	pthread_barrier_wait(&both); /* worked: main reads its clock now */
	pthread_barrier_wait(&both); /* read */
	return NULL;
}

int main(void)
{
	pthread_barrier_init(&both, NULL, 2);
	pthread_t t;
	pthread_create(&t, NULL, work, NULL);
	clockid_t cid;
	if (pthread_getcpuclockid(t, &cid) != 0)
		return 1;
	pthread_barrier_wait(&both);
	struct timespec ts;
	int r = clock_gettime(cid, &ts);
	printf("worker's CPU time read: %s, %ld.%09ld s\n", r == 0 ? "yes" : strerror(errno), (long)ts.tv_sec,
	       ts.tv_nsec);
	pthread_barrier_wait(&both);
	pthread_join(t, NULL);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	printf("own CPU time %ld.%09ld s\n", (long)ts.tv_sec, ts.tv_nsec);
	return 0;
}
