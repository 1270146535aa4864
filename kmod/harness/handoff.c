/*
 * kmod/harness/handoff.c - turn hand-off latency of the two enforcement
 * mechanisms, side by side, inside the qemu guest (`make bench-kmod`).
 *
 *     handoff ROUNDS
 *
 * Rules of this file:
 *  - Two threads strictly alternate 2 x ROUNDS turns: thread 0's turn k
 *    needs thread 1's turn k - 1 done, thread 1's turn k needs thread 0's
 *    turn k. Every turn is a hand-off to a thread that is (or is about to
 *    be) asleep, the case where a replay pays for its enforcement.
 *  - futex: what replayer/turns_futex.c does (a done counter per thread,
 *    a sleeping word, FUTEX_WAIT/FUTEX_WAKE); kmod: what
 *    replayer/turns_kmod.c does (the schedule loaded into /dev/detsched,
 *    its counters mapped read-only, WAIT when a turn is not due, DONE for
 *    every finished turn since the other thread waits for each). Neither
 *    spins first, so the figure is the kernel path itself.
 *  - Prints microseconds per hand-off for each, and how many waits timed
 *    out (a lost wake-up would show there).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "det/detsched.h"

static long rounds;
static int fd;
static const _Atomic uint64_t *kdone;
static _Atomic uint64_t fdone[2];
static _Atomic uint32_t sleeping[2];
static _Atomic long timeouts;


static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* the turn before thread t's turn k: (other thread, its done count needed) */
static uint64_t need(int t, long k)
{
	return t == 0 ? (uint64_t)k : (uint64_t)k + 1;
}

static void *futex_player(void *arg)
{
	int t = (int)(long)arg, o = 1 - t;

	for (long k = 0; k < rounds; k++) {
		while (atomic_load(&fdone[o]) < need(t, k)) {
			atomic_store(&sleeping[t], 1);
			if (atomic_load(&fdone[o]) >= need(t, k))
				break;
			syscall(SYS_futex, &sleeping[t], FUTEX_WAIT, 1, NULL, NULL, 0);
		}
		atomic_store(&sleeping[t], 0);
		atomic_store(&fdone[t], (uint64_t)k + 1);
		if (atomic_load(&sleeping[o]) && atomic_exchange(&sleeping[o], 0))
			syscall(SYS_futex, &sleeping[o], FUTEX_WAKE, 1, NULL, NULL, 0);
	}
	return NULL;
}

static void *kmod_player(void *arg)
{
	int t = (int)(long)arg, o = 1 - t;
	struct detsched_register r = {.thread = (uint32_t)t};

	if (ioctl(fd, DETSCHED_IOC_REGISTER, &r)) {
		perror("REGISTER");
		exit(1);
	}
	for (long k = 0; k < rounds; k++) {
		struct detsched_wait w = {.thread = (uint32_t)t, .idx = (uint64_t)k,
					  .timeout_ns = 250000000ull};
		struct detsched_done d = {.thread = (uint32_t)t, .idx = (uint64_t)k};

		while (atomic_load_explicit(&kdone[o], memory_order_acquire) < need(t, k)) {
			if (ioctl(fd, DETSCHED_IOC_WAIT, &w) == 0)
				break;
			if (errno == ETIMEDOUT)
				atomic_fetch_add(&timeouts, 1);
			else if (errno != EINTR) {
				perror("WAIT");
				exit(1);
			}
		}
		if (ioctl(fd, DETSCHED_IOC_DONE, &d)) {
			perror("DONE");
			exit(1);
		}
	}
	return NULL;
}

static double play(void *(*player)(void *))
{
	pthread_t th[2];
	double a = now();

	for (long t = 0; t < 2; t++)
		pthread_create(&th[t], NULL, player, (void *)t);
	for (int t = 0; t < 2; t++)
		pthread_join(th[t], NULL);
	return now() - a;
}

int main(int argc, char **argv)
{
	rounds = argc > 1 ? atol(argv[1]) : 0;
	if (rounds < 1 || rounds > 1000000) {
		fprintf(stderr, "usage: handoff ROUNDS (1..1000000)\n");
		return 2;
	}
	uint32_t counts[2] = {(uint32_t)rounds, (uint32_t)rounds};
	struct detsched_event *ev = calloc(2 * (size_t)rounds, sizeof(*ev));

	for (long k = 0; k < rounds; k++) {
		if (k > 0) {
			ev[k].dep_thread[0] = 2; /* thread 0's turn k after thread 1's k - 1 */
			ev[k].dep_idx[0] = (uint32_t)(k - 1);
		}
		ev[rounds + k].dep_thread[0] = 1; /* thread 1's turn k after thread 0's k */
		ev[rounds + k].dep_idx[0] = (uint32_t)k;
	}
	struct detsched_load l = {.nthreads = 2, .counts = (uintptr_t)counts, .events = (uintptr_t)ev,
				  .total = 2 * (uint64_t)rounds};

	fd = open(DETSCHED_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0 || ioctl(fd, DETSCHED_IOC_LOAD, &l)) {
		perror(DETSCHED_DEVICE);
		return 1;
	}
	kdone = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	if (kdone == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	double f = play(futex_player), k = play(kmod_player);
	double n = 2.0 * (double)rounds;

	printf("handoff: %ld rounds: futex %.2f us per hand-off | kmod %.2f us per hand-off (%ld waits timed out)\n",
	       rounds, f / n * 1e6, k / n * 1e6, (long)timeouts);
	return 0;
}
