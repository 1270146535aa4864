/*
 * tests/programs/term_handler.c - a service's shutdown: a worker thread
 * counts under a lock, then waits in read() on a pipe; main waits for it in
 * pthread_join. SIGTERM (or SIGHUP, SIGQUIT) comes from outside: the
 * handler, which runs in main (the kernel's choice: it blocks nothing),
 * notes the signal and writes the pipe; the worker ends, main joins it, says
 * how it ended and exits 0. det must forward the signal to the program (not
 * kill it), and run the handler while main waits in the join.
 *
 * Prints "ready" once the worker waits, "clean shutdown after SIG" at the end.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stop_sig;
static int stop_pipe[2];
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long work;

static void on_signal(int sig)
{
	stop_sig = sig;
	char c = 's';
	if (write(stop_pipe[1], &c, 1) != 1)
		_exit(3);
}

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100; i++) {
		pthread_mutex_lock(&m);
		work++;
		pthread_mutex_unlock(&m);
	}
	printf("ready\n");
	fflush(stdout);
	char c;
	if (read(stop_pipe[0], &c, 1) != 1)
		return (void *)1;
	return NULL;
}

int main(void)
{
	if (pipe(stop_pipe) != 0)
		return 2;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	void *ret;
	pthread_join(t, &ret);
	const char *name = stop_sig == SIGTERM ? "SIGTERM" : stop_sig == SIGHUP ? "SIGHUP"
			 : stop_sig == SIGQUIT ? "SIGQUIT" : "nothing";
	printf("clean shutdown after %s (work %ld%s)\n", name, work, ret ? ", worker failed" : "");
	return 0;
}
