/*
 * preload/atomics.c - the runtime side of det-cc (llvm/DetPass.cpp):
 * atomics as events, and the slow path of logical-clock ticks and memory
 * points.
 *
 * Rules of this file:
 *  - The entry points (det_cc_*) are called from instrumented program code
 *    and are the only exported symbols here; their ABI is the pass's.
 *    det_atomic_begin/end are the same for det's own callers (the trapped
 *    atomics of preload/trapped_atomics.c).
 *  - An atomic is an event on its memory location, and its place in the
 *    order must be the place the location saw: recording takes the
 *    sequence number and performs the instruction under a lock striped by
 *    address (parallel modes; strict and logical modes hold the turn), the
 *    region's one lock for memory the program's processes share.
 *    Replay makes the thread wait for its turn, lets the instruction run,
 *    and checks the value it read or wrote.
 *  - Ticks and points are counted inline by the program, in a per-thread
 *    budget the runtime refills: count = what was used before the last
 *    refill + (refill - what is left). Only a strict-mode switch at one of
 *    them is an event (CC_YIELD, with that count, where replay switches
 *    again); everything else here leaves no trace.
 *  - Natively (no libdet.so) none of this runs: the program refills its
 *    budgets itself (the pass's det_cc_slow_local).
 */
#include "runtime.h"

#include <limits.h>

#define EXPORT __attribute__((visibility("default")))

#define CC_REFILL DET_CC_REFILL
#define ATOMIC_NEST 4 /* atomics in progress in one thread that det records at once */
#define CC_STRICT_TICKS 20000 /* strict: ticks a thread runs before it offers the token */
#define CC_LOGICAL_TICKS 2048 /* logical time: ticks between clock publications */
#define CC_LOGICAL_POINTS 256 /* logical time: memory points per turn */

struct cc_thread {
	int64_t *budget;    /* the program's det_cc_tls of this thread: [tick, point] */
	int64_t set[2];     /* what the runtime last stored there */
	uint64_t used[2];   /* counted before that */
	/* The atomics in progress, innermost last: nested when a signal's
	 * handler that det runs at an atomic's begin has atomics of its own
	 * (replay runs it inside det_replay_begin, after the outer op is set). */
	struct det_op ops[ATOMIC_NEST];
	int nested;         /* begun and not ended */
	uint32_t passed;    /* bit i: the one at level i was passed through (det busy, or too deep) */
	uint64_t site;      /* the tick or point that called the runtime */
	_Atomic uint32_t *stripe; /* record, parallel: the stripe lock held */
};

static __thread struct cc_thread cc __attribute__((tls_model("initial-exec")));

/* Record, threads in parallel: atomics on one address take their sequence
 * numbers in the order they happen. These locks are each process's own
 * copy: an atomic in memory the processes share takes the region's lock. */
#define STRIPES 1024
static struct {
	_Atomic uint32_t lock;
	uint8_t pad[60];
} stripes[STRIPES];

static void stripe_lock(const void *addr)
{
	uint32_t i = (uint32_t)(det_obj_hash((uint64_t)(uintptr_t)addr >> 3) % STRIPES);
	_Atomic uint32_t *lock = det_addr_shared(addr) ? &det_hdr->shared_atomic_lock : &stripes[i].lock;
	uint32_t zero = 0;
	while (!atomic_compare_exchange_weak_explicit(lock, &zero, 1, memory_order_acquire, memory_order_relaxed)) {
		zero = 0;
		__builtin_ia32_pause();
	}
	cc.stripe = lock;
}

static void stripe_unlock(void)
{
	if (cc.stripe) {
		atomic_store_explicit(cc.stripe, 0, memory_order_release);
		cc.stripe = NULL;
	}
}

static uint64_t counted(int which)
{
	if (!cc.budget)
		return 0;
	return cc.used[which] + (uint64_t)(cc.set[which] - cc.budget[which]);
}

uint64_t det_cc_count(void)
{
	return counted(DET_CC_TICK) + counted(DET_CC_POINT);
}

static void refill(int which, int64_t n)
{
	if (!cc.budget)
		return;
	cc.used[which] = counted(which);
	cc.budget[which] = n;
	cc.set[which] = n;
}

/* ------------------------------------------------------------------ */
/* atomics */

/* CC_YIELD's aux for a switch before a patched atomic (0 and 1 are det-cc's
 * DET_CC_TICK and DET_CC_POINT). */
#define YIELD_BEFORE_ATOMIC 2

