/*
 * replayer/turns_futex.c - the default enforcement backend: turnstiles on
 * futex words in the shared region (replayer/turns.h).
 *
 * Rules of this file:
 *  - A thread's progress is its slot's `done` counter, which enforce.c
 *    advances at every event; the backend trusts it as the turn counter.
 *    A waiter reads another thread's counter only now and then: that line
 *    is written at every event of its owner, and a waiter that kept it
 *    would make each of those events pay for taking it back.
 *  - A finished event bumps the `kicks` word of the threads listed in its
 *    wake[] entries (the waiter's own line, which it spins on), and enters
 *    the kernel only for those of them that sleep on their `sleeping` word.
 *  - A waiter spins while the thread it waits for is running, for at most
 *    SPIN_LIMIT steps of relax() (a hand-off by sleeping costs both
 *    threads a few microseconds; a run of the other thread's events takes
 *    about as long), and sleeps at once when that thread sleeps itself.
 *  - Works across processes: the region is shared, the futexes are not
 *    private.
 */
#include "snapshot.h"
#include "turns.h"

#include <linux/futex.h>
#include <sys/syscall.h>

/* Steps (relax) a waiter spins at most. */
#define SPIN_LIMIT 128
/* Steps between two looks at the other thread's line. */
#define LOOK_EVERY 16
/* Steps that pause; the later ones give the CPU up. */
#define PAUSES 32

static long futex(_Atomic uint32_t *addr, int op, uint32_t val)
{
	return det_sys(SYS_futex, (long)addr, op, val, 0, 0, 0);
}

/* A step of spinning: a hand-off between two running cores takes well under
 * a microsecond, but the thread waited for may need this very CPU (a machine
 * busier than its cores, or both threads on one core), or the feeder may
 * (detreplay's own thread): there spinning would only delay them. */
static void relax(unsigned step)
{
	if (step < PAUSES)
		__builtin_ia32_pause();
	else
		det_sys(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
}

static void futex_thread_attach(struct det_thread *t)
{
	(void)t;
}

static uint64_t futex_done_count(uint32_t num)
{
	return atomic_load_explicit(&det_shm_slot(det_hdr, num)->done, memory_order_acquire);
}

/* Is the thread d doing its events, or about to (waiting for a turn but not
 * asleep: it spins, or its wake is under way)? Counting a woken thread as
 * asleep made a ping-pong of two threads sleep at every hand-off once one of
 * them had: each waited for the other while that one was still waking, and
 * slept too (a wake-up, several microseconds, per switch). */
static int moving(struct det_slot *d)
{
	return atomic_load_explicit(&d->state, memory_order_relaxed) == DET_TS_RUNNING &&
	       (!atomic_load_explicit(&d->at_turnstile, memory_order_relaxed) ||
		!atomic_load_explicit(&d->sleeping, memory_order_relaxed));
}

/* Spin until d has done its event idx, or until spinning looks useless;
 * returns 1 if it is done. */
static int spin(struct det_slot *me, struct det_slot *d, uint64_t idx)
{
	uint32_t k = atomic_load_explicit(&me->kicks, memory_order_acquire);
	for (unsigned n = 1; n <= SPIN_LIMIT; n++) {
		relax(n);
		uint32_t now = atomic_load_explicit(&me->kicks, memory_order_acquire);
		if (now == k && n % LOOK_EVERY)
			continue;
		k = now;
		if (atomic_load_explicit(&d->done, memory_order_acquire) > idx)
			return 1;
		if (!moving(d))
			return 0;
	}
	return 0;
}

/* Sleep until e's prerequisites are done; ns >= 0: wait once, at most
 * about ns (the caller looks again). */
static void wait_within(struct det_thread *t, const struct det_sched *e, long ns)
{
	struct det_slot *me = t->slot;
	for (int i = 0; i < 2; i++) {
		if (!e->dep_thread[i])
			continue;
		struct det_slot *d = det_shm_slot(det_hdr, e->dep_thread[i] - 1);
		if (atomic_load(&d->done) > e->dep_idx[i] || spin(me, d, e->dep_idx[i]))
			continue;
		int waited_once = 0;
		while (!waited_once) {
			det_snap_point(t); /* (a snapshot's holder wakes it for this) */
			/* Dekker with futex_done: sleeping is set before done is
			 * read again, done is set before sleeping is read. */
			atomic_store(&me->sleeping, 1);
			if (atomic_load(&d->done) > e->dep_idx[i])
				break;
			if (ns < 0) {
				futex(&me->sleeping, FUTEX_WAIT, 1);
			} else {
				struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
				det_sys(SYS_futex, (long)&me->sleeping, FUTEX_WAIT, 1, (long)&ts, 0, 0);
				waited_once = 1;
			}
		}
		atomic_store(&me->sleeping, 0);
		if (waited_once)
			return;
	}
}

static void futex_wait_turn(struct det_thread *t, const struct det_sched *e)
{
	wait_within(t, e, -1);
}

static void futex_wait_turn_for(struct det_thread *t, const struct det_sched *e, long ns)
{
	wait_within(t, e, ns);
}

static void wake_thread(uint32_t num)
{
	struct det_slot *s = det_shm_slot(det_hdr, num);
	atomic_fetch_add_explicit(&s->kicks, 1, memory_order_release);
	if (atomic_load(&s->sleeping) && atomic_exchange(&s->sleeping, 0))
		futex(&s->sleeping, FUTEX_WAKE, 1);
}

static void futex_done(struct det_thread *t, const struct det_sched *e)
{
	(void)t;
	for (int i = 0; i < 2; i++) {
		uint32_t w = e->wake[i];
		if (w == DET_WAKE_ALL) {
			for (uint32_t n = 0; n < det_hdr->threads_recorded; n++)
				wake_thread(n);
		} else if (w) {
			wake_thread(w - 1);
		}
	}
}

static void futex_reset(void)
{
	for (uint32_t i = 0; i < det_hdr->threads_recorded; i++)
		atomic_store(&det_shm_slot(det_hdr, i)->sleeping, 0);
}

const struct det_turns det_turns_futex = {
	.name = "futex",
	.thread_attach = futex_thread_attach,
	.done_count = futex_done_count,
	.wait = futex_wait_turn,
	.wait_for = futex_wait_turn_for,
	.done = futex_done,
	.reset = futex_reset,
};
