/*
 * tests/programs/raw_calls.c - calls made with syscall(SYS_...) that have a
 * libc function det records (Go, Rust's std, static and hand-written
 * runtimes make them so): accept4, poll-like waits (ppoll, pselect6,
 * select, epoll_wait, epoll_pwait), rt_sigaction with a timer's signal, and
 * execveat (the last: argv[1] "exec" re-runs the program as "child").
 * Each result printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

/* the kernel's struct sigaction (x86-64) */
struct ksigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	unsigned long mask;
};

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

static void show(const char *what, long r)
{
	if (r < 0)
		printf("%s: -1 %s\n", what, strerror(errno));
	else
		printf("%s: %ld\n", what, r);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc > 1 && !strcmp(argv[1], "child")) {
		printf("child: %s\n", argv[2]);
		return 0;
	}
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	write(sv[1], "x", 1);
	struct pollfd p = {sv[0], POLLIN, 0};
	struct timespec zero = {0, 0};
	show("ppoll", syscall(SYS_ppoll, &p, 1L, &zero, NULL, 8L));
	printf("ppoll revents %d\n", p.revents);
	fd_set set;
	FD_ZERO(&set);
	FD_SET(sv[0], &set);
	struct timeval tv = {1, 0};
	show("select", syscall(SYS_select, sv[0] + 1, &set, NULL, NULL, &tv));
	FD_ZERO(&set);
	FD_SET(sv[0], &set);
	show("pselect6", syscall(SYS_pselect6, sv[0] + 1, &set, NULL, NULL, &zero, NULL));
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 42}, out[2];
	epoll_ctl(ep, EPOLL_CTL_ADD, sv[0], &ev);
	show("epoll_wait", syscall(SYS_epoll_wait, ep, out, 2, 1000));
	printf("epoll data %llu\n", (unsigned long long)out[0].data.u64);
	show("epoll_pwait", syscall(SYS_epoll_pwait, ep, out, 2, 1000, NULL, 8L));

	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "/tmp/raw_calls.%d", getpid());
	unlink(a.sun_path);
	bind(l, (struct sockaddr *)&a, sizeof(a));
	listen(l, 1);
	int c = socket(AF_UNIX, SOCK_STREAM, 0);
	connect(c, (struct sockaddr *)&a, sizeof(a));
	int s = (int)syscall(SYS_accept4, l, NULL, NULL, SOCK_CLOEXEC);
	printf("accept4: %s cloexec %d\n", s >= 0 ? "ok" : strerror(errno), s >= 0 && (fcntl(s, F_GETFD) & FD_CLOEXEC));
	write(c, "hello", 5);
	char buf[8] = {0};
	show("read accepted", read(s, buf, sizeof(buf) - 1));
	printf("got %s\n", buf);
	unlink(a.sun_path);

	struct ksigaction ka = {.handler = on_alarm, .flags = 0x04000000 /* SA_RESTORER */ | SA_RESTART}, old;
	/* glibc's restorer, taken from a sigaction it made */
	struct sigaction tmp = {.sa_handler = SIG_IGN};
	sigaction(SIGALRM, &tmp, NULL);
	syscall(SYS_rt_sigaction, SIGALRM, NULL, &old, 8L);
	ka.restorer = old.restorer;
	show("rt_sigaction", syscall(SYS_rt_sigaction, SIGALRM, &ka, &old, 8L));
	printf("old handler ignored %d\n", old.handler == SIG_IGN);
	struct itimerval it = {{0, 20000}, {0, 20000}};
	setitimer(ITIMER_REAL, &it, NULL);
	while (alarms < 3)
		pause();
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	printf("alarms %d\n", alarms >= 3);

	if (argc > 1 && !strcmp(argv[1], "exec")) {
		char *args[] = {argv[0], "child", "by execveat", NULL};
		extern char **environ;
		syscall(SYS_execveat, AT_FDCWD, argv[0], args, environ, 0);
		show("execveat", -1);
	}
	return 0;
}
