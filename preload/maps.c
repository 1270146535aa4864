/*
 * preload/maps.c - the process's mappings, from /proc/self/maps: each one
 * in turn (mlockall without det's region, memlock.c), and whether an
 * address is in memory the program's processes share (atomics there are
 * one object in every process, runtime.h's det_pshared).
 *
 * Rules of this file:
 *  - Reads /proc/self/maps with real.open/read (no stdio, no malloc): the
 *    callers may be a real-time thread that locked memory to avoid both, or
 *    a trapped atomic's signal handler.
 *  - det_addr_shared keeps a table of the mappings it last read, never
 *    changed once published (readers take no lock); it reads them again
 *    only for an address outside every mapping it knows (memory mapped
 *    since), so a program reads its maps about once per new mapping that
 *    holds an atomic. A table replaced is left mapped: a reader may still be
 *    in it, and there are that few. (Inherited by a fork's child: the same
 *    mappings.) A private mapping unmapped and replaced
 *    by a shared one at the same address is still taken as private.
 *  - Shared means MAP_SHARED and writable ("rw-s"), det's own region
 *    excepted: only there can another process's store be seen.
 */
#include "runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define USER_TOP 0x800000000000ull /* [vsyscall] lies above user space */

static uint64_t hex(const char **p)
{
	uint64_t v = 0;
	for (;; (*p)++) {
		char c = **p;
		if (c >= '0' && c <= '9')
			v = v * 16 + (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v * 16 + (uint64_t)(c - 'a' + 10);
		else
			return v;
	}
}

/* One line, "start-end perms ...": fn(lo, hi, perms) for a user-space range. */
static void each_line(const char *p, const char *end, det_map_fn fn, void *arg)
{
	uint64_t lo = hex(&p);
	if (p >= end || *p++ != '-')
		return;
	uint64_t hi = hex(&p);
	if (end - p < 5 || *p++ != ' ' || hi <= lo || hi > USER_TOP)
		return;
	fn(arg, lo, hi, p);
}

int det_maps_each(det_map_fn fn, void *arg)
{
	int fd = real.open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	char buf[4096];
	size_t have = 0;
	for (;;) {
		ssize_t n = real.read(fd, buf + have, sizeof buf - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		char *line = buf, *nl;
		while ((nl = memchr(line, '\n', (size_t)(buf + have - line))) != NULL) {
			each_line(line, nl, fn, arg);
			line = nl + 1;
		}
		have = (size_t)(buf + have - line);
		memmove(buf, line, have);
		if (have == sizeof buf)
			have = 0; /* a line longer than the buffer: a path; its range was read */
	}
	real.close(fd);
	return 0;
}

int det_in_region(uint64_t lo, uint64_t hi)
{
	uint64_t det_lo = (uint64_t)(uintptr_t)det_hdr;
	return det_hdr && lo >= det_lo && hi <= det_lo + det_hdr->size;
}

/* ------------------------------------------------------------------ */
/* shared memory */

struct span {
	uint64_t lo, hi; /* hi's bit 0: shared (both are page-aligned) */
};

struct spans {
	size_t n, cap;
	size_t shared; /* how many are */
	struct span s[];
};

static _Atomic(struct spans *) spans;

static void count_line(void *arg, uint64_t lo, uint64_t hi, const char *perms)
{
	(void)lo, (void)hi, (void)perms;
	(*(size_t *)arg)++;
}

static void keep_line(void *arg, uint64_t lo, uint64_t hi, const char *perms)
{
	struct spans *t = arg;
	if (t->n == t->cap)
		return; /* mapped since it was counted: the next read has it */
	int shared = perms[1] == 'w' && perms[3] == 's' && !det_in_region(lo, hi);
	t->s[t->n++] = (struct span){lo, hi | (uint64_t)shared};
	t->shared += (size_t)shared;
}

static struct spans *read_spans(void)
{
	size_t n = 0;
	if (det_maps_each(count_line, &n))
		return NULL;
	n += 64; /* room for mappings made between the two reads */
	size_t bytes = sizeof(struct spans) + n * sizeof(struct span);
	struct spans *t = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED)
		return NULL;
	t->cap = n;
	det_maps_each(keep_line, t);
	return t;
}

/* -1: in no mapping t knows; else whether the one holding a is shared. */
static int lookup(const struct spans *t, uint64_t a)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) { /* the kernel lists mappings by address */
		size_t mid = lo + (hi - lo) / 2;
		if (a < t->s[mid].lo)
			hi = mid;
		else if (a >= (t->s[mid].hi & ~1ull))
			lo = mid + 1;
		else
			return (int)(t->s[mid].hi & 1);
	}
	return -1;
}

int det_addr_shared(const void *addr)
{
	uint64_t a = (uint64_t)(uintptr_t)addr;
	struct spans *t = atomic_load_explicit(&spans, memory_order_acquire);
	int r = t ? lookup(t, a) : -1;
	if (r >= 0)
		return r;
	/* No lock: two threads that read at once each publish a whole table
	 * (a lock held by another thread as the program forks would be held
	 * for ever in the child). */
	struct spans *fresh = read_spans();
	if (!fresh)
		return 0;
	atomic_store_explicit(&spans, fresh, memory_order_release);
	return lookup(fresh, a) > 0;
}
