/*
 * tests/programs/handler_in_waits.c - a handler runs while its thread waits
 * in a blocking call, as natively: main waits in one call (argv[1]); a
 * worker, which blocks the signal, sends kill(getpid(), SIGUSR1), so only
 * main can take it, and ends main's wait only once the handler has run
 * (it waits for the handler's flag). If the signal were held until main's
 * call returned, neither would go on. The handler is SA_RESTART, so calls
 * the kernel restarts go on waiting; the others return EINTR, and main
 * waits again. Prints what main's call returned.
 * The worker sleeps before it reads the flag, each time: a default-mode
 * replay orders events, and a read right after the kill, before any event,
 * could see the flag set in one run and not in the other (the handler ran
 * first in a loaded recording: strict mode replays that).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t handled;
static const char *how;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int released;
static sem_t sem;
static int fds[2];
static pthread_barrier_t barrier;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

static void on_signal(int sig)
{
	(void)sig;
	handled = 1;
}

static void release(void)
{
	if (!strcmp(how, "cond")) {
		pthread_mutex_lock(&m);
		released = 1;
		pthread_cond_signal(&c);
		pthread_mutex_unlock(&m);
	} else if (!strcmp(how, "mutex")) {
		pthread_mutex_unlock(&m);
	} else if (!strcmp(how, "rwlock")) {
		pthread_rwlock_unlock(&rw);
	} else if (!strcmp(how, "sem")) {
		sem_post(&sem);
	} else if (!strcmp(how, "barrier")) {
		pthread_barrier_wait(&barrier);
	} else if (!strcmp(how, "join")) {
		/* returning ends main's join */
	} else {
		write(fds[1], "x", 1); /* recv, poll, select, epoll */
	}
}

static void *worker(void *arg)
{
	(void)arg;
	if (!strcmp(how, "mutex"))
		pthread_mutex_lock(&m);
	if (!strcmp(how, "rwlock"))
		pthread_rwlock_wrlock(&rw);
	sem_post(&sem); /* main may start waiting */
	usleep(50000);
	kill(getpid(), SIGUSR1);
	do /* (a sleep before each read: see the header) */
		usleep(1000);
	while (!handled);
	release();
	return NULL;
}

int main(int argc, char **argv)
{
	how = argc > 1 ? argv[1] : "cond";
	setvbuf(stdout, NULL, _IONBF, 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	sem_init(&sem, 0, 0);
	pthread_barrier_init(&barrier, NULL, 2);
	socketpair(AF_UNIX, SOCK_STREAM, 0, fds);
	sigset_t usr1, old;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, &old);
	pthread_t w;
	pthread_create(&w, NULL, worker, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	sem_wait(&sem);
	long r = 0;
	char b;
	if (!strcmp(how, "cond")) {
		pthread_mutex_lock(&m);
		while (!released)
			r = pthread_cond_wait(&c, &m);
		pthread_mutex_unlock(&m);
	} else if (!strcmp(how, "mutex")) {
		r = pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	} else if (!strcmp(how, "rwlock")) {
		r = pthread_rwlock_rdlock(&rw);
		pthread_rwlock_unlock(&rw);
	} else if (!strcmp(how, "sem")) {
		while ((r = sem_wait(&sem)) != 0 && errno == EINTR)
			;
	} else if (!strcmp(how, "barrier")) {
		r = pthread_barrier_wait(&barrier) == PTHREAD_BARRIER_SERIAL_THREAD;
		r = 0;
	} else if (!strcmp(how, "join")) {
		r = pthread_join(w, NULL);
	} else if (!strcmp(how, "recv")) {
		r = recv(fds[0], &b, 1, 0);
	} else if (!strcmp(how, "poll")) {
		struct pollfd p = {fds[0], POLLIN, 0};
		while ((r = poll(&p, 1, -1)) < 0 && errno == EINTR)
			;
	} else if (!strcmp(how, "select")) {
		fd_set set;
		do {
			FD_ZERO(&set);
			FD_SET(fds[0], &set);
		} while ((r = select(fds[0] + 1, &set, NULL, NULL, NULL)) < 0 && errno == EINTR);
	} else if (!strcmp(how, "epoll")) {
		int ep = epoll_create1(0);
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[0]}, out;
		epoll_ctl(ep, EPOLL_CTL_ADD, fds[0], &ev);
		while ((r = epoll_wait(ep, &out, 1, -1)) < 0 && errno == EINTR)
			;
	} else {
		fprintf(stderr, "unknown wait %s\n", how);
		return 2;
	}
	if (strcmp(how, "join"))
		pthread_join(w, NULL);
	printf("%s: %ld, handled %d\n", how, r, (int)handled);
	return 0;
}
