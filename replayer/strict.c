/*
 * replayer/strict.c - strict mode while recording: one thread runs at a
 * time, and the run token changes hands only at events, so that everything
 * between two events (data races included) happens in the recorded order.
 * Also chaos scheduling: the same decisions, drawn from a seed.
 *
 * Rules of this file:
 *  - A thread runs program code only while it holds the token. It offers
 *    the token at an event boundary (after `quantum` events, or when the
 *    chaos strategy says so) and gives it up before any call that may block
 *    (a contended lock, a condition wait, a read...), taking it back after.
 *    Every event is therefore taken while holding the token: the trace's
 *    order is the order in which the code ran.
 *  - A holder that makes no event for watchdog_ms while others wait loses
 *    the token: the preemption is recorded (PREEMPT) as a point replay
 *    cannot make exact.
 *  - Chaos (PCT, after Burckhardt et al.): every thread gets a random
 *    priority from the run's seed; the highest-priority thread that can run
 *    holds the token; at a few change points (event numbers drawn by detrec
 *    from the same seed) the running thread drops below everyone. The same
 *    seed gives the same decisions, since they depend only on the events.
 */
#include "runtime.h"

#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>

int det_strict;

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
	return det_sys(SYS_futex, (long)addr, op, val, (long)ts, 0, 0);
}

static uint64_t next_rand(struct det_thread *t)
{
	uint64_t x = t->rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	t->rng = x;
	return x;
}

static void hand_to(uint32_t num)
{
	struct det_slot *s = det_shm_slot(det_hdr, num);
	atomic_store(&det_hdr->strict_owner, num + 1);
	atomic_fetch_add(&s->strict_wake, 1);
	futex(&s->strict_wake, FUTEX_WAKE, 1, NULL);
}

/* The next thread that wants the token, after `from` in number order (or
 * the highest priority one, under chaos). */
static int pick(struct det_thread *t, uint32_t *out)
{
	struct det_shm_header *h = det_hdr;
	uint32_t n = (uint32_t)(atomic_load(&h->clock) >> DET_SEQ_BITS);
	if (n > h->max_threads)
		n = h->max_threads;
	if (h->chaos_seed) {
		/* PCT: the waiting thread of highest priority */
		int found = 0;
		int32_t best = INT32_MIN;
		for (uint32_t i = 0; i < n; i++) {
			struct det_slot *s = det_shm_slot(h, i);
			if (i == t->num || !atomic_load(&s->strict_wants))
				continue;
			int32_t p = atomic_load(&s->prio);
			if (!found || p > best) {
				best = p;
				*out = i;
				found = 1;
			}
		}
		return found;
	}
	for (uint32_t d = 1; d <= n; d++) {
		uint32_t i = (t->num + d) % n;
		if (i != t->num && atomic_load(&det_shm_slot(h, i)->strict_wants)) {
			*out = i;
			return 1;
		}
	}
	return 0;
}

void det_strict_release(struct det_thread *t)
{
	if (!t->holding)
		return;
	t->holding = 0;
	uint32_t next;
	if (atomic_load(&det_hdr->strict_wanting) && pick(t, &next)) {
		hand_to(next);
		return;
	}
	atomic_store(&det_hdr->strict_owner, 0);
	/* a thread may have begun to wait after we looked */
	if (atomic_load(&det_hdr->strict_wanting) && pick(t, &next)) {
		uint32_t free = 0;
		if (atomic_compare_exchange_strong(&det_hdr->strict_owner, &free, next + 1)) {
			struct det_slot *s = det_shm_slot(det_hdr, next);
			atomic_fetch_add(&s->strict_wake, 1);
			futex(&s->strict_wake, FUTEX_WAKE, 1, NULL);
		}
	}
}

/* Preempt a holder that has made no event for too long. */
static void preempt(struct det_thread *t, uint32_t victim)
{
	uint32_t expected = victim + 1;
	if (!atomic_compare_exchange_strong(&det_hdr->strict_owner, &expected, t->num + 1))
		return;
	atomic_fetch_add(&det_hdr->preemptions, 1);
	t->holding = 1;
	struct det_op op = {.id = det_shm_slot(det_hdr, victim)->obj, .aux = victim};
	op.t = t;
	op.kind = DET_EV_PREEMPT;
	op.obj = op.id;
	op.ra = 0;
	t->depth++;
	det_rec_acquire_end(&op, 0);
	t->depth--;
}

