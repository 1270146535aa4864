/*
 * kmod/harness/fuzz.c - an ioctl fuzzer for /dev/detsched, run inside the
 * qemu guest by `make check-kmod` (kmod/harness/guest.py).
 *
 *     fuzz SECONDS PROCESSES THREADS SEED
 *
 * Rules of this file:
 *  - Every process and thread hammers the device with a random mix of
 *    calls: well-formed ones (small valid schedules, attaches by the ids
 *    and keys other processes published, registrations, waits with short
 *    timeouts, dones, state reads, resets, mmaps) and malformed ones
 *    (unknown commands, random bytes in every field, NULL, unmapped,
 *    read-only and kernel pointers, huge sizes); files are opened and
 *    closed at random, and some processes are killed while their threads
 *    wait. Nothing it does may crash, hang or warn in the kernel: the
 *    guest checks dmesg afterwards.
 *  - It reports what it did: calls per command, and how many succeeded.
 *    Its exit status is 0 unless the fuzzer itself failed (a module that
 *    misbehaves shows in dmesg, or hangs the guest into its timeout).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "det/detsched.h"

#define NCMD 11 /* LOAD..RESET, a random command, mmap, close/open, a thread's turns */
static const char *const cmd_names[NCMD] = {"load", "attach", "register", "wait", "done", "state",
					     "reset", "random", "mmap", "reopen", "play"};

/* Shared by every process: published schedules and the tally. */
struct shared {
	_Atomic uint64_t calls[NCMD], ok[NCMD];
	_Atomic uint64_t ids[16], keys[16];
	_Atomic uint32_t nthreads[16];
};

static struct shared *sh;
static double deadline;
static const char *ro_page; /* a read-only page: the kernel may not write there */
static char *edge;          /* 3 bytes before an inaccessible page */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A pointer the kernel must refuse or survive. */
static void *bad_ptr(uint64_t *r, void *good)
{
	switch (rnd(r) % 6) {
	case 0:
		return NULL;
	case 1:
		return (void *)(uintptr_t)0xffff888000000000ull; /* kernel memory */
	case 2:
		return (void *)(uintptr_t)(rnd(r) | 1);
	case 3:
		return (void *)ro_page;
	case 4:
		return edge; /* a struct that runs into an inaccessible page */
	default:
		return good;
	}
}

static void fill(uint64_t *r, void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((unsigned char *)p)[i] = (unsigned char)rnd(r);
}

struct fuzzer {
	uint64_t r;
	int fd[4];
};

static int pick_fd(struct fuzzer *f)
{
	return f->fd[rnd(&f->r) % 4];
}

/* A small valid schedule: each event may depend on an earlier one of
 * another thread (or, now and then, a later one: deadlocks time out). */
static int load_valid(struct fuzzer *f, int fd)
{
	uint32_t n = 1 + rnd(&f->r) % 6, counts[6];
	struct detsched_event ev[6 * 8];
	uint64_t total = 0;
	int slot;

	for (uint32_t i = 0; i < n; i++) {
		counts[i] = rnd(&f->r) % 8;
		total += counts[i];
	}
	memset(ev, 0, sizeof(ev));
	uint64_t at = 0;
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t k = 0; k < counts[i]; k++, at++) {
			uint32_t d = (uint32_t)(rnd(&f->r) % n);
			if (d != i && counts[d] && rnd(&f->r) % 3) {
				ev[at].dep_thread[0] = (uint16_t)(d + 1);
				ev[at].dep_idx[0] = (uint32_t)(rnd(&f->r) % counts[d]);
			}
		}
	struct detsched_load l = {.nthreads = n, .counts = (uintptr_t)counts, .events = (uintptr_t)ev,
				  .total = total};
	int r = ioctl(fd, DETSCHED_IOC_LOAD, &l);
	if (r == 0) {
		slot = (int)(rnd(&f->r) % 16);
		atomic_store(&sh->keys[slot], l.key);
		atomic_store(&sh->ids[slot], l.id);
		atomic_store(&sh->nthreads[slot], n);
	}
	return r;
}

