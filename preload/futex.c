/*
 * preload/futex.c - futex(2) a program or a library calls itself through
 * syscall(): the locks and waits of Rust's std, abseil, LLVM's OpenMP
 * runtime and hand-written code, seen where one thread runs at a time.
 *
 * Rules of this file:
 *  - Only recordings that run one thread at a time (strict, PCT, logical
 *    time) and their replays hold futex events. There the atomics around a
 *    futex call run in an order the schedule fixes, so whether a thread
 *    calls futex at all is fixed too; and a wait must hand the turn on
 *    instead of sleeping in the kernel with it (the watchdog took it back,
 *    a preemption replay cannot repeat). In the default mode those atomics
 *    are no events: ordering the call alone would make every difference in
 *    their timing a divergence, so the call is the kernel's, as before.
 *  - A wait is a strict wait on the word (strict.c): woken by a wake of the
 *    word, its deadline, or a signal. The kernel checks it first (probe):
 *    a bad address or operation fails, a word that changed is EAGAIN. A wake wakes every det waiter of the
 *    word (and the kernel's: a thread det does not run), never fewer than
 *    asked: with bitsets and requeues, waking too many is a spurious
 *    wake-up, which every futex user allows, and waking too few a hang.
 *  - Replay: a wait returns its recorded result at its turn, without
 *    sleeping; a wake still makes the call (WAKE_OP's operation on the
 *    second word is the program's memory; a waiter det does not run must
 *    wake) and returns the recorded result.
 *  - Priority-inheritance operations (the kernel writes thread ids into the
 *    word) and futex_waitv are the kernel's in every mode.
 */
#include "runtime.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>

/* Does this run order futex calls (see the rules)? */
static int futex_events(void)
{
	return det_strict || (det_replaying() && (det_hdr->flags & DET_F_STRICT));
}

/* The kernel's checks of a wait, without waiting: the word's address, the
 * operation (a bitset of 0), the timeout's form, and whether the word holds
 * the value (-ETIMEDOUT: it does, the wait would sleep; -EAGAIN: it does
 * not). A deadline already past makes the kernel answer at once. */
static long probe(const long a[6])
{
	const struct timespec *timeout = (const struct timespec *)a[3];
	if (timeout && (timeout->tv_sec < 0 || timeout->tv_nsec < 0 || timeout->tv_nsec >= 1000000000))
		return -EINVAL;
	int cmd = (int)a[1] & FUTEX_CMD_MASK;
	struct timespec now = {0, 0}; /* relative for FUTEX_WAIT, absolute (long past) for WAIT_BITSET */
	return det_sys(SYS_futex, a[0], a[1], a[2], (long)&now, a[4], cmd == FUTEX_WAIT_BITSET ? a[5] : 0);
}

static long futex_wait(struct det_thread *t, const long a[6], uint64_t ra)
{
	uint32_t *word = (uint32_t *)a[0];
	int op = (int)a[1], cmd = op & FUTEX_CMD_MASK;
	struct det_op wop = {0};
	long r;
	if (det_acquire_begin(&wop, t, DET_EV_FUTEX_WAIT, word, DET_OBJ_FUTEX, ra)) {
		r = wop.rec->result; /* (replay: failed in the recording) */
	} else if (det_replaying()) {
		r = 0;
	} else if ((r = probe(a)) != -ETIMEDOUT) {
		/* (EAGAIN: the word held another value; EFAULT, EINVAL) */
	} else {
		/* it stops here: the code it ran so far comes before what the
		 * others do next (replay takes this turn where it calls) */
		det_ops.rec_block_event(t, DET_EV_FUTEX_WAIT, wop.obj, ra);
		const struct timespec *timeout = (const struct timespec *)a[3];
		clockid_t clock = op & FUTEX_CLOCK_REALTIME ? CLOCK_REALTIME : CLOCK_MONOTONIC;
		struct timespec until;
		if (timeout && cmd == FUTEX_WAIT) { /* relative */
			det_sys(SYS_clock_gettime, clock, (long)&until, 0, 0, 0, 0);
			until.tv_sec += timeout->tv_sec;
			until.tv_nsec += timeout->tv_nsec;
			if (until.tv_nsec >= 1000000000) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000;
			}
		} else if (timeout) {
			until = *timeout;
		}
		uint64_t events = t->idx; /* (a handler's signal is an event: then EINTR, as the kernel's wait) */
		if (det_ops.strict_wait(&wop, word, timeout ? &until : NULL, clock))
			r = -ETIMEDOUT;
		else
			r = t->idx != events ? -EINTR : 0;
	}
	det_acquire_end(&wop, r);
	return r;
}

/* Wake det's waiters of word: all of them, counted up to want. */
static long wake_all(const void *word, long want)
{
	long woke = det_ops.strict_signal(word, 1);
	return woke < want ? woke : want;
}

static long futex_wake(struct det_thread *t, const long a[6], uint64_t ra)
{
	uint32_t *word = (uint32_t *)a[0];
	int cmd = (int)a[1] & FUTEX_CMD_MASK;
	struct det_op op = {.aux = (uint32_t)cmd};
	det_release_begin(&op, t, DET_EV_FUTEX_WAKE, word, DET_OBJ_FUTEX, ra);
	long r = det_sys(SYS_futex, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (det_replaying()) {
		r = op.rec->result;
	} else if (r >= 0) {
		long val = (long)(int)a[2], val2 = cmd == FUTEX_WAKE || cmd == FUTEX_WAKE_BITSET ? 0 : (long)(int)a[3];
		long want = val + val2 > INT_MAX ? INT_MAX : val + val2;
		long woke = wake_all(word, want - r);
		if (cmd == FUTEX_WAKE_OP || cmd == FUTEX_REQUEUE || cmd == FUTEX_CMP_REQUEUE)
			woke += wake_all((const void *)a[4], want - r - woke);
		r += woke;
		if (woke && t->holding)
			t->quantum = 1; /* as a lock's release: the woken try again now */
	}
	det_release_end(&op, r);
	return r;
}

long det_futex_call(const long a[6], uint64_t ra)
{
	int cmd = (int)a[1] & FUTEX_CMD_MASK;
	int wait = cmd == FUTEX_WAIT || cmd == FUTEX_WAIT_BITSET;
	int wake = cmd == FUTEX_WAKE || cmd == FUTEX_WAKE_BITSET || cmd == FUTEX_WAKE_OP || cmd == FUTEX_REQUEUE ||
		   cmd == FUTEX_CMP_REQUEUE;
	struct det_thread *t;
	if (!(wait || wake) || !futex_events() || !(t = det_enter()))
		return det_sys(SYS_futex, a[0], a[1], a[2], a[3], a[4], a[5]);
	long r = wait ? futex_wait(t, a, ra) : futex_wake(t, a, ra);
	det_leave(t);
	return r;
}

long det_futex_syscall(const long a[6], uint64_t ra)
{
	long r = det_futex_call(a, ra);
	if (r == -EINTR) /* the kernel's wait, interrupted: its handler has run when the call returns */
		det_signals_at_call();
	return ret_of(r);
}
