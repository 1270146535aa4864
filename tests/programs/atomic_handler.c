/*
 * atomic_handler - a signal handler with atomics of its own, delivered
 * while the program runs atomics: nginx's ngx_time_sigsafe_update takes a
 * spinlock (lock cmpxchg) in its SIGALRM-style handler while the main code
 * counts with lock xadd. Built with plain gcc, so its atomics are det events
 * only with detrec --patch-atomics; a timer signal that arrives in the
 * program's code is held to the next event, which is an atomic's, and
 * replay runs the handler (and its atomics) at that atomic's start.
 *
 * A worker thread counts too, so that the order of the counter's atomics
 * between the threads is what replay must repeat; the handler records the
 * counter's value each time it runs, with a lock-prefixed read (an event
 * too: a plain load of it would be a race det does not order). Prints how many times the handler ran
 * and a checksum of the values it saw.
 * Usage: atomic_handler [ROUNDS]   (default 300000)
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

static long counter;
static int lock;
static long seen_sum, seen_n;

static void on_alarm(int sig)
{
	(void)sig;
	int free = 0;
	if (!__atomic_compare_exchange_n(&lock, &free, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return; /* (never taken elsewhere; the compare-exchange is the point) */
	seen_sum = seen_sum * 31 + __atomic_fetch_add(&counter, 0, __ATOMIC_SEQ_CST); /* (lock xadd: an event) */
	seen_n++;
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}

static long rounds = 300000;

static void *count(void *arg)
{
	(void)arg;
	for (long i = 0; i < rounds; i++)
		__atomic_fetch_add(&counter, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atol(argv[1]);
	struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	/* the worker blocks the timer, so that every delivery is the main thread's */
	sigset_t alarm_only;
	sigemptyset(&alarm_only);
	sigaddset(&alarm_only, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &alarm_only, NULL);
	pthread_t worker;
	pthread_create(&worker, NULL, count, NULL);
	pthread_sigmask(SIG_UNBLOCK, &alarm_only, NULL);
	struct itimerval every_ms = {{0, 1000}, {0, 1000}};
	setitimer(ITIMER_REAL, &every_ms, NULL);
	count(NULL);
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	pthread_join(worker, NULL);
	printf("counter %ld, handler ran %ld times, checksum %ld\n", counter, seen_n, seen_sum);
	return counter == 2 * rounds ? 0 : 1;
}