static int one_call(struct fuzzer *f)
{
	unsigned char junk[256];
	int which = (int)(rnd(&f->r) % NCMD);
	int fd = pick_fd(f), r = -1;
	int wild = rnd(&f->r) % 4 == 0; /* a malformed argument */

	fill(&f->r, junk, sizeof(junk));
	atomic_fetch_add(&sh->calls[which], 1);
	switch (which) {
	case 0:
		if (wild) {
			struct detsched_load *l = (void *)junk;

			if (rnd(&f->r) % 2) {
				l->nthreads %= 70000;
				l->total %= 1u << 27;
				l->counts = (uintptr_t)bad_ptr(&f->r, junk);
				l->events = (uintptr_t)bad_ptr(&f->r, junk);
			}
			r = ioctl(fd, DETSCHED_IOC_LOAD, bad_ptr(&f->r, junk));
		} else {
			r = load_valid(f, fd);
		}
		break;
	case 1: {
		int slot = (int)(rnd(&f->r) % 16);
		struct detsched_attach a = {.id = atomic_load(&sh->ids[slot]), .key = atomic_load(&sh->keys[slot])};

		if (wild)
			fill(&f->r, &a, sizeof(a));
		r = ioctl(fd, DETSCHED_IOC_ATTACH, wild ? bad_ptr(&f->r, &a) : (void *)&a);
		break;
	}
	case 2: {
		struct detsched_register g = {.thread = (uint32_t)(rnd(&f->r) % 8)};

		if (wild)
			fill(&f->r, &g, sizeof(g));
		r = ioctl(fd, DETSCHED_IOC_REGISTER, wild ? bad_ptr(&f->r, &g) : (void *)&g);
		break;
	}
	case 3: {
		struct detsched_wait w = {.thread = (uint32_t)(rnd(&f->r) % 8), .idx = rnd(&f->r) % 8,
					  .timeout_ns = rnd(&f->r) % 2000000};

		if (wild)
			fill(&f->r, &w, sizeof(w));
		r = ioctl(fd, DETSCHED_IOC_WAIT, wild ? bad_ptr(&f->r, &w) : (void *)&w);
		break;
	}
	case 4: {
		struct detsched_done d = {.thread = (uint32_t)(rnd(&f->r) % 8), .idx = rnd(&f->r) % 8};

		if (wild)
			fill(&f->r, &d, sizeof(d));
		r = ioctl(fd, DETSCHED_IOC_DONE, wild ? bad_ptr(&f->r, &d) : (void *)&d);
		break;
	}
	case 5: {
		struct detsched_thread_state ts[8];
		struct detsched_state st = {.cap = (uint32_t)(rnd(&f->r) % 10), .threads = (uintptr_t)ts};

		if (wild) {
			fill(&f->r, &st, sizeof(st));
			if (rnd(&f->r) % 2) {
				memset(&st, 0, sizeof(st));
				st.cap = (uint32_t)rnd(&f->r);
				st.threads = (uintptr_t)bad_ptr(&f->r, ts);
			}
		}
		r = ioctl(fd, DETSCHED_IOC_STATE, wild ? bad_ptr(&f->r, &st) : (void *)&st);
		break;
	}
	case 6:
		r = ioctl(fd, DETSCHED_IOC_RESET, bad_ptr(&f->r, junk));
		break;
	case 7: {
		unsigned long cmd = (unsigned long)rnd(&f->r);

		if (rnd(&f->r) % 2) /* our magic, any number, direction and size */
			cmd = (cmd & ~0xff00ul & 0xffffffffu) | (DETSCHED_IOC_MAGIC << 8);
		r = ioctl(fd, cmd, bad_ptr(&f->r, junk));
		break;
	}
	case 8: {
		size_t len = (size_t)(1 + rnd(&f->r) % 3) * 4096;
		int prot = (int)(rnd(&f->r) % 4); /* none, read, write, both */
		off_t off = rnd(&f->r) % 4 ? 0 : (off_t)(rnd(&f->r) % 4) * 4096;
		void *p = mmap(NULL, len, prot, MAP_SHARED, fd, off);

		r = p == MAP_FAILED ? -1 : 0;
		if (!r) {
			if (prot & PROT_READ)
				(void)*(volatile uint64_t *)p;
			munmap(p, len);
		}
		break;
	}
	case 9: {
		int i = (int)(rnd(&f->r) % 4);

		close(f->fd[i]);
		f->fd[i] = open(DETSCHED_DEVICE, O_RDWR | O_CLOEXEC);
		r = f->fd[i] < 0 ? -1 : 0;
		break;
	}
	default: {
		/* a thread takes its turns as a replay does: register, then wait
		 * for each event (briefly) and mark it done; counts one success
		 * per event done */
		struct detsched_register g = {.thread = (uint32_t)(rnd(&f->r) % 6)};

		if (ioctl(fd, DETSCHED_IOC_REGISTER, &g))
			break;
		for (uint64_t idx = 0; idx < 8; idx++) {
			struct detsched_wait w = {.thread = g.thread, .idx = idx, .timeout_ns = 1000000};
			struct detsched_done d = {.thread = g.thread, .idx = idx};

			if (ioctl(fd, DETSCHED_IOC_WAIT, &w) && errno != ETIMEDOUT)
				break;
			if (ioctl(fd, DETSCHED_IOC_DONE, &d))
				break;
			atomic_fetch_add(&sh->ok[which], 1);
		}
		break;
	}
	}
	if (r == 0)
		atomic_fetch_add(&sh->ok[which], 1);
	return r;
}