void det_strict_acquire(struct det_thread *t)
{
	struct det_shm_header *h = det_hdr;
	struct det_slot *me = t->slot;
	if (t->holding)
		return;
	atomic_store(&me->strict_wants, 1);
	atomic_fetch_add(&h->strict_wanting, 1);
	uint32_t last_owner = 0;
	uint64_t last_progress = 0, stuck_ms = 0;
	for (;;) {
		uint32_t free = 0;
		if (atomic_compare_exchange_strong(&h->strict_owner, &free, t->num + 1))
			break;
		if (free == t->num + 1)
			break;
		uint32_t w = atomic_load(&me->strict_wake);
		if (atomic_load(&h->strict_owner) == t->num + 1)
			break;
		struct timespec ts = {0, 10 * 1000 * 1000};
		futex(&me->strict_wake, FUTEX_WAIT, w, &ts);
		/* the watchdog: is the holder making events? */
		uint32_t owner = atomic_load(&h->strict_owner);
		if (!owner || owner == t->num + 1)
			continue;
		uint64_t progress = atomic_load(&det_shm_slot(h, owner - 1)->head);
		if (owner != last_owner || progress != last_progress) {
			last_owner = owner;
			last_progress = progress;
			stuck_ms = 0;
			continue;
		}
		stuck_ms += 10;
		if (h->strict_watchdog_ms && stuck_ms >= h->strict_watchdog_ms) {
			preempt(t, owner - 1);
			if (t->holding)
				break;
		}
	}
	atomic_fetch_sub(&h->strict_wanting, 1);
	atomic_store(&me->strict_wants, 0);
	t->holding = 1;
	t->quantum = (int32_t)h->strict_quantum;
}

void det_strict_start(struct det_thread *t)
{
	t->rng = (det_hdr->chaos_seed ^ (0x9E3779B97F4A7C15ull * (t->num + 1))) | 1;
	if (det_hdr->chaos_seed)
		atomic_store(&t->slot->prio, (int32_t)(next_rand(t) % 1000000));
	det_strict_acquire(t);
}

/* After each event of the holder: offer the token when the quantum is used
 * up (or, under chaos, when the generator says so). */
void det_strict_after_event(struct det_thread *t)
{
	if (!t->holding) {
		/* an event after the thread gave the token up for good (a key
		 * destructor after its exit): take it back */
		det_strict_acquire(t);
		return;
	}
	struct det_shm_header *h = det_hdr;
	uint32_t next;
	if (h->chaos_seed) {
		/* a change point passed: the running thread drops below all */
		uint32_t k = atomic_load(&h->pct_next);
		if (k < h->pct_changes && (atomic_load(&h->clock) & DET_SEQ_MASK) >= h->pct_change[k] &&
		    atomic_compare_exchange_strong(&h->pct_next, &k, k + 1))
			atomic_store(&t->slot->prio, -(int32_t)(k + 1));
		if (!atomic_load(&h->strict_wanting) || !pick(t, &next) ||
		    atomic_load(&det_shm_slot(h, next)->prio) <= atomic_load(&t->slot->prio))
			return;
	} else {
		if (--t->quantum > 0 || !atomic_load(&h->strict_wanting) || !pick(t, &next))
			return;
	}
	t->holding = 0;
	hand_to(next);
	det_strict_acquire(t);
}

/* Parallel chaos: a seeded pause at an event perturbs the interleaving. */
void det_chaos_delay(struct det_thread *t)
{
	uint64_t r = next_rand(t);
	if (r % 4)
		return;
	uint64_t us = (r >> 8) % (det_hdr->chaos_delay_us + 1);
	if (us < 5) {
		det_sys(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
		return;
	}
	struct timespec ts = {0, (long)us * 1000};
	det_sys(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
}
