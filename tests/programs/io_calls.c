/*
 * tests/programs/io_calls.c CASE - one descriptor call each, whose result
 * replay used to get from the kernel of the moment instead of the trace
 * (each failed on main, found by a corpus of small programs):
 *   shutdown   half-close a connection to our own listener (replay: never
 *              connected, ENOTCONN)
 *   pwritev2   pwritev2/preadv2 at offset -1 on a socket (replay: SIGPIPE)
 *   creds      a child sends SCM_CREDENTIALS with its pid (replay: the
 *              recorded pid, refused with EPERM, and the receive stalled)
 *   fionread   bytes waiting on a socket (replay: never connected, 0)
 *   winsize    a pty's size and bytes waiting on it
 *   pwait2     epoll_pwait2's empty polls until a thread writes a pipe
 *   eventfd    an eventfd read, then a write that fills it (replay: the
 *              read came from the trace, the counter overflowed, EAGAIN)
 *   getlk      F_GETLK names the child holding the lock (replay: a live pid)
 *   bigpipe    one write larger than a small pipe (8 KiB), drained by a
 *              thread that starts later (strict: the writer kept the turn
 *              until the watchdog took it, and replay stalled)
 *   flock      a child takes a file's lock and holds it a while; the parent
 *              asks for it after a nap (replay skips the nap: the parent
 *              took it first, the child then waited in the kernel, 2 of 5
 *              replays stalled)
 *   fclose     threads each fopen, read and fclose a file: a new FILE at a
 *              closed one's address is a new object (replay: the old one's,
 *              as malloc's arenas went, 5 of 10 diverged)
 * Prints what it saw; exits 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <pty.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

/* a connected pair over 127.0.0.1: *c the client, returns the accepted end */
static int tcp_pair(int *c)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof(a);
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) || getsockname(ls, (struct sockaddr *)&a, &l) || listen(ls, 1))
		return -1;
	*c = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(*c, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	return accept(ls, NULL, NULL);
}

static int pipe_fds[2];

static void *late_writer(void *arg)
{
	(void)arg;
	struct timespec ts = {0, 20000000};
	nanosleep(&ts, NULL);
	return (void *)(long)write(pipe_fds[1], "x", 1);
}

static void *pipe_drainer(void *arg)
{
	(void)arg;
	char b[1000];
	long total = 0;
	unsigned sum = 0;
	ssize_t n;
	usleep(10000);
	while ((n = read(pipe_fds[0], b, sizeof(b))) > 0) {
		for (ssize_t i = 0; i < n; i++)
			sum = sum * 7 + (unsigned char)b[i];
		total += n;
	}
	printf("drained %ld, sum %u\n", total, sum);
	return NULL;
}