static void *run(void *arg)
{
	struct fuzzer *f = arg;

	while (now() < deadline)
		for (int i = 0; i < 64; i++)
			one_call(f);
	return NULL;
}

static void child(int threads, uint64_t seed)
{
	struct fuzzer f[8];
	pthread_t th[8];

	for (int t = 0; t < threads; t++) {
		f[t].r = seed * 0x9E3779B97F4A7C15ull + (uint64_t)t + 1;
		for (int i = 0; i < 4; i++)
			f[t].fd[i] = open(DETSCHED_DEVICE, O_RDWR | O_CLOEXEC);
		if (f[t].fd[0] < 0) {
			perror(DETSCHED_DEVICE);
			_exit(1);
		}
	}
	/* threads of one process share their files now and then */
	for (int t = 1; t < threads; t++)
		f[t].fd[3] = f[0].fd[0];
	for (int t = 1; t < threads; t++)
		pthread_create(&th[t], NULL, run, &f[t]);
	run(&f[0]);
	for (int t = 1; t < threads; t++)
		pthread_join(th[t], NULL);
	_exit(0);
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: fuzz SECONDS PROCESSES THREADS SEED\n");
		return 2;
	}
	double secs = atof(argv[1]);
	int procs = atoi(argv[2]), threads = atoi(argv[3]);
	uint64_t seed = strtoull(argv[4], NULL, 0), r = seed | 1;
	uint64_t generations = 0, killed = 0;

	if (procs < 1 || procs > 64 || threads < 1 || threads > 8 || secs <= 0) {
		fprintf(stderr, "fuzz: 1..64 processes, 1..8 threads, seconds > 0\n");
		return 2;
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ro_page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *two = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (two == MAP_FAILED || mprotect(two + 4096, 4096, PROT_NONE))
		two = MAP_FAILED;
	else
		edge = two + 4096 - 3;
	if (sh == MAP_FAILED || ro_page == MAP_FAILED || two == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	double end = now() + secs;
	/* generations of processes: most run their slice out, some are
	 * killed in the middle (threads waiting, files open, maps alive) */
	while (now() < end) {
		pid_t pid[64];
		double slice = secs / 8 < 0.5 ? secs / 8 : 0.5;

		deadline = now() + slice;
		if (deadline > end)
			deadline = end;
		for (int p = 0; p < procs; p++) {
			pid[p] = fork();
			if (pid[p] == 0)
				child(threads, rnd(&r));
		}
		usleep((useconds_t)(slice * 1e6 * (double)(rnd(&r) % 100) / 100.0));
		for (int p = 0; p < procs; p++)
			if (rnd(&r) % 4 == 0 && kill(pid[p], SIGKILL) == 0)
				killed++;
		for (int p = 0; p < procs; p++) {
			int st;

			if (waitpid(pid[p], &st, 0) < 0 || (WIFEXITED(st) && WEXITSTATUS(st))) {
				fprintf(stderr, "fuzz: a fuzzing process failed\n");
				return 1;
			}
		}
		generations++;
	}
	uint64_t total = 0, ok = 0;

	printf("fuzz: %llu generations of %d processes x %d threads, %llu processes killed mid-run\n",
	       (unsigned long long)generations, procs, threads, (unsigned long long)killed);
	for (int i = 0; i < NCMD; i++) {
		printf("fuzz: %-8s %10llu calls %10llu succeeded\n", cmd_names[i],
		       (unsigned long long)sh->calls[i], (unsigned long long)sh->ok[i]);
		total += sh->calls[i];
		ok += sh->ok[i];
	}
	printf("fuzz: total    %10llu calls %10llu succeeded\n", (unsigned long long)total,
	       (unsigned long long)ok);
	return 0;
}