static void log_yield_before(struct det_thread *t, int why)
{
	det_ops.rec_sched_event(t, DET_EV_CC_YIELD, 0, (uint32_t)why, 0, 0);
}

/* Replay: the switch recorded before this patched atomic, if any. */
static void replay_yield_before(struct det_thread *t)
{
	const struct det_sched *e = t->idx < t->sched_count ? det_sched_at(t, t->idx) : NULL;
	if (!e || e->kind != DET_EV_CC_YIELD || e->aux != YIELD_BEFORE_ATOMIC)
		return;
	struct det_op op = {.t = t, .kind = DET_EV_CC_YIELD, .aux = YIELD_BEFORE_ATOMIC};
	op.rec = det_ops.replay_begin(&op, NULL, DET_OBJ_NONE);
	det_ops.replay_end(&op, e->result); /* strict: waits for its next turn */
}

const struct det_op *det_atomic_begin(void *addr, uint32_t kind, uint32_t aux, uint64_t ra)
{
	int level = cc.nested;
	if (level >= 32)
		return NULL; /* (ends beyond this are not counted either) */
	cc.nested++;
	struct det_thread *t = level < ATOMIC_NEST ? det_enter() : NULL;
	if (!t) {
		cc.passed |= 1u << level; /* (an atomic inside another one's begin and end, say in a handler) */
		return NULL;
	}
	cc.passed &= ~(1u << level);
	struct det_op *op = &cc.ops[level];
	*op = (struct det_op){.aux = aux};
	enum det_objkind ok = addr ? DET_OBJ_ATOMIC : DET_OBJ_NONE;
	if (det_replaying()) {
		op->t = t;
		op->kind = (uint16_t)kind;
		op->ra = ra;
		if ((aux & DET_ATOMIC_TRAPPED) && (det_hdr->flags & DET_F_STRICT))
			replay_yield_before(t);
		op->rec = det_ops.replay_begin(op, addr, ok);
		return op;
	}
	/* PCT: a patched compare-exchange's or read-modify-write's start is a
	 * step where the turn may pass (its end is not: see trapped_atomics.c
	 * end_event), so that a thread can be stopped between its plain loads
	 * and its compare-exchange or fetch_add, as a work-stealing deque's
	 * thieves must be. Not a fence's or an xchg's: those end critical
	 * sections (nginx's fence before its plain-store release, a seq_cst
	 * store of 0), and a switch there leaves a spinlock held while the
	 * others spin on plain loads until the watchdog (cas_pool's PCT
	 * replays stalled 3 of 4). The switch is a CC_YIELD event, where
	 * replay switches again. */
	if (det_strict && !det_logical && det_hdr->chaos_seed && (aux & DET_ATOMIC_TRAPPED) && t->holding &&
	    (kind == DET_EV_ATOMIC_CMPXCHG || (kind == DET_EV_ATOMIC_RMW && det_atomic_rmw_op(aux) != 0)))
		det_ops.strict_cc_yield(t, YIELD_BEFORE_ATOMIC, log_yield_before);
	det_acquire_begin(op, t, (uint16_t)kind, addr, ok, ra);
	if (det_strict) {
		if (!t->holding && !t->exited)
			det_ops.strict_acquire(t);
	} else {
		stripe_lock(addr);
	}
	return op;
}

EXPORT void det_cc_atomic_begin(void *addr, uint32_t kind, uint32_t aux)
{
	det_atomic_begin(addr, kind, aux, (uint64_t)(uintptr_t)__builtin_return_address(0));
}

EXPORT void det_cc_atomic_end(uint64_t value, uint32_t aux)
{
	det_atomic_end(value, aux);
}

void det_atomic_end(uint64_t value, uint32_t aux)
{
	if (cc.nested <= 0)
		return;
	int level = --cc.nested;
	if (level >= 32 || (cc.passed & (1u << level)))
		return;
	struct det_op *op = &cc.ops[level];
	if (det_replaying()) {
		det_ops.replay_end(op, (int64_t)value);
	} else {
		op->aux = aux; /* with the outcome of a compare-exchange */
		if (cc.stripe) {
			/* logged under the stripe, the boundary (a chaos delay)
			 * after it */
			_Atomic uint32_t *s = cc.stripe;
			int chaos = det_chaos;
			det_chaos = 0;
			det_ops.rec_acquire_end(op, (int64_t)value);
			det_chaos = chaos;
			cc.stripe = s;
			stripe_unlock();
			if (chaos)
				det_ops.chaos_delay(op->t);
		} else {
			det_ops.rec_acquire_end(op, (int64_t)value);
		}
	}
	det_leave(op->t);
}