static void *file_reader(void *arg)
{
	(void)arg;
	long sum = 0;
	int ch;
	FILE *f = fopen("io_calls.txt", "r");
	if (!f)
		return NULL;
	while ((ch = fgetc(f)) != EOF)
		sum += ch;
	fclose(f);
	return (void *)sum;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	int c = -1, s;
	if (!strcmp(what, "shutdown")) {
		s = tcp_pair(&c);
		printf("accepted %d shutdown %d\n", s >= 0, shutdown(c, SHUT_WR));
	} else if (!strcmp(what, "pwritev2")) {
		s = tcp_pair(&c);
		struct iovec w = {"hello", 5};
		ssize_t nw = pwritev2(c, &w, 1, -1, 0);
		char b[8];
		struct iovec r = {b, sizeof(b)};
		ssize_t nr = preadv2(s, &r, 1, -1, 0);
		printf("wrote %zd read %zd\n", nw, nr);
	} else if (!strcmp(what, "creds")) {
		int sv[2], on = 1;
		socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
		setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on));
		pid_t p = fork();
		if (p == 0) {
			struct ucred cr = {getpid(), getuid(), getgid()};
			char ch = 'C';
			struct iovec iov = {&ch, 1};
			union {
				char b[CMSG_SPACE(sizeof(struct ucred))];
				struct cmsghdr align;
			} u;
			memset(&u, 0, sizeof(u));
			struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
					    .msg_controllen = sizeof(u.b)};
			struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_CREDENTIALS;
			cm->cmsg_len = CMSG_LEN(sizeof(cr));
			memcpy(CMSG_DATA(cm), &cr, sizeof(cr));
			_exit(sendmsg(sv[1], &mh, 0) == 1 ? 0 : 2);
		}
		close(sv[1]);
		char ch;
		struct iovec iov = {&ch, 1};
		union {
			char b[CMSG_SPACE(sizeof(struct ucred))];
			struct cmsghdr align;
		} u;
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b, .msg_controllen = sizeof(u.b)};
		ssize_t n = recvmsg(sv[0], &mh, 0);
		struct ucred got = {0};
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		if (cm && cm->cmsg_type == SCM_CREDENTIALS)
			memcpy(&got, CMSG_DATA(cm), sizeof(got));
		int st;
		waitpid(p, &st, 0);
		printf("recv %zd from the child %d, child exit %d\n", n, got.pid == p, WEXITSTATUS(st));
	} else if (!strcmp(what, "fionread")) {
		s = tcp_pair(&c);
		send(c, "hello", 5, 0);
		struct pollfd p = {s, POLLIN, 0};
		poll(&p, 1, 1000);
		int n = -1;
		ioctl(s, FIONREAD, &n);
		printf("FIONREAD %d\n", n);
	} else if (!strcmp(what, "winsize")) {
		int m;
		struct winsize ws = {.ws_row = 33, .ws_col = 101};
		if (openpty(&m, &s, NULL, NULL, &ws))
			return 1;
		struct termios t;
		tcgetattr(s, &t);
		cfmakeraw(&t);
		tcsetattr(s, TCSANOW, &t);
		if (write(m, "ping", 4) != 4)
			return 1;
		struct pollfd p = {s, POLLIN, 0};
		poll(&p, 1, 1000);
		struct winsize got = {0};
		int n = -1;
		ioctl(s, TIOCGWINSZ, &got);
		ioctl(s, FIONREAD, &n);
		printf("pty %dx%d, FIONREAD %d\n", got.ws_col, got.ws_row, n);
	} else if (!strcmp(what, "pwait2")) {
		if (pipe(pipe_fds))
			return 1;
		int ep = epoll_create1(0);
		struct epoll_event ev = {.events = EPOLLIN};
		epoll_ctl(ep, EPOLL_CTL_ADD, pipe_fds[0], &ev);
		pthread_t t;
		pthread_create(&t, NULL, late_writer, NULL);
		struct timespec ts = {0, 1000000};
		int empty = 0;
		while (epoll_pwait2(ep, &ev, 1, &ts, NULL) == 0)
			empty++;
		pthread_join(t, NULL);
		printf("empty polls %d\n", empty);
	} else if (!strcmp(what, "eventfd")) {
		int e = eventfd(1, EFD_NONBLOCK);
		uint64_t v;
		ssize_t r = read(e, &v, 8);
		v = 0xfffffffffffffffeULL;
		ssize_t w = write(e, &v, 8);
		printf("read %zd write %zd\n", r, w);
	} else if (!strcmp(what, "getlk")) {
		int fd = open("io_calls.lock", O_CREAT | O_RDWR | O_TRUNC, 0600), c2p[2], p2c[2];
		char ch;
		if (fd < 0 || pipe(c2p) || pipe(p2c))
			return 1;
		pid_t p = fork();
		if (p == 0) {
			struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 10};
			fcntl(fd, F_SETLK, &fl);
			if (write(c2p[1], "l", 1) != 1 || read(p2c[0], &ch, 1) != 1)
				_exit(1);
			_exit(0);
		}
		if (read(c2p[0], &ch, 1) != 1)
			return 1;
		int f = open("io_calls.lock", O_RDWR);
		struct flock g = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_len = 10};
		fcntl(f, F_GETLK, &g);
		printf("F_GETLK names the child: %s\n", g.l_pid == p ? "yes" : "no");
		if (write(p2c[1], "g", 1) != 1)
			return 1;
		int st;
		waitpid(p, &st, 0);
		unlink("io_calls.lock");
	} else if (!strcmp(what, "bigpipe")) {
		static char big[50000];
		if (pipe(pipe_fds) || fcntl(pipe_fds[1], F_SETPIPE_SZ, 8192) < 8192)
			return 1;
		for (int i = 0; i < (int)sizeof(big); i++)
			big[i] = (char)(i % 97);
		pthread_t t;
		pthread_create(&t, NULL, pipe_drainer, NULL);
		ssize_t w = write(pipe_fds[1], big, sizeof(big));
		close(pipe_fds[1]);
		pthread_join(t, NULL);
		printf("wrote %zd\n", w);
	} else if (!strcmp(what, "flock")) {
		close(open("io_calls.lock", O_CREAT | O_TRUNC | O_WRONLY, 0600));
		int ready[2];
		if (pipe(ready))
			return 1;
		pid_t p = fork();
		if (p == 0) {
			int f = open("io_calls.lock", O_RDWR);
			flock(f, LOCK_EX);
			close(ready[1]);
			usleep(30000);
			_exit(lockf(f, F_TEST, 0) == 0 ? 0 : 3);
		}
		close(ready[1]);
		char ch;
		if (read(ready[0], &ch, 1) != 0) /* (the child has the lock) */
			return 1;
		usleep(5000);
		int f = open("io_calls.lock", O_RDWR);
		int busy = flock(f, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
		flock(f, LOCK_EX);
		int st;
		waitpid(p, &st, 0);
		printf("busy while the child held it %d, then the parent's, child exit %d\n", busy, WEXITSTATUS(st));
		unlink("io_calls.lock");
	} else if (!strcmp(what, "fclose")) {
		FILE *f = fopen("io_calls.txt", "w");
		for (int i = 0; f && i < 200; i++)
			fprintf(f, "%d\n", i);
		if (!f || fclose(f))
			return 1;
		pthread_t t[4];
		for (int i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, file_reader, NULL);
		long total = 0;
		for (int i = 0; i < 4; i++) {
			void *r;
			pthread_join(t[i], &r);
			total += (long)r;
		}
		printf("sum %ld\n", total);
		unlink("io_calls.txt");
	} else {
		fprintf(stderr, "usage: io_calls shutdown|pwritev2|creds|fionread|winsize|pwait2|eventfd|getlk|bigpipe|flock|fclose\n");
		return 2;
	}
	return 0;
}
