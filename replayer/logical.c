/*
 * replayer/logical.c - logical time (after Kendo): threads run in parallel
 * and take turns, by logical clock, only to synchronize, so that the same
 * program with the same input synchronizes in the same order on every run,
 * with or without a trace.
 *
 * Rules of this file:
 *  - A thread's clock counts its events, plus its det-cc ticks and memory
 *    points when the program was built with det-cc (preload/atomics.c).
 *    It is published in the thread's slot at every event and at the end of
 *    every tick quantum; published clocks only grow.
 *  - A thread performs an event only in its turn: when no other thread
 *    that takes part has a smaller (clock, thread number), and no one else
 *    is in a turn. A turn lasts from the first event of a call into det to
 *    the moment the call returns to the program, so that everything det
 *    does for the call (strict.c's bookkeeping of waits) is in the turn,
 *    as it is under strict mode's token. A thread blocked in a wait det emulates (strict.c's
 *    locks, condition variables, barriers, joins) or in the outside world
 *    takes no part, so it holds no one back. The thread that wakes a
 *    waiter does so in its own turn and puts the waiter's clock past its
 *    own (WAKE_DELAY), so when a woken thread comes back is decided by
 *    clocks too.
 *  - Sleeps keep the thread in the order (its turn waits for it): a sleep
 *    has no partner to wake it, so it cannot deadlock, and the moment it
 *    ends must not decide anything. Other calls into the outside world
 *    (reads, polls, waits for children) rejoin when they return: how long
 *    the world takes is the world's, and only a recording fixes it.
 *  - With det-cc memory points, every access to possibly shared memory
 *    takes the turn too (held for a quantum of points), so a program with
 *    data races is deterministic as well.
 *  - This is strict mode's machinery with the token replaced by turns:
 *    strict.c calls in here when det_logical is set; nothing else changes.
 */
#include "logical.h"
#include "strict.h"

#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>

#define SPIN_ROUNDS 200
/* A thread made runnable by another comes back this much later than its
 * waker in logical time: the waker goes on for a while without waiting for
 * it (a woken thread takes real time to get going, and a waker that had to
 * hand over at once, event by event, would make a contended lock alternate
 * between threads on every acquisition). */
#define WAKE_DELAY 256

struct lt_thread {
	uint64_t base;   /* clock = base + events + det-cc ticks and points */
	uint64_t events;
	int points;      /* the turn is held for det-cc memory points */
};

static __thread struct lt_thread lt __attribute__((tls_model("initial-exec")));

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
	return det_sys(SYS_futex, (long)addr, op, val, (long)ts, 0, 0);
}


static uint64_t clock_of(void)
{
	return lt.base + lt.events + det_cc_count();
}

/* Publish the clock; a waker may have put it further (then it goes on
 * from there). */
static uint64_t publish(struct det_thread *t)
{
	struct det_slot *s = t->slot;
	uint64_t c = clock_of(), p = atomic_load(&s->lt_clock);
	/* a waker may raise the clock at any moment (det_logical_runnable):
	 * a plain store could put back the lower value it replaced */
	while (p <= c && !atomic_compare_exchange_weak(&s->lt_clock, &p, c))
		;
	if (p > c) {
		lt.base += p - c;
		c = p;
	}
	return c;
}

static int first(uint32_t me, uint64_t c);

/* Turns may have changed hands (a clock grew, a turn ended, a thread left
 * the order): wake the thread that now comes first, if it sleeps waiting
 * for its turn. Only that one: a thread behind it would only go back to
 * sleep (with WAKE_DELAY, a woken thread waits for many of its waker's
 * events). Whoever changes the order calls this, so the first thread is
 * never left asleep (Dekker with wait_turn: state, then lt_sleeping). */
static void wake_first(void)
{
	struct det_shm_header *h = det_hdr;
	uint32_t n = det_threads_so_far(), best = UINT32_MAX;
	uint64_t bc = UINT64_MAX;
	for (uint32_t i = 0; i < n; i++) {
		struct det_slot *s = det_shm_slot(h, i);
		if (!atomic_load(&s->lt_counted))
			continue;
		uint64_t c = atomic_load(&s->lt_clock);
		if (c < bc) {
			bc = c;
			best = i;
		}
	}
	if (best == UINT32_MAX)
		return;
	struct det_slot *s = det_shm_slot(h, best);
	if (atomic_load(&s->lt_sleeping)) {
		atomic_fetch_add(&s->lt_wake, 1);
		futex(&s->lt_wake, FUTEX_WAKE, 1, NULL);
	}
}

/* Does thread `me` with clock c come first among those taking part? */
static int first(uint32_t me, uint64_t c)
{
	struct det_shm_header *h = det_hdr;
	uint32_t n = det_threads_so_far();
	for (uint32_t i = 0; i < n; i++) {
		if (i == me)
			continue;
		struct det_slot *s = det_shm_slot(h, i);
		if (!atomic_load(&s->lt_counted))
			continue;
		uint64_t ci = atomic_load(&s->lt_clock);
		if (ci < c || (ci == c && i < me))
			return 0;
	}
	return 1;
}

static __attribute__((noreturn)) void freeze(struct det_thread *t)
{
	atomic_store(&t->slot->lt_counted, 0);
	if (t->holding) {
		t->holding = 0;
		atomic_store(&det_hdr->lt_owner, 0);
	}
	wake_first();
	_Atomic uint32_t never = 0;
	for (;;)
		futex(&never, FUTEX_WAIT_PRIVATE, 0, NULL);
}

