/*
 * tests/programs/timer_thread_id.c - a timer that signals one thread
 * (SIGEV_THREAD_ID): a thread says its kernel id, then takes four of the
 * timer's signals with sigwaitinfo and ends; the main thread creates the
 * timer for that id, and joins the thread.
 *
 * The thread's events after its id are all inputs (the signals come from
 * the trace in replay), so replay let it run to its end before the main
 * thread's timer_create, which then named a thread that was gone: EINVAL,
 * where the recording's call worked.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t said = PTHREAD_COND_INITIALIZER;
static pid_t tid;

static void *waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	tid = gettid();
	pthread_cond_signal(&said);
	pthread_mutex_unlock(&lock);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGRTMIN + 1);
	int n = 0;
	for (siginfo_t si; n < 4 && sigwaitinfo(&s, &si) == SIGRTMIN + 1 && si.si_value.sival_int == 5;)
		n++;
	return (void *)(long)n;
}

int main(void)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGRTMIN + 1);
	pthread_sigmask(SIG_BLOCK, &s, NULL); /* (the thread inherits it) */
	pthread_t th;
	if (pthread_create(&th, NULL, waiter, NULL))
		return 1;
	pthread_mutex_lock(&lock);
	while (!tid)
		pthread_cond_wait(&said, &lock);
	pthread_mutex_unlock(&lock);
	struct sigevent ev = {0};
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = SIGRTMIN + 1;
	ev._sigev_un._tid = tid;
	ev.sigev_value.sival_int = 5;
	timer_t timer;
	if (timer_create(CLOCK_MONOTONIC, &ev, &timer)) {
		perror("timer_create");
		return 2;
	}
	struct itimerspec every = {{0, 5000000}, {0, 5000000}};
	timer_settime(timer, 0, &every, NULL);
	void *n;
	pthread_join(th, &n);
	timer_delete(timer);
	printf("the thread took %ld signals of its timer\n", (long)n);
	return 0;
}
