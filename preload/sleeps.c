/*
 * preload/sleeps.c - sleeping: recorded, and skipped in replay.
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
/* sleeping: recorded, and skipped in replay */

static int det_sleep(struct timespec *rem, int (*perform)(void *), void *ctx, uint64_t ra, int *passed)
{
	DET_ENTER(t);
	if (!t) {
		*passed = 1;
		return 0;
	}
	*passed = 0;
	if (det_replaying() && !det_ops.replay_polled(t, DET_EV_SLEEP)) {
		/* A polling loop sleeping more often than recorded (the thread
		 * it waits for is behind): no event; a short real sleep lets
		 * that thread run. */
		struct timespec poll = {0, 100000};
		det_sys(SYS_nanosleep, (long)&poll, 0, 0, 0, 0, 0);
		det_leave(t);
		return 0;
	}
	struct det_op op = {0};
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_SLEEP, 0, ra)) {
		res = op.rec->result;
		if (rem && op.rec->data_len == sizeof(*rem))
			memcpy(rem, det_replay_data(op.rec), sizeof(*rem));
		det_input_end(&op, res, NULL, 0);
	} else {
		res = BLOCKING(&op, perform(ctx));
		det_input_end(&op, res, rem, res == -EINTR && rem ? sizeof(*rem) : 0);
	}
	det_leave(t);
	return (int)res;
}

struct sleep_args {
	clockid_t clock;
	int flags;
	const struct timespec *req;
	struct timespec *rem;
};

static int do_nanosleep(void *p)
{
	struct sleep_args *a = p;
	return real.nanosleep(a->req, a->rem) ? -errno : 0;
}

static int do_clock_nanosleep(void *p)
{
	struct sleep_args *a = p;
	int r = real.clock_nanosleep(a->clock, a->flags, a->req, a->rem);
	return r ? -r : 0; /* clock_nanosleep returns the error number */
}

DET_IMPL int det_impl_nanosleep(const struct timespec *req, struct timespec *rem)
{
	struct sleep_args a = {0, 0, req, rem};
	int passed;
	int r = det_sleep(rem, do_nanosleep, &a, DET_RA(), &passed);
	if (passed)
		return real.nanosleep(req, rem);
	return (int)ret_of(r);
}

DET_IMPL int det_impl_clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem)
{
	struct sleep_args a = {clock, flags, req, rem};
	int passed;
	int r = det_sleep(rem, do_clock_nanosleep, &a, DET_RA(), &passed);
	if (passed)
		return real.clock_nanosleep(clock, flags, req, rem);
	return -r;
}

DET_IMPL int det_impl_usleep(useconds_t us)
{
	struct timespec req = {us / 1000000, (long)(us % 1000000) * 1000};
	return nanosleep(&req, NULL);
}

DET_IMPL unsigned int det_impl_sleep(unsigned int s)
{
	struct timespec req = {s, 0}, rem = {0, 0};
	if (nanosleep(&req, &rem) == 0)
		return 0;
	return (unsigned int)rem.tv_sec; /* whole seconds not slept, as glibc's sleep */
}
