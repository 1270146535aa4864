/*
 * preload/clock.c - time: the clocks the program reads (clock_gettime,
 * gettimeofday, time, the vDSO's callers), recorded and returned in
 * replay.
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
/* time */

static int64_t ns_of(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static void ts_of(int64_t ns, struct timespec *ts)
{
	ts->tv_sec = ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
}

/* The clock as the event names it. A CPU-time clock of a process or
 * thread carries that one's id (pthread_getcpuclockid and
 * clock_getcpuclockid build it from the live id): the event names it by the
 * recorded id, which is what replay's live one is made into. */
static uint32_t clock_aux(clockid_t clk)
{
	if (clk >= 0 || (clk & 3) == 3) /* a fixed clock, or a descriptor's (CLOCKFD) */
		return (uint32_t)clk;
	pid_t id = (pid_t) ~(clk >> 3), rec = det_pid_to_rec(id);
	return id == 0 || rec == id ? (uint32_t)clk : ((uint32_t)~rec << 3) | ((uint32_t)clk & 7);
}

DET_IMPL int det_impl_clock_gettime(clockid_t clk, struct timespec *ts)
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.clock_gettime(clk, ts);
	struct det_op op = {0};
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_CLOCK_GETTIME, clock_aux(clk), DET_RA())) {
		res = op.rec->result;
	} else if (det_tsc_trapped) {
		/* the vDSO reads the TSC, which faults now: ask the kernel */
		long r = det_sys(SYS_clock_gettime, clk, (long)ts, 0, 0, 0, 0);
		res = r == 0 ? ns_of(ts) : r;
	} else {
		int r = real.clock_gettime(clk, ts);
		res = r == 0 ? ns_of(ts) : -(int64_t)errno;
	}
	det_input_end(&op, res, NULL, 0);
	det_leave(t);
	if (res < 0)
		return (int)ret_of(res);
	ts_of(res, ts);
	return 0;
}

DET_IMPL int det_impl_timespec_get(struct timespec *ts, int base)
{
	det_init();
	if (base != TIME_UTC)
		return real.timespec_get(ts, base);
	return clock_gettime(CLOCK_REALTIME, ts) == 0 ? base : 0;
}

/* glibc declares tv nonnull, yet callers pass NULL and the vDSO accepts it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnonnull-compare"
DET_IMPL int det_impl_gettimeofday(struct timeval *tv, void *tz)
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.gettimeofday(tv, tz);
	struct det_op op = {0};
	int64_t res;
	struct timeval mine;
	if (det_input_begin(&op, t, DET_EV_GETTIMEOFDAY, 0, DET_RA())) {
		res = op.rec->result;
	} else {
		long r = det_tsc_trapped ? det_sys(SYS_gettimeofday, (long)&mine, 0, 0, 0, 0, 0)
					 : real.gettimeofday(&mine, NULL) ? -errno : 0;
		res = r == 0 ? (int64_t)mine.tv_sec * 1000000 + mine.tv_usec : r;
	}
	det_input_end(&op, res, NULL, 0);
	det_leave(t);
	if (res < 0)
		return (int)ret_of(res);
	if (tv) {
		tv->tv_sec = res / 1000000;
		tv->tv_usec = res % 1000000;
	}
	if (tz) /* glibc has always filled the obsolete timezone with zeros */
		memset(tz, 0, 2 * sizeof(int));
	return 0;
}
#pragma GCC diagnostic pop

DET_IMPL time_t det_impl_time(time_t *out)
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.time(out);
	struct det_op op = {0};
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_TIME, 0, DET_RA()))
		res = op.rec->result;
	else
		res = det_tsc_trapped ? det_sys(SYS_time, 0, 0, 0, 0, 0, 0) : real.time(NULL);
	det_input_end(&op, res, NULL, 0);
	det_leave(t);
	if (out)
		*out = (time_t)res;
	return (time_t)res;
}

DET_IMPL clock_t det_impl_clock(void)
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.clock();
	struct det_op op = {0};
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_CLOCK, 0, DET_RA()))
		res = op.rec->result;
	else
		res = real.clock();
	det_input_end(&op, res, NULL, 0);
	det_leave(t);
	return (clock_t)res;
}
