/*
 * tests/programs/eventfd_handoff.c - a thread pool's completion hand-off
 * through the kernel, as nginx's thread pool does it: the pool thread
 * stores a handler pointer with a plain store, then writes a descriptor;
 * the main thread waits for the descriptor to be ready, reads it, and calls
 * through the pointer. The only happens-before between the store and the
 * call is the descriptor: a replay that lets the main thread's wait return
 * before the pool thread's write calls NULL (SIGSEGV).
 *
 * Usage: eventfd_handoff CHANNEL WAIT ROUNDS
 *   CHANNEL  eventfd | pipe | socketpair   what the pool thread writes
 *            (pipe_nb, socketpair_nb: main's end non-blocking, as nginx's)
 *   WAIT     epoll | poll | select | read  how the main thread waits for it
 * Prints the sum of the handlers' results (the same every run).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

struct task {
	long id, result;
	void (*handler)(struct task *);
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t posted = PTHREAD_COND_INITIALIZER;
static struct task *queue;      /* the task posted, under lock */
static int done_flag;           /* under lock */
static struct task *volatile notified; /* the hand-off: written by the pool, no lock */
static int wfd, rfd;            /* the pool writes wfd, main waits on rfd */
static int use_eventfd;
static long sum;

static void complete(struct task *t)
{
	sum += t->result;
}

static void *pool(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		while (!queue && !done_flag)
			pthread_cond_wait(&posted, &lock);
		struct task *t = queue;
		queue = NULL;
		pthread_mutex_unlock(&lock);
		if (!t)
			return NULL;
		long r = t->id; /* the work: a little computing, no events */
		for (int i = 0; i < 2000; i++)
			r = (r * 1103515245 + 12345) & 0x7fffffff;
		t->result = r % 1000;
		t->handler = complete;
		notified = t; /* nginx: notify_event.data = handler; then write the eventfd */
		uint64_t one = 1;
		if (write(wfd, &one, use_eventfd ? 8 : 1) < 0) {
			perror("write");
			exit(2);
		}
	}
}

static void wait_ready(const char *how, int epfd)
{
	if (!strcmp(how, "epoll")) {
		struct epoll_event ev;
		while (epoll_wait(epfd, &ev, 1, -1) != 1)
			;
	} else if (!strcmp(how, "poll")) {
		struct pollfd p = {rfd, POLLIN, 0};
		while (poll(&p, 1, -1) != 1)
			;
	} else if (!strcmp(how, "select")) {
		fd_set s;
		do {
			FD_ZERO(&s);
			FD_SET(rfd, &s);
		} while (select(rfd + 1, &s, NULL, NULL, NULL) != 1);
	} /* "read": the read below blocks */
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s eventfd|pipe|socketpair[_nb] epoll|poll|select|read ROUNDS\n", argv[0]);
		return 2;
	}
	int fds[2];
	if (!strcmp(argv[1], "eventfd")) {
		use_eventfd = 1;
		wfd = rfd = eventfd(0, 0);
	} else if (!strncmp(argv[1], "pipe", 4) ? pipe(fds) == 0
						 : socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0) {
		rfd = fds[0];
		wfd = fds[1];
		if (strstr(argv[1], "_nb"))
			fcntl(rfd, F_SETFL, O_NONBLOCK);
	} else {
		perror(argv[1]);
		return 2;
	}
	int epfd = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = rfd};
	epoll_ctl(epfd, EPOLL_CTL_ADD, rfd, &ev);
	long rounds = atol(argv[3]);
	pthread_t th;
	pthread_create(&th, NULL, pool, NULL);
	struct task t;
	for (long i = 0; i < rounds; i++) {
		memset(&t, 0, sizeof(t));
		t.id = i;
		pthread_mutex_lock(&lock);
		queue = &t;
		pthread_cond_signal(&posted);
		pthread_mutex_unlock(&lock);
		wait_ready(argv[2], epfd);
		uint64_t got = 0;
		if (read(rfd, &got, use_eventfd ? 8 : 1) <= 0) {
			perror("read");
			return 2;
		}
		struct task *n = notified;
		notified = NULL;
		n->handler(n); /* NULL if the wait returned before the pool's store */
	}
	pthread_mutex_lock(&lock);
	done_flag = 1;
	pthread_cond_signal(&posted);
	pthread_mutex_unlock(&lock);
	pthread_join(th, NULL);
	printf("%ld rounds, sum %ld\n", rounds, sum);
	return 0;
}
