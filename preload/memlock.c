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
 *  - Reads /proc/self/maps through det_maps_each (maps.c: no stdio, no
 *    malloc: the caller may be a real-time thread that locked memory to
 *    avoid both).
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

struct lock_all {
	int onfault;
	int err; /* the errno of the first range the kernel refused */
};

/* Lock one mapping, unless it is det's region, inaccessible (a guard page:
 * the kernel does not fault those in either). The first error is what
 * mlockall would have said natively (RLIMIT_MEMLOCK's ENOMEM, a missing
 * capability's EPERM). */
static void lock_mapping(void *arg, uint64_t lo, uint64_t hi, const char *perms)
{
	struct lock_all *l = arg;
	if (perms[0] == '-' && perms[1] == '-' && perms[2] == '-')
		return;
	if (det_in_region(lo, hi))
		return; /* det's region is mappings of its own: never part of another's */
	int r = l->onfault ? real.mlock2((void *)(uintptr_t)lo, hi - lo, MLOCK_ONFAULT)
			   : real.mlock((void *)(uintptr_t)lo, hi - lo);
	if (r != 0 && !l->err)
		l->err = errno;
}

static int lock_all_but_det(int onfault)
{
	struct lock_all l = {.onfault = onfault};
	int err = det_maps_each(lock_mapping, &l);
	return err ? err : l.err;
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
