/*
 * preload/memlock.c - mlockall without det's memory.
 *
 * det's shared region (include/det/shm.h: the rings, the schedule, the
 * object tables) is gigabytes of address space that is mostly never
 * touched. mlockall(MCL_CURRENT) would fault in and pin all of it (seconds,
 * and RLIMIT_MEMLOCK's bytes counted against the program): here it locks
 * every mapping of the process but that region, one range at a time as the
 * kernel would, and leaves MCL_FUTURE to the kernel.
 *
 * Rules of this file:
 *  - Not an event: locking memory changes no result the program sees but
 *    its own (and the kernel's answer, which it gets as it would natively).
 *  - Reads /proc/self/maps with real.open/read (no stdio, no malloc: the
 *    caller may be a real-time thread that locked memory to avoid both).
 */
#include "runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#ifndef MCL_ONFAULT
#define MCL_ONFAULT 4
#endif
#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 1
#endif

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

/* Lock one line's range ("start-end perms ..."), unless it is det's region,
 * inaccessible (a guard page: the kernel does not fault those in either), or
 * the kernel's own ([vsyscall] lies above user space). Returns 0 or the
 * errno of the first range the kernel refused (RLIMIT_MEMLOCK's ENOMEM, a
 * missing capability's EPERM): what mlockall would have said natively. */
static int lock_line(const char *p, const char *end, int onfault)
{
	uint64_t lo = hex(&p);
	if (p >= end || *p++ != '-')
		return 0;
	uint64_t hi = hex(&p);
	if (end - p < 4 || *p++ != ' ' || hi <= lo || hi > 0x800000000000ull)
		return 0;
	if (p[0] == '-' && p[1] == '-' && p[2] == '-')
		return 0;
	uint64_t det_lo = (uint64_t)(uintptr_t)det_hdr;
	if (det_hdr && lo >= det_lo && hi <= det_lo + det_hdr->size)
		return 0; /* det's region is mappings of its own: never part of another's */
	int r = onfault ? real.mlock2((void *)(uintptr_t)lo, hi - lo, MLOCK_ONFAULT)
			: real.mlock((void *)(uintptr_t)lo, hi - lo);
	return r == 0 ? 0 : errno;
}

static int lock_all_but_det(int onfault)
{
	int fd = real.open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	char buf[4096];
	size_t have = 0;
	int err = 0;
	for (;;) {
		ssize_t n = real.read(fd, buf + have, sizeof buf - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		char *line = buf, *nl;
		while ((nl = memchr(line, '\n', (size_t)(buf + have - line))) != NULL) {
			int e = lock_line(line, nl, onfault);
			if (e && !err)
				err = e;
			line = nl + 1;
		}
		have = (size_t)(buf + have - line);
		memmove(buf, line, have);
		if (have == sizeof buf)
			have = 0; /* a line longer than the buffer: a path; its range was read */
	}
	real.close(fd);
	return err;
}

DET_IMPL int det_impl_mlockall(int flags)
{
	int known = MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT;
	if (!det_hdr || !(flags & MCL_CURRENT) || (flags & ~known))
		return real.mlockall(flags); /* nothing of det's to lock, or the kernel's EINVAL */
	int err = lock_all_but_det(flags & MCL_ONFAULT);
	if (err) {
		errno = err;
		return -1;
	}
	return flags & MCL_FUTURE ? real.mlockall(flags & ~MCL_CURRENT) : 0;
}