void det_logical_wait_turn(struct det_thread *t)
{
	struct det_shm_header *h = det_hdr;
	struct det_slot *me = t->slot;
	atomic_store(&me->lt_counted, 1);
	uint64_t c = publish(t);
	for (unsigned spin = 0;; spin++) {
		if (det_strict_ending())
			freeze(t);
		uint32_t word = atomic_load(&me->lt_wake);
		uint32_t free = 0;
		if (atomic_load(&h->lt_owner) == 0 && first(t->num, c) &&
		    atomic_compare_exchange_strong(&h->lt_owner, &free, t->num + 1)) {
			/* The turn is ours, and no one can move our clock now (only
			 * an owner wakes threads). But the waker that made us
			 * runnable may have raised it after we read it: a woken
			 * thread can see its wait over before its waker has put its
			 * clock after its own. Take the turn by the clock it has. */
			uint64_t now = publish(t);
			if (now == c || first(t->num, now))
				break;
			c = now;
			atomic_store(&h->lt_owner, 0);
			wake_first();
			continue;
		}
		if (spin < SPIN_ROUNDS) {
			__builtin_ia32_pause();
			continue;
		}
		atomic_store(&me->lt_sleeping, 1);
		if (atomic_load(&h->lt_owner) == 0 && first(t->num, c)) {
			atomic_store(&me->lt_sleeping, 0);
			continue;
		}
		/* (the timeout only bounds a wait for a turn that a thread in an
		 * owner's turn frees: ending a turn wakes the first thread) */
		struct timespec ts = {0, 20 * 1000 * 1000};
		futex(&me->lt_wake, FUTEX_WAIT, word, &ts);
		atomic_store(&me->lt_sleeping, 0);
		spin = SPIN_ROUNDS / 2;
	}
	t->holding = 1;
}

void det_logical_acquire(struct det_thread *t)
{
	if (!t->holding)
		det_logical_wait_turn(t);
}

static void end_turn(struct det_thread *t)
{
	lt.points = 0;
	publish(t);
	if (t->holding) {
		t->holding = 0;
		atomic_store(&det_hdr->lt_owner, 0);
	}
	det_cc_turn_over();
	wake_first();
}

/* The thread stops taking part: it exits, blocks in the outside world, or
 * waits for another thread (which will make it take part again). */
void det_logical_release(struct det_thread *t)
{
	if (!t->exited && atomic_load(&t->slot->blocked_kind) == DET_EV_SLEEP) {
		end_turn(t); /* a sleep keeps its place in the order */
		return;
	}
	atomic_store(&t->slot->lt_counted, 0);
	end_turn(t);
}

void det_logical_after_event(struct det_thread *t)
{
	if (t->holding)
		lt.events++;
}

/* A call into det returns to the program: its turn ends (unless it was
 * taken for memory points, which hold it for their quantum). */
void det_logical_leave(struct det_thread *t)
{
	if (!lt.points)
		end_turn(t);
}

/* In the waker's turn: `num` takes part again, after the waker. A thread
 * that makes itself runnable (a timed wait that timed out) just rejoins.
 * One that found its lock taken again each of its last LT_RETRIES
 * wake-ups (strict.c) goes next: with WAKE_DELAY alone, a holder that
 * relocks every few events could be at the same point of its loop, lock
 * held, whenever the waiter's turn came, every time (a waiter starved for
 * ever: pthread_cancel's test saw it). */
void det_logical_runnable(struct det_thread *waker, uint32_t num)
{
	struct det_slot *s = det_shm_slot(det_hdr, num);
	if (waker->active && num != waker->num) {
		uint64_t after = clock_of() + (atomic_load(&s->lt_retry) ? 0 : WAKE_DELAY);
		if (atomic_load(&s->lt_clock) < after)
			atomic_store(&s->lt_clock, after);
	}
	atomic_store(&s->lt_counted, 1);
}

/* A thread begins: the main thread at 0, a created one where its creator
 * put it (and, with a seed, a little later: another deterministic order). */
void det_logical_start(struct det_thread *t)
{
	struct det_slot *s = t->slot;
	lt.events = 0;
	lt.base = t->num ? atomic_load(&s->lt_clock) : 0;
	uint64_t seed = det_hdr->chaos_seed;
	if (seed) {
		uint64_t x = seed ^ (0x9E3779B97F4A7C15ull * (t->num + 1));
		x ^= x >> 31;
		x *= 0xD6E8FEB86659FD93ull;
		x ^= x >> 32;
		lt.base += x % 64;
	}
	atomic_store(&s->lt_clock, lt.base);
	atomic_store(&s->lt_counted, 1);
	det_logical_wait_turn(t);
}

void det_logical_tick(struct det_thread *t)
{
	if (t->holding) {
		end_turn(t); /* a turn held for memory points */
		return;
	}
	publish(t);
	wake_first();
}

void det_logical_point(struct det_thread *t)
{
	if (t->holding)
		end_turn(t); /* its quantum of points is over: others may go first */
	det_logical_wait_turn(t);
	lt.points = 1;
}

/* Logical time: reached from preload/ and the other modes through det_ops. */
static const struct det_mode_ops logical_ops = {
	.logical_acquire = det_logical_acquire,
	.logical_leave = det_logical_leave,
	.logical_tick = det_logical_tick,
	.logical_point = det_logical_point,
};
DET_MODE_REGISTER(logical_ops);
