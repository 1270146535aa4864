/*
 * tests/programs/detached_reuse.c - detached threads whose ids are reused:
 * glibc hands a finished detached thread's stack, and so its pthread_t, to
 * a thread created after it. A first half is created detached (by their
 * attributes, on small stacks), the second half detach themselves at once,
 * sometimes before pthread_create has returned in main, and every other
 * one of those is detached by main too (EINVAL, or a race it may win).
 * Each takes a lock and counts itself; main waits for the count. Two
 * threads spin meanwhile (without events; argv[2] says how many), so that
 * main is often preempted inside pthread_create. A thread's events must name the thread
 * itself, not an earlier one whose id it got.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_c = PTHREAD_COND_INITIALIZER;
static int finished;
static volatile int spinning = 1;

static void *spinner(void *arg)
{
	(void)arg;
	while (spinning)
		;
	return NULL;
}

static void *worker(void *self_detach)
{
	if (self_detach)
		pthread_detach(pthread_self());
	pthread_mutex_lock(&m);
	finished++;
	pthread_cond_signal(&done_c);
	pthread_mutex_unlock(&m);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200;
	int nspin = argc > 2 ? atoi(argv[2]) : 2;
	pthread_t spinners[2];
	if (nspin < 0 || nspin > 2)
		return 2;
	for (int i = 0; i < nspin; i++)
		pthread_create(&spinners[i], NULL, spinner, NULL);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN + 4096);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (int i = 0; i < n; i++) {
		pthread_t th;
		if (i == n / 2)
			pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_JOINABLE);
		if (pthread_create(&th, &attr, worker, (void *)(long)(i >= n / 2)) != 0)
			return 1;
		if (i >= n / 2 && i % 2)
			pthread_detach(th);
	}
	pthread_attr_destroy(&attr);
	pthread_mutex_lock(&m);
	while (finished < n)
		pthread_cond_wait(&done_c, &m);
	pthread_mutex_unlock(&m);
	spinning = 0;
	for (int i = 0; i < nspin; i++)
		pthread_join(spinners[i], NULL);
	printf("%d detached threads finished\n", finished);
	return 0;
}
