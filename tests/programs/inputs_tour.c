/*
 * tests/programs/inputs_tour.c - calls every input family det records and
 * prints what it got: values that differ from run to run natively (time,
 * randomness, pids, readiness), so a replay must print exactly the
 * recording's output.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <sys/times.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

static int pipefd[2];
static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

static void *writer(void *arg)
{
	(void)arg;
	for (int i = 0; i < 50; i++) {
		char buf[32];
		int n = snprintf(buf, sizeof(buf), "msg %d;", i);
		if (write(pipefd[1], buf, (size_t)n) != n)
			return NULL;
		if (i % 10 == 0)
			usleep(100);
	}
	close(pipefd[1]);
	return NULL;
}

int main(void)
{
	struct timespec ts;
	struct timeval tv;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	printf("mono %ld.%09ld\n", (long)ts.tv_sec, ts.tv_nsec);
	clock_gettime(CLOCK_REALTIME, &ts);
	gettimeofday(&tv, NULL);
	printf("real %ld %ld.%06ld time %ld clock %ld\n", (long)ts.tv_sec, (long)tv.tv_sec, (long)tv.tv_usec,
	       (long)time(NULL), (long)clock());
	timespec_get(&ts, TIME_UTC);
	printf("timespec_get %ld\n", (long)ts.tv_nsec);

	unsigned char rnd[16];
	getrandom(rnd, sizeof(rnd), 0);
	printf("getrandom %02x%02x%02x%02x\n", rnd[0], rnd[1], rnd[2], rnd[3]);
	getentropy(rnd, 8);
	printf("getentropy %02x%02x\n", rnd[0], rnd[1]);
	arc4random_buf(rnd, 8);
	printf("arc4random %08x %u %02x%02x\n", arc4random(), arc4random_uniform(1000), rnd[0], rnd[1]);
	int ufd = open("/dev/urandom", O_RDONLY);
	if (read(ufd, rnd, 8) == 8)
		printf("urandom %02x%02x%02x\n", rnd[0], rnd[1], rnd[2]);
	close(ufd);
	long r = syscall(SYS_getrandom, rnd, 4, 0);
	printf("syscall getrandom %ld %02x\n", r, rnd[0]);

	printf("pid %d ppid %d tid %d syscall tid %ld\n", getpid(), getppid(), gettid(), syscall(SYS_gettid));
	printf("nprocs %ld avphys %s\n", sysconf(_SC_NPROCESSORS_ONLN), sysconf(_SC_AVPHYS_PAGES) > 0 ? "yes" : "no");
	struct sysinfo si;
	sysinfo(&si);
	printf("uptime %ld\n", si.uptime);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	struct tms tm;
	clock_t ticks = times(&tm);
	printf("cpu %d rusage %ld.%06ld %ld times %ld\n", sched_getcpu(), (long)ru.ru_utime.tv_sec,
	       (long)ru.ru_utime.tv_usec, ru.ru_minflt, (long)ticks);
	uint64_t t0 = __rdtsc(), t1 = __rdtsc();
	printf("rdtsc delta %llu\n", (unsigned long long)(t1 - t0));
	sched_yield();

	/* a pipe between two threads of the program: read in pieces */
	pipe(pipefd);
	pthread_t w;
	pthread_create(&w, NULL, writer, NULL);
	char buf[64];
	long reads = 0, total = 0;
	ssize_t n;
	struct pollfd pfd = {pipefd[0], POLLIN, 0};
	while (poll(&pfd, 1, 1000) > 0 && (n = read(pipefd[0], buf, sizeof(buf))) > 0) {
		reads++;
		total += n;
	}
	pthread_join(w, NULL);
	printf("pipe: %ld bytes in %ld reads\n", total, reads);

	/* sockets and readiness */
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	send(sv[0], "ping", 4, 0);
	fd_set rs;
	FD_ZERO(&rs);
	FD_SET(sv[1], &rs);
	struct timeval zero = {0, 0};
	int ready = select(sv[1] + 1, &rs, NULL, NULL, &zero);
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = sv[1]}, out;
	epoll_ctl(ep, EPOLL_CTL_ADD, sv[1], &ev);
	int ne = epoll_wait(ep, &out, 1, 100);
	n = recv(sv[1], buf, sizeof(buf), 0);
	printf("select %d epoll %d recv %zd\n", ready, ne, n);

	/* sleeps are skipped in replay; a timer signal arrives while we sleep */
	signal(SIGALRM, on_alarm);
	struct itimerval it = {{0, 0}, {0, 50000}};
	setitimer(ITIMER_REAL, &it, NULL);
	struct timespec req = {0, 200000000}, rem = {0, 0};
	int s = nanosleep(&req, &rem);
	printf("nanosleep %d (%s) alarms %d\n", s, s ? strerror(errno) : "done", (int)alarms);
	usleep(1000);
	printf("sleep %u\n", sleep(0));
	clock_gettime(CLOCK_MONOTONIC, &ts);
	printf("mono again %ld.%09ld\n", (long)ts.tv_sec, ts.tv_nsec);
	return 0;
}
