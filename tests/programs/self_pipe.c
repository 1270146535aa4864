/*
 * tests/programs/self_pipe.c - the self-pipe trick: a handler (SIGALRM from
 * a timer, SIGUSR1 from a worker thread's kill) writes a byte into a pipe
 * while main sleeps in read() on it, the handlers installed with SA_RESTART
 * (the read is restarted after the handler, and then finds the byte). The
 * handler must run while its thread waits in read: det once held it until
 * the read returned, which it never did.
 *
 * Prints what each wake-up read, in order.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int wake[2];

static void on_signal(int sig)
{
	char c = sig == SIGALRM ? 'A' : 'U';
	if (write(wake[1], &c, 1) != 1)
		_exit(3);
}

static void *sender(void *arg)
{
	(void)arg;
	struct timespec ms = {0, 30 * 1000000};
	nanosleep(&ms, NULL);
	kill(getpid(), SIGUSR1);
	return NULL;
}

int main(void)
{
	if (pipe(wake) != 0)
		return 2;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	/* the worker blocks SIGUSR1, so the kernel gives main its kill */
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	pthread_t t;
	pthread_create(&t, NULL, sender, NULL);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	char c;
	if (read(wake[0], &c, 1) != 1)
		return 4;
	printf("woken by %c\n", c);
	pthread_join(t, NULL);
	struct itimerval it = {{0, 0}, {0, 20000}};
	setitimer(ITIMER_REAL, &it, NULL);
	if (read(wake[0], &c, 1) != 1)
		return 5;
	printf("woken by %c\n", c);
	return 0;
}
