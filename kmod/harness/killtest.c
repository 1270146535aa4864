/*
 * kmod/harness/killtest.c - what /dev/detsched does when replaying
 * processes die, run inside the qemu guest (kmod/harness/guest.py).
 *
 *     killtest
 *
 * Rules of this file:
 *  - Two scenes, each with real processes and SIGKILL (and, in the second,
 *    RESET refused while another process's threads wait):
 *    1. the owner of a schedule is killed while threads of another process
 *       wait in it: they must wake at once with EOWNERDEAD;
 *    2. a process that owns a schedule is killed while its own threads
 *       wait in it: it must die promptly, and the schedule must drop its
 *       registrations and be freed when the last file closes (the module's
 *       schedules_alive parameter returns to what it was).
 *  - Prints one line per check and "killtest: ok" at the end; exits 1 on
 *    the first failure, saying what was wrong.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "det/detsched.h"

#define ALIVE "/sys/module/detsched/parameters/schedules_alive"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fail(const char *what)
{
	fprintf(stderr, "killtest: FAIL: %s (%s)\n", what, strerror(errno));
	exit(1);
}

static int alive(void)
{
	FILE *f = fopen(ALIVE, "r");
	int n = -1;

	if (!f || fscanf(f, "%d", &n) != 1)
		fail("cannot read " ALIVE);
	fclose(f);
	return n;
}

/* T0 has one event nobody does; T1 and T2 each wait for it. */
static int load(struct detsched_load *l)
{
	static uint32_t counts[3] = {1, 1, 1};
	static struct detsched_event ev[3] = {
		{.reserved = 0},
		{.dep_thread = {1, 0}, .dep_idx = {0, 0}},
		{.dep_thread = {1, 0}, .dep_idx = {0, 0}},
	};
	int fd = open(DETSCHED_DEVICE, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		fail("open " DETSCHED_DEVICE);
	*l = (struct detsched_load){.nthreads = 3, .counts = (uintptr_t)counts, .events = (uintptr_t)ev,
				    .total = 3};
	if (ioctl(fd, DETSCHED_IOC_LOAD, l))
		fail("LOAD");
	return fd;
}

struct waiter {
	int fd;
	uint32_t num;
	int err;       /* errno the WAIT ended with */
	double woke;
};

static void *wait_turn(void *arg)
{
	struct waiter *w = arg;
	struct detsched_register r = {.thread = w->num};
	struct detsched_wait wt = {.thread = w->num, .idx = 0, .timeout_ns = 30ull * 1000000000ull};

	if (ioctl(w->fd, DETSCHED_IOC_REGISTER, &r))
		fail("REGISTER");
	w->err = ioctl(w->fd, DETSCHED_IOC_WAIT, &wt) ? errno : 0;
	w->woke = now();
	return NULL;
}

/* Until threads 1 and 2 sleep in WAIT (seen through fd), or fail. */
static void until_waiting(int fd)
{
	struct detsched_thread_state ts[3];
	struct detsched_state st;

	for (double end = now() + 10; now() < end; usleep(10000)) {
		st = (struct detsched_state){.cap = 3, .threads = (uintptr_t)ts};
		if (ioctl(fd, DETSCHED_IOC_STATE, &st))
			fail("STATE");
		if (ts[1].waiting && ts[2].waiting)
			return;
	}
	errno = ETIMEDOUT;
	fail("the threads never started waiting");
}

/* Scene 1: kill the owner; another process's waiters wake with EOWNERDEAD. */
static void owner_killed(void)
{
	int pipefd[2];
	struct detsched_load l;

	if (pipe(pipefd))
		fail("pipe");
	pid_t owner = fork();

	if (owner == 0) {
		load(&l);
		if (write(pipefd[1], &l, sizeof(l)) != sizeof(l))
			_exit(1);
		for (;;)
			pause();
	}
	if (read(pipefd[0], &l, sizeof(l)) != sizeof(l))
		fail("the owner did not load");
	int fd = open(DETSCHED_DEVICE, O_RDWR | O_CLOEXEC);
	struct detsched_attach a = {.id = l.id, .key = l.key};

	if (fd < 0 || ioctl(fd, DETSCHED_IOC_ATTACH, &a))
		fail("ATTACH");
	struct waiter w[2] = {{fd, 1, -1, 0}, {fd, 2, -1, 0}};
	pthread_t th[2];

	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, wait_turn, &w[i]);
	until_waiting(fd);
	double killed = now();

	kill(owner, SIGKILL);
	waitpid(owner, NULL, 0);
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		if (w[i].err != EOWNERDEAD) {
			errno = w[i].err;
			fail("a waiter of a killed schedule did not wake with EOWNERDEAD");
		}
		printf("killtest: T%u woke %.1f ms after its schedule's owner was killed: EOWNERDEAD\n", w[i].num,
		       (w[i].woke - killed) * 1e3);
	}
	struct detsched_register r = {.thread = 1};

	if (ioctl(fd, DETSCHED_IOC_REGISTER, &r) == 0 || errno != EOWNERDEAD)
		fail("a dead schedule accepted a registration");
	close(fd);
}

/* Scene 2: kill a process while its own threads wait; all is freed. */
static void waiter_killed(int before)
{
	int pipefd[2];
	struct detsched_load l;

	if (pipe(pipefd))
		fail("pipe");
	pid_t p = fork();

	if (p == 0) {
		int fd = load(&l);
		struct waiter w[2] = {{fd, 1, -1, 0}, {fd, 2, -1, 0}};
		pthread_t th[2];

		for (int i = 0; i < 2; i++)
			pthread_create(&th[i], NULL, wait_turn, &w[i]);
		if (write(pipefd[1], &l, sizeof(l)) != sizeof(l))
			_exit(1);
		for (;;)
			pause();
	}
	if (read(pipefd[0], &l, sizeof(l)) != sizeof(l))
		fail("the process did not load");
	int fd = open(DETSCHED_DEVICE, O_RDWR | O_CLOEXEC);
	struct detsched_attach a = {.id = l.id, .key = l.key};

	if (fd < 0 || ioctl(fd, DETSCHED_IOC_ATTACH, &a))
		fail("ATTACH");
	until_waiting(fd);
	if (ioctl(fd, DETSCHED_IOC_RESET) == 0 || errno != EBUSY)
		fail("RESET went through while threads of another process waited");
	double killed = now();
	int st;

	kill(p, SIGKILL);
	if (waitpid(p, &st, 0) != p || !WIFSIGNALED(st))
		fail("the killed process did not die of SIGKILL");
	printf("killtest: a process killed while 2 of its threads waited died in %.1f ms\n",
	       (now() - killed) * 1e3);
	struct detsched_thread_state ts[3];
	struct detsched_state s = {.cap = 3, .threads = (uintptr_t)ts};

	if (ioctl(fd, DETSCHED_IOC_STATE, &s))
		fail("STATE");
	if (!(s.flags & DETSCHED_STATE_DEAD) || s.attached != 1)
		fail("the schedule of the killed owner is not dead, or other files still refer to it");
	for (int i = 0; i < 3; i++)
		if (ts[i].pid || ts[i].waiting)
			fail("a thread of the killed process is still registered or waiting");
	if (alive() != before + 1)
		fail("schedules_alive does not count the schedule we still hold");
	close(fd);
	if (alive() != before)
		fail("the schedule was not freed when its last file closed");
	printf("killtest: its schedule was dead, had no registrations left, and was freed with the last file\n");
}

int main(void)
{
	int before = alive();

	owner_killed();
	waiter_killed(before);
	if (alive() != before)
		fail("schedules are left behind");
	printf("killtest: ok\n");
	return 0;
}