/* ------------------------------------------------------------------ */
/* ticks and memory points */

static void log_yield(struct det_thread *t, int why)
{
	det_ops.rec_sched_event(t, DET_EV_CC_YIELD, 0, (uint32_t)why, (int64_t)counted(why), cc.site);
}

/* Replay: the budget that runs out exactly where the thread's next
 * recorded switch is (counts only grow, one at a time, so the point where
 * a count first reaches the recorded one is that one). */
void det_cc_replay_next(struct det_thread *t)
{
	if (!cc.budget)
		return; /* its first tick or point comes to det_cc_slow anyway */
	const struct det_sched *e = t->idx < t->sched_count ? det_sched_at(t, t->idx) : NULL;
	for (int w = 0; w < 2; w++) {
		int64_t n = CC_REFILL;
		if (e && e->kind == DET_EV_CC_YIELD && e->aux == (uint32_t)w) {
			uint64_t now = counted(w);
			if ((uint64_t)e->result < now)
				det_ops.diverge(t, DET_DIV_KIND, DET_EV_CC_YIELD, NULL, 0,
					    "a det-cc switch point the thread has already passed");
			n = (int64_t)((uint64_t)e->result - now);
			if (n == 0) /* (only right after an earlier switch at a count of 0) */
				n = 1;
		}
		refill(w, n);
	}
}

static void replay_slow(struct det_thread *t, int which)
{
	const struct det_sched *e = t->idx < t->sched_count ? det_sched_at(t, t->idx) : NULL;
	if (e && e->kind == DET_EV_CC_YIELD && e->aux == (uint32_t)which &&
	    (uint64_t)e->result == counted(which)) {
		struct det_op op = {.t = t, .kind = DET_EV_CC_YIELD, .aux = (uint32_t)which};
		op.rec = det_ops.replay_begin(&op, NULL, DET_OBJ_NONE);
		det_ops.replay_end(&op, e->result); /* strict: waits for its next turn */
	}
	det_cc_replay_next(t);
}

void det_cc_turn_over(void)
{
	if (cc.budget && det_logical)
		refill(DET_CC_POINT, 1);
}

/* The program's budget ran out: which = DET_CC_TICK or DET_CC_POINT. */
EXPORT void det_cc_slow(int64_t *budget, int32_t which, void *site)
{
	cc.site = (uint64_t)(uintptr_t)site;
	if (which != DET_CC_TICK && which != DET_CC_POINT)
		return;
	int first = !cc.budget;
	if (first) {
		cc.budget = budget;
		cc.set[0] = cc.set[1] = 0; /* the program's budgets start at 0 */
	} else if (cc.budget != budget) {
		/* another copy of det_cc_tls (a det-cc library the executable
		 * does not export it to): its counts are this thread's too */
		budget[which] = CC_REFILL;
		return;
	}
	struct det_thread *t = det_enter();
	if (!t) {
		if (budget[which] <= 0)
			refill(which, CC_REFILL);
		return;
	}
	if (det_replaying()) {
		if (det_hdr->flags & DET_F_STRICT)
			replay_slow(t, which);
		else
			refill(which, CC_REFILL);
	} else if (det_logical) {
		if (which == DET_CC_TICK) {
			det_ops.logical_tick(t);
			refill(DET_CC_TICK, CC_LOGICAL_TICKS);
		} else {
			det_ops.logical_point(t); /* the access that follows is in a turn */
			refill(DET_CC_POINT, CC_LOGICAL_POINTS);
		}
	} else if (det_strict) {
		int pct = which == DET_CC_POINT && (det_hdr->flags & DET_F_CC_POINTS) && det_hdr->chaos_seed;
		/* (a thread's first tick only starts its quantum) */
		if ((which == DET_CC_TICK && !first) || pct)
			det_ops.strict_cc_yield(t, which, log_yield);
		if (which == DET_CC_TICK)
			refill(DET_CC_TICK, det_hdr->cc_quantum ? det_hdr->cc_quantum : CC_STRICT_TICKS);
		else /* PCT counts every point: a change point may fall on any */
			refill(DET_CC_POINT, pct ? 1 : CC_REFILL);
	} else {
		refill(which, CC_REFILL);
	}
	det_leave(t);
}
