/*
 * preload/timer_state.c - what a timer has left is an input: alarm's
 * remainder, getitimer and setitimer's old value (ITIMER_VIRTUAL and
 * ITIMER_PROF count CPU time), timer_gettime, timer_settime's old value,
 * timer_getoverrun, timerfd_gettime and timerfd_settime's old value.
 * Replay skips sleeps and takes the signals and timerfd reads from the
 * trace, so the kernel's timers there are somewhere else: a program that
 * asks them (alarm(0) to cancel and learn what was left) would see another
 * value.
 *
 * Rules of this file:
 *  - Those of preload/inputs.c, which holds what every input wrapper shares
 *    (preload/inputs.h): this file is one source of inputs, split out of it.
 *  - Every call is made in replay too (a timerfd armed there is read or
 *    polled through det, whose answers come from the trace; a signal a
 *    timer sends there is not the recorded one and det does not deliver
 *    it), and returns what the recording's returned.
 */
#include "inputs.h"

#include <errno.h>
#include <string.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

/* aux of a TIMER_QUERY event: the call */
enum timer_call {
	TQ_ALARM = 0,
	TQ_GETITIMER = 1,
	TQ_SETITIMER = 2,
	TQ_TIMER_GETTIME = 3,
	TQ_TIMER_SETTIME = 4,
	TQ_TIMER_GETOVERRUN = 5,
	TQ_TIMERFD_GETTIME = 6,
	TQ_TIMERFD_SETTIME = 7,
};

struct timer_args {
	enum timer_call call;
	int which; /* an itimer's, or a timerfd */
	int flags; /* timer_settime's, timerfd_settime's */
	timer_t id;
	unsigned seconds;
	const void *set; /* the new value */
	void *out;       /* what the call writes, or NULL */
};

static int64_t perform_timer(const struct timer_args *a)
{
	switch (a->call) {
	case TQ_ALARM:
		return (int64_t)real.alarm(a->seconds);
	case TQ_GETITIMER:
		return res_of(real.getitimer((__itimer_which_t)a->which, a->out));
	case TQ_SETITIMER:
		return res_of(real.setitimer((__itimer_which_t)a->which, a->set, a->out));
	case TQ_TIMER_GETTIME:
		return res_of(real.timer_gettime(a->id, a->out));
	case TQ_TIMER_SETTIME:
		return res_of(real.timer_settime(a->id, a->flags, a->set, a->out));
	case TQ_TIMER_GETOVERRUN:
		return res_of(real.timer_getoverrun(a->id));
	case TQ_TIMERFD_GETTIME:
		return res_of(real.timerfd_gettime(a->which, a->out));
	default:
		return res_of(real.timerfd_settime(a->which, a->flags, a->set, a->out));
	}
}

static int64_t timer_event(const struct timer_args *a, uint32_t size, uint64_t ra)
{
	DET_ENTER(t);
	if (!t)
		return perform_timer(a);
	struct det_op op = {0};
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_TIMER_QUERY, (uint32_t)a->call, ra)) {
		perform_timer(a);
		res = op.rec->result;
		if (a->out && res >= 0 && op.rec->data_len == size)
			memcpy(a->out, det_replay_data(op.rec), size);
		det_input_end(&op, res, NULL, 0);
	} else {
		res = perform_timer(a);
		det_input_end(&op, res, a->out, a->out && res >= 0 ? size : 0);
	}
	det_leave(t);
	return res;
}

DET_IMPL unsigned int det_impl_alarm(unsigned int seconds)
{
	struct timer_args a = {.call = TQ_ALARM, .seconds = seconds};
	return (unsigned int)timer_event(&a, 0, DET_RA());
}

DET_IMPL int det_impl_getitimer(__itimer_which_t which, struct itimerval *cur)
{
	struct timer_args a = {.call = TQ_GETITIMER, .which = (int)which, .out = cur};
	return (int)ret_of(timer_event(&a, sizeof(*cur), DET_RA()));
}

DET_IMPL int det_impl_setitimer(__itimer_which_t which, const struct itimerval *set, struct itimerval *old)
{
	struct timer_args a = {.call = TQ_SETITIMER, .which = (int)which, .set = set, .out = old};
	return (int)ret_of(timer_event(&a, sizeof(*old), DET_RA()));
}

DET_IMPL int det_impl_timer_gettime(timer_t id, struct itimerspec *cur)
{
	struct timer_args a = {.call = TQ_TIMER_GETTIME, .id = id, .out = cur};
	return (int)ret_of(timer_event(&a, sizeof(*cur), DET_RA()));
}

DET_IMPL int det_impl_timer_settime(timer_t id, int flags, const struct itimerspec *set, struct itimerspec *old)
{
	struct timer_args a = {.call = TQ_TIMER_SETTIME, .flags = flags, .id = id, .set = set, .out = old};
	return (int)ret_of(timer_event(&a, sizeof(*old), DET_RA()));
}

DET_IMPL int det_impl_timer_getoverrun(timer_t id)
{
	struct timer_args a = {.call = TQ_TIMER_GETOVERRUN, .id = id};
	return (int)ret_of(timer_event(&a, 0, DET_RA()));
}

DET_IMPL int det_impl_timerfd_gettime(int fd, struct itimerspec *cur)
{
	struct timer_args a = {.call = TQ_TIMERFD_GETTIME, .which = fd, .out = cur};
	return (int)ret_of(timer_event(&a, sizeof(*cur), DET_RA()));
}

DET_IMPL int det_impl_timerfd_settime(int fd, int flags, const struct itimerspec *set, struct itimerspec *old)
{
	struct timer_args a = {.call = TQ_TIMERFD_SETTIME, .which = fd, .flags = flags, .set = set, .out = old};
	return (int)ret_of(timer_event(&a, sizeof(*old), DET_RA()));
}
