/*
 * tests/programs/nested_handlers.c - a SIGUSR2 handler runs nested in a
 * SIGUSR1 handler while main waits in a blocking call (argv[1]: sem, cond,
 * join, read, poll, nanosleep): a worker, which blocks both signals, sends
 * kill(getpid(), SIGUSR1); main's SIGUSR1 handler sleeps in a loop until
 * SIGUSR2 has been handled; the worker sends SIGUSR2 once the SIGUSR1
 * handler has begun, waits for the nested handler to have run and then
 * ends main's wait. Prints the order the handlers ran in.
 * The handlers tell the worker by sem_post (async-signal-safe), not by a
 * flag it polls: a default-mode replay orders events, not a plain write
 * made between two of them against another thread's read.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t usr2_done, usr1_done;
static char order[8];
static volatile sig_atomic_t norder;
static const char *how;
static sem_t start, done, entered, left;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int released;
static int fds[2];

static void on_usr1(int sig)
{
	(void)sig;
	order[norder++] = '1';
	sem_post(&entered);
	while (!usr2_done)
		usleep(1000);
	order[norder++] = 'e';
	usr1_done = 1;
	sem_post(&left);
}

static void on_usr2(int sig)
{
	(void)sig;
	order[norder++] = '2';
	usr2_done = 1;
}

static void *worker(void *arg)
{
	(void)arg;
	sem_post(&start);
	usleep(20000);
	kill(getpid(), SIGUSR1);
	while (sem_wait(&entered))
		;
	kill(getpid(), SIGUSR2);
	while (sem_wait(&left))
		;
	if (!strcmp(how, "sem")) {
		sem_post(&done);
	} else if (!strcmp(how, "cond")) {
		pthread_mutex_lock(&m);
		released = 1;
		pthread_cond_signal(&c);
		pthread_mutex_unlock(&m);
	} else if (!strcmp(how, "read") || !strcmp(how, "poll")) {
		if (write(fds[1], "x", 1) != 1)
			return NULL;
	}
	return NULL; /* join, nanosleep: main's wait ends by itself */
}

int main(int argc, char **argv)
{
	how = argc > 1 ? argv[1] : "sem";
	setvbuf(stdout, NULL, _IONBF, 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_usr2;
	sigaction(SIGUSR2, &sa, NULL);
	sem_init(&start, 0, 0);
	sem_init(&done, 0, 0);
	sem_init(&entered, 0, 0);
	sem_init(&left, 0, 0);
	if (pipe(fds))
		return 1;
	sigset_t both, old;
	sigemptyset(&both);
	sigaddset(&both, SIGUSR1);
	sigaddset(&both, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &both, &old);
	pthread_t w;
	pthread_create(&w, NULL, worker, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	while (sem_wait(&start) && errno == EINTR)
		;
	long r = 0;
	char b;
	if (!strcmp(how, "sem")) {
		while ((r = sem_wait(&done)) != 0 && errno == EINTR)
			;
	} else if (!strcmp(how, "cond")) {
		pthread_mutex_lock(&m);
		while (!released)
			r = pthread_cond_wait(&c, &m);
		pthread_mutex_unlock(&m);
	} else if (!strcmp(how, "join")) {
		r = pthread_join(w, NULL);
	} else if (!strcmp(how, "read")) {
		while ((r = read(fds[0], &b, 1)) < 0 && errno == EINTR)
			;
	} else if (!strcmp(how, "poll")) {
		struct pollfd p = {fds[0], POLLIN, 0};
		while ((r = poll(&p, 1, -1)) < 0 && errno == EINTR)
			;
	} else if (!strcmp(how, "nanosleep")) {
		struct timespec ts = {0, 300000000}, rem;
		while (nanosleep(&ts, &rem) && errno == EINTR)
			ts = rem;
		while (!usr1_done)
			usleep(1000);
	} else {
		fprintf(stderr, "unknown wait %s\n", how);
		return 2;
	}
	if (strcmp(how, "join"))
		pthread_join(w, NULL);
	order[norder] = 0;
	printf("%s: %ld, handlers ran %s\n", how, r, order);
	return 0;
}
