/*
 * tests/programs/cond_errors.c - condition waits that fail at once, as
 * glibc's do: an error-checking mutex the caller does not hold (EPERM), a
 * deadline whose nanoseconds are out of range and a clock a wait cannot use
 * (EINVAL). A thread meanwhile takes the mutex, so the waits have company.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t m;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;

static void *other(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100; i++) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
	return NULL;
}

int main(void)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&m, &a);
	pthread_t th;
	pthread_create(&th, NULL, other, NULL);

	int r = pthread_cond_wait(&c, &m); /* not held */
	printf("wait, mutex not held: %s\n", strerrorname_np(r));
	struct timespec bad = {0, 1000000001};
	pthread_mutex_lock(&m);
	r = pthread_cond_timedwait(&c, &m, &bad);
	printf("timedwait, bad deadline: %s\n", strerrorname_np(r));
	struct timespec soon;
	clock_gettime(CLOCK_MONOTONIC, &soon);
	r = pthread_cond_clockwait(&c, &m, CLOCK_PROCESS_CPUTIME_ID, &soon);
	printf("clockwait, bad clock: %s\n", strerrorname_np(r));
	r = pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &soon);
	printf("clockwait, past deadline: %s\n", strerrorname_np(r));
	pthread_mutex_unlock(&m);
	pthread_join(th, NULL);
	return 0;
}
