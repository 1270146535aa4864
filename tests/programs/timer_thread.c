/*
 * tests/programs/timer_thread.c - two POSIX timers that notify in a new
 * thread (SIGEV_THREAD), firing every 3 and 4 ms; each callback takes a lock
 * and appends its timer's number, and main prints the order once 8 have run. The
 * order depends on the timers' timing and the callbacks' threads.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int order[32], n;

static void fired(union sigval v)
{
	pthread_mutex_lock(&m);
	if (n < 32)
		order[n++] = v.sival_int;
	pthread_mutex_unlock(&m);
}

int main(void)
{
	timer_t tm[2];
	for (int i = 0; i < 2; i++) {
		struct sigevent ev = {0};
		ev.sigev_notify = SIGEV_THREAD;
		ev.sigev_notify_function = fired;
		ev.sigev_value.sival_int = i;
		if (timer_create(CLOCK_MONOTONIC, &ev, &tm[i]) != 0) {
			perror("timer_create");
			return 1;
		}
		struct itimerspec its = {{0, 3000000 + i * 1000000}, {0, 3000000 + i * 1000000}};
		timer_settime(tm[i], 0, &its, NULL);
	}
	/* until 8 callbacks ran (at most 5 s): a fixed 50 ms left a loaded
	 * machine too few of them to test */
	for (int waited = 0, ran = 0; ran < 8 && waited < 1000; waited++) {
		usleep(5000);
		pthread_mutex_lock(&m);
		ran = n;
		pthread_mutex_unlock(&m);
	}
	for (int i = 0; i < 2; i++)
		timer_delete(tm[i]);
	pthread_mutex_lock(&m);
	for (int i = 0; i < n; i++)
		printf("%d", order[i]);
	printf("\n");
	pthread_mutex_unlock(&m);
	return 0;
}
