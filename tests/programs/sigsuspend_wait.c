/*
 * tests/programs/sigsuspend_wait.c - a daemon's main loop: SIGINT, SIGUSR1,
 * SIGUSR2 and SIGTERM are blocked in every thread; main waits for them in
 * sigsuspend with them unblocked; a worker does the work and, when done,
 * sends kill(getpid(), SIGUSR2). Only main ever takes the signal (the
 * others block it). Then main restores the default actions and its mask, as
 * a daemon does before it exits: a SIGUSR2 still pending then kills it
 * (det's replay once sent the worker's kill again, and was killed).
 *
 * Prints the work's result and which signal ended the wait.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t got;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long sum;

static void on_signal(int sig)
{
	got = sig;
}

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 1; i <= 1000; i++) {
		pthread_mutex_lock(&m);
		sum += i;
		pthread_mutex_unlock(&m);
	}
	kill(getpid(), SIGUSR2);
	return NULL;
}

int main(void)
{
	static const int sigs[] = {SIGINT, SIGUSR1, SIGUSR2, SIGTERM};
	sigset_t block, old;
	sigemptyset(&block);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		sigaddset(&block, sigs[i]);
		sigaction(sigs[i], &sa, NULL);
	}
	pthread_sigmask(SIG_BLOCK, &block, &old);
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	while (!got)
		sigsuspend(&old);
	/* done: back to the default actions, then the mask main started with */
	for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		signal(sigs[i], SIG_DFL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_join(t, NULL);
	printf("sum %ld, woken by %s\n", sum, got == SIGUSR2 ? "SIGUSR2" : "another signal");
	return 0;
}
