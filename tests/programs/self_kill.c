/*
 * tests/programs/self_kill.c - a signal a thread sends itself is handled
 * before the sending call returns, when the thread does not block it:
 * kill(getpid()) from main, raise, pthread_kill(pthread_self()), and
 * kill(getpid()) from a thread while main blocks the signal. The handler
 * counts; the program prints how much the count went up across each call
 * (natively, always by one).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t handled;

static void on_signal(int sig)
{
	(void)sig;
	handled++;
}

static void *in_thread(void *arg)
{
	(void)arg;
	sigset_t usr2;
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	pthread_sigmask(SIG_UNBLOCK, &usr2, NULL);
	int before = handled;
	kill(getpid(), SIGUSR2); /* main blocks it: the kernel picks this thread */
	printf("thread kill: %d\n", handled - before);
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	int before = handled;
	kill(getpid(), SIGUSR1);
	printf("kill: %d\n", handled - before);
	before = handled;
	raise(SIGUSR1);
	printf("raise: %d\n", handled - before);
	before = handled;
	pthread_kill(pthread_self(), SIGUSR1);
	printf("pthread_kill: %d\n", handled - before);
	sigset_t usr2;
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &usr2, NULL);
	pthread_t t;
	pthread_create(&t, NULL, in_thread, NULL);
	pthread_join(t, NULL);
	printf("total: %d\n", (int)handled);
	return 0;
}
