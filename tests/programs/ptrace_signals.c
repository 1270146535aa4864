/*
 * tests/programs/ptrace_signals.c - built with -static (Makefile):
 * asynchronous signals for detrec --ptrace (tests/e2e/test_ptrace.py). An
 * interval timer sends the process SIGALRM every millisecond (the kernel
 * picks the thread); the handler counts. Two threads loop: one sleeps
 * (ppoll, cut short by the signal: EINTR), one reads the clock and then
 * polls without waiting; each writes a line with what it saw of the count
 * after each call, and works about a timer period between its calls. Where
 * the signals came shows in every line, so a replay
 * that delivers them at other places writes other bytes. SIGALRM is
 * blocked but in those ppoll calls (their mask), so that it comes only in
 * a call, the case detrec --ptrace replays exactly (not in the threads'
 * own code: there it would be delivered at the thread's next call).
 *
 * Rules: output is the only thing the test compares; it changes from run
 * to run natively (the timer against the threads' progress).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 120

static volatile sig_atomic_t hits;
static sigset_t open_mask; /* SIGALRM unblocked: only while waiting in ppoll */

static void on_alarm(int sig)
{
	(void)sig;
	hits++;
}

static void say(const char *who, int i, int extra)
{
	char line[64];
	int n = snprintf(line, sizeof line, "%s %d: %d %d\n", who, i, (int)hits, extra);
	if (write(1, line, (size_t)n) != n)
		_exit(2);
}

static void *clocks(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		struct timespec ts, zero = {0, 0};
		clock_gettime(CLOCK_MONOTONIC, &ts);
		int cut = ppoll(NULL, 0, &zero, &open_mask) < 0 && errno == EINTR;
		say("clock", i, cut);
		/* work between calls, about the timer's period: whether a signal
		 * is pending at the next call is a matter of timing */
		for (volatile long k = 0; k < 200000 + 1000 * (ts.tv_nsec % 200); k++)
			;
	}
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm; /* (no SA_RESTART: a sleep it cuts short says EINTR) */
	sigaction(SIGALRM, &sa, NULL);
	sigset_t alrm;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &alrm, &open_mask); /* (the thread inherits it) */
	sigdelset(&open_mask, SIGALRM);
	struct itimerval it = {{0, 1000}, {0, 1000}};
	setitimer(ITIMER_REAL, &it, NULL);
	pthread_t th;
	pthread_create(&th, NULL, clocks, NULL);
	int cut = 0;
	for (int i = 0; i < ROUNDS; i++) {
		struct timespec ts = {0, 200000};
		if (ppoll(NULL, 0, &ts, &open_mask) < 0 && errno == EINTR)
			cut++;
		say("sleep", i, cut);
	}
	pthread_join(th, NULL);
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	printf("signals %d, sleeps cut short %d\n", (int)hits, cut);
	return 0;
}
