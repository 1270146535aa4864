/*
 * preload/random.c - randomness: getrandom and friends, recorded and
 * returned in replay.
 *
 * Rules of this file:
 *  - Those of preload/inputs.c, which holds what every input wrapper shares
 *    (preload/inputs.h): this file is one source of inputs, split out of it.
 */
#include "inputs.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <sys/signalfd.h>
#include <sys/inotify.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* randomness */

static ssize_t det_getrandom(struct det_thread *t, void *buf, size_t n, unsigned flags, int entropy, uint64_t ra)
{
	struct det_op op = {0};
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_GETRANDOM, (uint32_t)entropy, ra)) {
		res = op.rec->result;
		if (res > 0)
			memcpy(buf, det_replay_data(op.rec), (size_t)res < n ? (size_t)res : n);
	} else if (entropy) {
		res = real.getentropy(buf, n) == 0 ? (int64_t)n : -(int64_t)errno;
	} else {
		res = res_of(real.getrandom(buf, n, flags));
	}
	det_input_end(&op, res, buf, res > 0 ? (uint32_t)res : 0);
	return ret_of(res);
}

DET_IMPL ssize_t det_impl_getrandom(void *buf, size_t n, unsigned int flags)
{
	DET_ENTER(t);
	if (!t)
		return real.getrandom(buf, n, flags);
	ssize_t r = det_getrandom(t, buf, n, flags, 0, DET_RA());
	int e = errno;
	det_leave(t);
	errno = e;
	return r;
}

DET_IMPL int det_impl_getentropy(void *buf, size_t n)
{
	DET_ENTER(t);
	if (!t)
		return real.getentropy(buf, n);
	ssize_t r = det_getrandom(t, buf, n, 0, 1, DET_RA());
	int e = errno;
	det_leave(t);
	errno = e;
	return r < 0 ? -1 : 0;
}
