/*
 * replayer/strict.c - strict mode while recording: one thread runs at a
 * time, and the run token changes hands only at events, so that everything
 * between two events (data races included) happens in the recorded order.
 * Also chaos scheduling: the same decisions, drawn from a seed.
 *
 * Rules of this file:
 *  - A thread runs program code only while it holds the token. Who may have
 *    it next ("wants") is changed only by the holder, at an event: a new
 *    thread is runnable from its creation, a waiter from the signal that
 *    wakes it, a thread that yields stays runnable. So the scheduler's
 *    choices depend on the events alone, and a seed repeats them.
 *  - Nothing ordered by det blocks in the kernel: a thread that finds a
 *    lock taken, a condition to wait for, a barrier not full or a thread to
 *    join not yet exited stops being runnable until the holder releases it
 *    (an unlock, a signal, the last arrival, the exit), and is retried then;
 *    condition variables and barriers are emulated, with POSIX's licence
 *    for spurious wake-ups. Where a thread stops, a BLOCK event records the
 *    point, so replay runs the code before it in the same turn. Calls into
 *    the outside world (reads, sleeps...) wait in the kernel without the
 *    token; when they return depends on timing, and is recorded.
 *  - A holder that makes no event for watchdog_ms while others wait loses
 *    the token: the preemption is recorded (PREEMPT) as a point replay
 *    cannot make exact. It is the only decision taken from the wall clock;
 *    det-cc's ticks (DET_POINT_TICK) give such code points decided by
 *    counting instead.
 *  - Whether the holder goes on or hands the token over is decided in one
 *    function, decide(), at every scheduling point (det_strict_after_event):
 *    plain strict mode runs a quantum of events round robin; chaos is PCT.
 *  - Chaos is PCT as published (Burckhardt et al., ASPLOS 2010): every
 *    thread gets a random priority above d-1 (from the seed and its
 *    number); at every step the highest-priority runnable thread runs;
 *    when the step count passes change point i (of d-1, drawn by detrec
 *    from the seed, uniformly over the expected number of steps k) the
 *    thread running drops to priority d-1-i. Steps are events, or, for a
 *    program built with det-cc --sched-points=memory, its memory points
 *    (preload/atomics.c brings each one here, DET_POINT_MEMORY): one
 *    implementation for both.
 *  - No starvation, decided from events only, without touching priorities:
 *    a holder that polls (a sched_yield, a failed trylock, an empty poll,
 *    EAGAIN: see det_strict_point_of) defers: runnable threads that do not
 *    defer go first, until the others have made 2, 4, 8... events (doubling
 *    with each poll in a row); one that has run strict_spin_steps steps
 *    while others waited (since it last ran with no one waiting, or last
 *    deferred so) defers for as many. So whoever a poller waits
 *    for runs, and the poller competes again by its priority after.
 */
#include "strict.h"
#include "logical.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>

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


/* Bump a thread's wake word, and make the system call only if it sleeps
 * on it: a thread spinning for the token (spin_for_token) sees the bump, or
 * the owner, by itself. (The bump and the sleeper's flag are both
 * sequentially consistent: either the waker sees the flag, or the sleeper's
 * futex sees the bumped word and does not sleep.) */
static void wake(struct det_slot *s)
{
	atomic_fetch_add(&s->strict_wake, 1);
	if (atomic_load(&s->strict_sleeping))
		futex(&s->strict_wake, FUTEX_WAKE, 1, NULL);
}

/* Sleep on the thread's wake word unless it has moved from w since read
 * (ts: at most that long; NULL: until woken). */
static void sleep_on_wake(struct det_slot *me, uint32_t w, const struct timespec *ts)
{
	atomic_store(&me->strict_sleeping, 1);
	futex(&me->strict_wake, FUTEX_WAIT, w, ts);
	atomic_store_explicit(&me->strict_sleeping, 0, memory_order_relaxed);
}

/* Make a thread runnable (it competes for the token). Done by the holder. */
void det_strict_runnable(uint32_t num)
{
	if (det_logical) {
		det_logical_runnable(&det_tls, num);
		return;
	}
	struct det_slot *s = det_shm_slot(det_hdr, num);
	uint32_t no = 0;
	if (atomic_compare_exchange_strong(&s->strict_wants, &no, 1))
		atomic_fetch_add(&det_hdr->strict_wanting, 1);
}

static void not_runnable(struct det_slot *s)
{
	uint32_t yes = 1;
	if (atomic_compare_exchange_strong(&s->strict_wants, &yes, 0))
		atomic_fetch_sub(&det_hdr->strict_wanting, 1);
}

/* The thread's process has ended (reaped by its parent: preload/wait.c):
 * it never takes or passes on the token again. A child killed before its
 * first event was still runnable, and the token handed to it came back
 * only by the watchdog, to be handed to it again (for ever). */
static int proc_gone(struct det_slot *s)
{
	return atomic_load(&det_shm_proc(det_hdr, s->proc)->state) == DET_PS_GONE;
}

static void hand_to(uint32_t num)
{
	atomic_store(&det_hdr->strict_owner, num + 1);
	wake(det_shm_slot(det_hdr, num));
}

/* Under chaos: until when the thread defers to others (0: it does not);
 * of two that defer, the one that stops first goes first. */
static uint64_t deferred_until(struct det_slot *s)
{
	uint64_t until = atomic_load(&s->strict_defer);
	return until > (atomic_load(&det_hdr->clock) & DET_SEQ_MASK) ? until : 0;
}

/* The runnable thread to run next, other than t: round robin after t, or
 * under chaos the highest priority one among those that do not defer (or
 * that stop deferring first), ties to the lower number. self: the thread
 * that passes the token on. */
/* Another thread that wants the turn and whose process still lives (a
 * reaped process's threads are marked not runnable here, once). */
static int may_take_turn(uint32_t self, uint32_t i, struct det_slot *s)
{
	if (i == self || !atomic_load(&s->strict_wants))
		return 0;
	if (proc_gone(s)) {
		not_runnable(s);
		return 0;
	}
	return 1;
}

static int pick(uint32_t self, uint32_t *out)
{
	struct det_shm_header *h = det_hdr;
	uint32_t n = det_threads_so_far();
	if (!atomic_load(&h->strict_wanting))
		return 0;
	if (h->chaos_seed) {
		int found = 0;
		int32_t best = INT32_MIN;
		uint64_t best_until = 0;
		for (uint32_t i = 0; i < n; i++) {
			struct det_slot *s = det_shm_slot(h, i);
			if (!may_take_turn(self, i, s))
				continue;
			int32_t p = atomic_load(&s->prio);
			uint64_t until = deferred_until(s);
			if (!found || until < best_until || (until == best_until && p > best)) {
				best = p;
				best_until = until;
				*out = i;
				found = 1;
			}
		}
		return found;
	}
	for (uint32_t d = 1; d <= n; d++) {
		uint32_t i = (self + d) % n;
		if (!may_take_turn(self, i, det_shm_slot(h, i)))
			continue;
		*out = i;
		return 1;
	}
	return 0;
}

/* Under chaos: the thread polls for others; they go first until they
 * have made `events` more events (or none of them can run). */
static void defer(struct det_slot *s, uint64_t events)
{
	atomic_store(&s->strict_defer, (atomic_load(&det_hdr->clock) & DET_SEQ_MASK) + events);
}


/* Preempt a holder that has made no event for too long (wall clock: the
 * one decision that is not taken from events). */
static void preempt(struct det_thread *t, uint32_t victim)
{
	uint32_t expected = victim + 1;
	if (!atomic_compare_exchange_strong(&det_hdr->strict_owner, &expected, t->num + 1))
		return;
	atomic_fetch_add(&det_hdr->preemptions, 1);
	if (proc_gone(det_shm_slot(det_hdr, victim)))
		not_runnable(det_shm_slot(det_hdr, victim));
	if (det_hdr->chaos_seed) /* a spinner: it waits for the others */
		defer(det_shm_slot(det_hdr, victim), 1u << 16);
	t->holding = 1;
	struct det_op op = {.t = t, .kind = DET_EV_PREEMPT, .aux = victim};
	op.obj = det_shm_slot(det_hdr, victim)->obj;
	t->depth++;
	det_ops.rec_acquire_end(&op, 0);
	t->depth--;
}

/* Set once this process has begun to end (see det_strict_process_ending). */
static _Atomic int process_ending;

/* The process is ending: its threads waiting for the token never run again.
 * They would only race with exit's last steps, which no replay can repeat;
 * a thread handed the token by mistake passes it on to other processes. */
static __attribute__((noreturn)) void freeze(struct det_thread *t)
{
	not_runnable(t->slot);
	if (atomic_load(&det_hdr->strict_owner) == t->num + 1) {
		t->holding = 1;
		det_strict_release(t);
	}
	_Atomic uint32_t never = 0;
	for (;;)
		futex(&never, FUTEX_WAIT_PRIVATE, 0, NULL);
}

void det_strict_process_ending(void)
{
	atomic_store(&process_ending, 1);
}

int det_strict_ending(void)
{
	return atomic_load(&process_ending);
}

/* Pauses a thread waiting for the token spins at most before it sleeps (27
 * us on these machines): about the time the holder takes for a quantum of
 * events; 256 fell short of it, and most hand-offs still woke a sleeper. */
#define TOKEN_SPIN 1024
/* Every this many pauses the spinner looks at the holder's published
 * events: a holder that made none since the last look (~1.7 us; running
 * sync-dense code it makes one every few hundred ns) is not on a CPU
 * (preempted by other load: the spinner would keep the CPU it needs) or
 * runs a long stretch of plain code (spinning would gain nothing). */
#define TOKEN_SPIN_LOOK 64

/* Threads of this process spinning for the token now; at most one fewer
 * than the CPUs it may run on, so that the holder always has one. */
static _Atomic int token_spinners;

static int spare_cpus(void)
{
	static int n;
	if (!n) {
		uint64_t mask[16] = {0};
		long len = det_sys(SYS_sched_getaffinity, 0, sizeof(mask), (long)mask, 0, 0, 0);
		int c = 0;
		for (long i = 0; len > 0 && i < len / 8; i++)
			c += __builtin_popcountll(mask[i]);
		n = c > 1 ? c - 1 : -1;
	}
	return n;
}

/* The token holder's events published so far (its ring head); ~0: no holder. */
static uint64_t holder_progress(uint32_t owner)
{
	if (!owner || owner > det_hdr->max_threads)
		return ~0ull;
	return atomic_load_explicit(&det_shm_slot(det_hdr, owner - 1)->head, memory_order_relaxed);
}

/* Spin a while for the token before sleeping: a hand-off to a sleeping
 * thread costs a wake-up (tens of microseconds on a VM), to a spinning one a
 * cache line. Only while a CPU is spare (only the holder runs program code),
 * and only while the holder makes events (TOKEN_SPIN_LOOK). */
static int spin_for_token(struct det_thread *t)
{
	int spare = spare_cpus();
	if (spare <= 0)
		return 0;
	if (atomic_fetch_add(&token_spinners, 1) >= spare) {
		atomic_fetch_sub(&token_spinners, 1);
		return 0;
	}
	int got = 0;
	uint32_t seen_owner = atomic_load(&det_hdr->strict_owner);
	uint64_t seen = holder_progress(seen_owner);
	for (int n = 1; n <= TOKEN_SPIN && !got; n++) {
		__builtin_ia32_pause();
		uint32_t owner = atomic_load_explicit(&det_hdr->strict_owner, memory_order_acquire);
		got = owner == t->num + 1 || (owner == 0 && atomic_load(&process_ending) == 0 &&
					      atomic_compare_exchange_strong(&det_hdr->strict_owner, &owner, t->num + 1));
		if (!got && n % TOKEN_SPIN_LOOK == 0) {
			uint64_t now = holder_progress(owner);
			if (owner == seen_owner && now == seen)
				break;
			seen_owner = owner;
			seen = now;
		}
	}
	atomic_fetch_sub(&token_spinners, 1);
	return got;
}

/* Wait until the token is ours (the thread is runnable, or about to be). */
static void wait_token(struct det_thread *t)
{
	if (det_logical) {
		det_logical_wait_turn(t);
		return;
	}
	struct det_shm_header *h = det_hdr;
	struct det_slot *me = t->slot;
	uint32_t last_owner = 0;
	uint64_t last_progress = 0, since = 0;
	for (;;) {
		if (atomic_load(&process_ending))
			freeze(t);
		uint32_t free = 0;
		if (atomic_compare_exchange_strong(&h->strict_owner, &free, t->num + 1))
			break;
		if (free == t->num + 1)
			break;
		uint32_t w = atomic_load(&me->strict_wake);
		if (atomic_load(&h->strict_owner) == t->num + 1 || spin_for_token(t))
			break;
		struct timespec ts = {0, 10 * 1000 * 1000};
		sleep_on_wake(me, w, &ts);
		/* the watchdog: is the holder making events? */
		uint32_t owner = atomic_load(&h->strict_owner);
		if (!owner || owner == t->num + 1)
			continue;
		uint64_t progress = atomic_load(&det_shm_slot(h, owner - 1)->head);
		uint64_t now = det_now_slow();
		if (owner != last_owner || progress != last_progress) {
			last_owner = owner;
			last_progress = progress;
			since = now;
			continue;
		}
		if (h->strict_watchdog_ms && now - since >= (uint64_t)h->strict_watchdog_ms * 1000000) {
			preempt(t, owner - 1);
			if (t->holding)
				break;
		}
	}
	not_runnable(me);
	t->holding = 1;
	t->quantum = (int32_t)h->strict_quantum;
	/* (run_steps go on: two threads that loop and outrank the rest, handing
	 * the token to each other, would otherwise starve the rest for ever) */
}

void det_strict_acquire(struct det_thread *t)
{
	/* past its exit event (a key destructor, the unwinder's own calls as a
	 * cancellation ends it) a thread runs without a turn: its joiner may
	 * hold one while it waits */
	if (t->holding || t->exited)
		return;
	if (det_logical) {
		det_logical_acquire(t);
		return;
	}
	det_strict_runnable(t->num);
	wait_token(t);
}

/* Give the token up: to the next runnable thread, or free it. */
void det_strict_release(struct det_thread *t)
{
	if (det_logical) {
		det_logical_release(t);
		return;
	}
	if (!t->holding)
		return;
	t->holding = 0;
	uint32_t next;
	if (pick(t->num, &next)) {
		hand_to(next);
		return;
	}
	atomic_store(&det_hdr->strict_owner, 0);
	/* a thread back from the outside world may have become runnable
	 * after we looked */
	if (pick(t->num, &next)) {
		uint32_t free = 0;
		if (atomic_compare_exchange_strong(&det_hdr->strict_owner, &free, next + 1))
			wake(det_shm_slot(det_hdr, next));
	}
}

/* Hand the turn to `next` and wait for it to come back: t stays runnable. */
static void yield_to(struct det_thread *t, uint32_t next)
{
	det_strict_runnable(t->num); /* before the other can decide anything */
	t->holding = 0;
	/* if the program ends meanwhile, the code after this event never ran:
	 * the trace says so (threads.end_state "waiting"), for replay to stop
	 * the thread here too */
	atomic_store(&t->slot->strict_yielded, 1);
	hand_to(next);
	wait_token(t);
	atomic_store(&t->slot->strict_yielded, 0);
}

/* A thread's initial PCT priority: from the seed and its number only, so
 * a thread created at any time gets a random one; above d-1, the change
 * points' priorities. */
static int32_t priority(uint32_t num)
{
	uint64_t x = det_hdr->chaos_seed ^ (0xD1B54A32D192ED03ull * (num + 1));
	x ^= x >> 31;
	x *= 0x9E3779B97F4A7C15ull;
	x ^= x >> 29;
	return (int32_t)(det_hdr->pct_changes + 1 + x % (1u << 30));
}

void det_strict_start(struct det_thread *t)
{
	if (det_logical) {
		det_logical_start(t);
		return;
	}
	t->rng = (det_hdr->chaos_seed ^ (0x9E3779B97F4A7C15ull * (t->num + 1))) | 1;
	if (det_hdr->chaos_seed && t->num == 0)
		atomic_store(&t->slot->prio, priority(0));
	det_strict_acquire(t);
}

/* Is the event just done a sign that its thread polls for others? Then
 * running it on can only starve them. (Not sleeps: a sleeper gives its turn
 * up while it sleeps.) */
enum det_point det_strict_point_of(uint16_t kind, int64_t result)
{
	switch (kind) {
	case DET_EV_SCHED_YIELD:
		return DET_POINT_YIELD;
	case DET_EV_MUTEX_TRYLOCK:
	case DET_EV_MUTEX_TIMEDLOCK:
	case DET_EV_MUTEX_CLOCKLOCK:
	case DET_EV_RWLOCK_TRYRDLOCK:
	case DET_EV_RWLOCK_TIMEDRDLOCK:
	case DET_EV_RWLOCK_CLOCKRDLOCK:
	case DET_EV_RWLOCK_TRYWRLOCK:
	case DET_EV_RWLOCK_TIMEDWRLOCK:
	case DET_EV_RWLOCK_CLOCKWRLOCK:
	case DET_EV_SEM_TRYWAIT:
	case DET_EV_SEM_TIMEDWAIT:
	case DET_EV_SEM_CLOCKWAIT:
	case DET_EV_SPIN_TRYLOCK:
	case DET_EV_FILE_LOCK:
	case DET_EV_THREAD_TRYJOIN:
	case DET_EV_THREAD_TIMEDJOIN:
		return result ? DET_POINT_SPIN : DET_POINT_EVENT; /* it failed (busy, timed out) */
	case DET_EV_COND_WAKE:
		return result == ETIMEDOUT ? DET_POINT_SPIN : DET_POINT_EVENT;
	case DET_EV_FUTEX_WAIT:
		return result ? DET_POINT_SPIN : DET_POINT_EVENT; /* the word had changed, or timed out */
	case DET_EV_POLL:
	case DET_EV_SELECT:
	case DET_EV_EPOLL_WAIT:
		return result == 0 ? DET_POINT_SPIN : DET_POINT_EVENT; /* nothing ready */
	case DET_EV_READ:
	case DET_EV_PIPE_READ:
	case DET_EV_RECV:
	case DET_EV_SOCK_RECV:
	case DET_EV_ACCEPT:
	case DET_EV_WRITE:
		return result == -EAGAIN ? DET_POINT_SPIN : DET_POINT_EVENT;
	default:
		return DET_POINT_EVENT;
	}
}

/* Chaos: change point i that PCT's step count (`now`) has passed since
 * the last look drops the running thread's priority to d-1-i (as in the
 * paper: by the point's index, not by when it fired). */
static void pct_change_points(struct det_thread *t, uint64_t now)
{
	struct det_shm_header *h = det_hdr;
	for (uint32_t i = 0; i < h->pct_changes; i++) {
		uint32_t fired = atomic_load(&h->pct_fired);
		if (fired & (1u << i) || now < h->pct_change[i])
			continue;
		if (atomic_compare_exchange_strong(&h->pct_fired, &fired, fired | (1u << i)))
			atomic_store(&t->slot->prio, (int32_t)(h->pct_changes - i));
	}
}

/* PCT's steps so far: events, or (DET_F_CC_POINTS) det-cc's memory points,
 * this one counted. */
static uint64_t pct_steps(enum det_point why)
{
	struct det_shm_header *h = det_hdr;
	if (!(h->flags & DET_F_CC_POINTS))
		return atomic_load(&h->clock) & DET_SEQ_MASK;
	if (why == DET_POINT_MEMORY)
		return atomic_fetch_add(&h->cc_points, 1) + 1;
	return atomic_load(&h->cc_points);
}

/*
 * The scheduler's one decision: the holder t is at a scheduling point (why);
 * returns 1, with *next, when it hands the token to *next now.
 *  - plain strict: a quantum of events, then round robin; sched_yield and
 *    the end of a det-cc tick quantum at once;
 *  - chaos (PCT): the highest-priority runnable thread runs, except that a
 *    thread that polls, or has run strict_spin_steps steps while
 *    others wait, defers to the others for a while (no starvation, decided
 *    from events alone; priorities stay PCT's). PCT's steps are events, or
 *    det-cc memory points for a program built with them (pct_steps).
 * A det-cc tick counts as a step; a second tick with no event since the
 * first says the thread spins without events: a poll. A memory point is a
 * step of PCT's only (the accesses between events are no sign of polling).
 */
static int decide(struct det_thread *t, enum det_point why, uint32_t *next)
{
	struct det_shm_header *h = det_hdr;
	if (!h->chaos_seed) {
		if (why == DET_POINT_YIELD || why == DET_POINT_TICK)
			return pick(t->num, next);
		return --t->quantum <= 0 && pick(t->num, next);
	}
	if (why == DET_POINT_TICK)
		why = t->idx == t->tick_idx ? DET_POINT_SPIN : DET_POINT_EVENT;
	pct_change_points(t, pct_steps(why));
	if (why == DET_POINT_YIELD || why == DET_POINT_SPIN) {
		if (t->polls < 16)
			t->polls++;
		defer(t->slot, 1ull << t->polls);
	} else if (why == DET_POINT_EVENT) {
		t->polls = 0;
		if (!atomic_load(&h->strict_wanting)) {
			t->run_steps = 0;
		} else if (h->strict_spin_steps && ++t->run_steps >= h->strict_spin_steps) {
			defer(t->slot, t->run_steps); /* the others get as many */
			t->run_steps = 0;
		}
	}
	if (!pick(t->num, next))
		return 0;
	uint64_t mine = deferred_until(t->slot), theirs = deferred_until(det_shm_slot(h, *next));
	if (mine != theirs)
		return mine > theirs;
	return atomic_load(&det_shm_slot(h, *next)->prio) > atomic_load(&t->slot->prio);
}

/* After each event of the holder: hand the token on if decide() says so;
 * t stays runnable and waits to get it back. */
void det_strict_after_event(struct det_thread *t, enum det_point why)
{
	if (det_logical) {
		det_logical_after_event(t);
		return;
	}
	if (!t->holding) {
		/* past its exit event (a key destructor): such a thread runs
		 * without a turn, since its joiner may hold one while it waits */
		if (!t->exited)
			det_strict_acquire(t);
		return;
	}
	uint32_t next;
	if (decide(t, why, &next))
		yield_to(t, next);
}

/* det-cc: the end of a tick quantum (a thread spinning in instrumented code
 * is switched here, not by the watchdog) or, under PCT over memory points,
 * a memory point: decide() as at an event; a switch is recorded by log()
 * (a CC_YIELD, where replay switches again). */
void det_strict_cc_yield(struct det_thread *t, int why, void (*log)(struct det_thread *t, int why))
{
	uint32_t next;
	if (!t->holding)
		return;
	int switched = decide(t, why == DET_CC_TICK ? DET_POINT_TICK : DET_POINT_MEMORY, &next);
	if (switched)
		log(t, why);
	if (why == DET_CC_TICK)
		t->tick_idx = t->idx; /* (after its own CC_YIELD: no event came between) */
	if (switched)
		yield_to(t, next);
}

/* Logical time: times a waiter may find its lock taken again before its
 * waker lets it go next (only a starving waiter: with 2, bounded_buffer's
 * logical schedule changed and its bug showed). */
#define LT_RETRIES 16

/* A contended lock (or a thread to join): stop here, not runnable, until
 * whoever holds obj releases it; the caller then tries again. Meanwhile the
 * thread is marked blocked in it, for detrec's deadlock report. */
void det_strict_wait_for(struct det_op *op, const void *obj)
{
	det_strict_wait_until(op, obj, NULL, 0);
}

/* det_strict_wait_for with a deadline (NULL: none): returns 1 once it has passed. */
int det_strict_wait_until(struct det_op *op, const void *obj, const struct timespec *abstime, clockid_t clock)
{
	struct det_slot *s = op->t->slot;
	det_ops.rec_block_event(op->t, op->kind, op->obj, op->ra);
	/* logical time: a waiter back too many times goes next (logical.c) */
	atomic_store(&s->lt_retry, op->waits++ >= LT_RETRIES);
	return det_strict_wait(op, obj, abstime, clock);
}

void det_strict_wait_for_cancelable(struct det_op *op, const void *obj)
{
	struct det_slot *s = op->t->slot;
	real.pthread_testcancel(); /* a request already made acts as the wait begins */
	atomic_store(&s->strict_cancel_point, 1);
	det_strict_wait_for(op, obj);
	atomic_store(&s->strict_cancel_point, 0);
	real.pthread_testcancel(); /* (acts if the wake-up was a pthread_cancel) */
}

/* A semaphore's wait (sem_wait, sem_timedwait, sem_clockwait): as
 * det_strict_wait_for_cancelable, until abstime (NULL: none). Returns
 * ETIMEDOUT once it passed, EINTR when a handler ran meanwhile (a
 * semaphore's wait fails so, SA_RESTART or not), else 0: try again. */
int det_strict_sem_wait(struct det_op *op, const void *obj, const struct timespec *abstime, clockid_t clock)
{
	struct det_slot *s = op->t->slot;
	real.pthread_testcancel();
	atomic_store(&s->strict_cancel_point, 1);
	det_ops.rec_block_event(op->t, op->kind, op->obj, op->ra);
	atomic_store(&s->lt_retry, op->waits++ >= LT_RETRIES);
	uint64_t events = op->t->idx; /* (a handler's signal is an event) */
	int timedout = det_strict_wait(op, obj, abstime, clock);
	atomic_store(&s->strict_cancel_point, 0);
	real.pthread_testcancel();
	return timedout ? ETIMEDOUT : op->t->idx != events ? EINTR : 0;
}

/* Wake thread i if it still waits on key (not woken by another signal, nor
 * timed out, meanwhile); it is runnable again. Returns 1 if it woke. */
static int wake_waiter(uint32_t i, uint64_t key)
{
	struct det_slot *s = det_shm_slot(det_hdr, i);
	if (!atomic_compare_exchange_strong(&s->strict_cond, &key, 0))
		return 0;
	det_strict_runnable(i);
	wake(s);
	return 1;
}

/* pthread_cancel(th) was sent, by the holder: a thread waiting at a
 * cancellation point is woken (POSIX allows the spurious wake-up), and acts
 * on the request where it wakes, as glibc's own wait would. A thread blocked
 * elsewhere (a mutex, a barrier) acts at its next cancellation point. */
void det_strict_canceled(uint64_t th)
{
	struct det_shm_header *h = det_hdr;
	uint32_t n = det_threads_so_far();
	for (uint32_t i = 0; i < n; i++) {
		struct det_slot *s = det_shm_slot(h, i);
		if (s->pthread != th || atomic_load(&s->state) == DET_TS_FREE || !atomic_load(&s->strict_cancel_point))
			continue;
		uint64_t key = atomic_load(&s->strict_cond);
		if (key)
			wake_waiter(i, key);
	}
}

/* A thread just created is runnable at once, with its priority (not when
 * it gets going, which depends on timing). */
void det_strict_created(uint32_t child)
{
	if (det_hdr->chaos_seed)
		atomic_store(&det_shm_slot(det_hdr, child)->prio, priority(child));
	det_strict_runnable(child);
}

/* A new thread waits for an event ring before its first event
 * (recorder/rings.c det_rec_claim_ring: every ring belongs to a live thread): it
 * is not runnable meanwhile, and a token handed to it goes on, for the
 * threads whose exits free rings to run (before, the token stayed with it
 * until the watchdog took it, a second each time). Called again while it
 * waits: a holder may have handed it the token as it stopped being
 * runnable. Its first event then comes where it got a ring, in the order
 * recorded like any other. */
void det_strict_not_ready(uint32_t num)
{
	if (det_logical)
		return;
	not_runnable(det_shm_slot(det_hdr, num));
	uint32_t mine = num + 1, next;
	if (atomic_load(&det_hdr->strict_owner) != mine)
		return;
	uint32_t to = pick(num, &next) ? next + 1 : 0;
	if (atomic_compare_exchange_strong(&det_hdr->strict_owner, &mine, to) && to)
		wake(det_shm_slot(det_hdr, next));
}

/*
 * Waiting on a condition variable, a barrier, or a lock (op: the call that
 * waits, obj: what it waits on): the thread stops being runnable until a
 * signal picks it, gives the token on, and sleeps. With a deadline it also
 * wakes by itself, in real time, when no signal came. Returns 1 if it
 * timed out. Meanwhile it is marked blocked in op, as a thread blocked in
 * the kernel is (det_block): detrec's deadlock report names the cycle from
 * it, and its watch for a run that cannot go on sees the thread waiting.
 */
int det_strict_wait(struct det_op *op, const void *obj, const struct timespec *abstime, clockid_t clock)
{
	struct det_shm_header *h = det_hdr;
	struct det_thread *t = op->t;
	struct det_slot *me = t->slot;
	if (!t->holding)
		det_strict_acquire(t);
	me->blocked_obj = op->obj;
	me->blocked_addr = det_obj_key(obj);
	me->blocked_ra = op->ra;
	atomic_store_explicit(&me->blocked_kind, op->kind, memory_order_release);
	me->strict_ticket = atomic_fetch_add(&h->strict_tickets, 1);
	atomic_store(&me->strict_timedout, 0);
	atomic_store(&me->strict_cond, det_obj_shared_key(obj));
	det_strict_release(t);
	for (;;) {
		uint32_t w = atomic_load(&me->strict_wake);
		if (!atomic_load(&me->strict_cond))
			break; /* signalled: made runnable by the signaller */
		if (det_unlikely(t->nsigs)) {
			/* a signal came (it woke this wait, preload/signals.c):
			 * leave it as a spurious wake-up, to run its handler */
			uint64_t mine = det_obj_shared_key(obj);
			if (atomic_compare_exchange_strong(&me->strict_cond, &mine, 0))
				det_strict_runnable(t->num);
			break;
		}
		if (abstime) {
			struct timespec now;
			det_sys(SYS_clock_gettime, clock, (long)&now, 0, 0, 0, 0);
			int64_t left = (abstime->tv_sec - now.tv_sec) * 1000000000ll + (abstime->tv_nsec - now.tv_nsec);
			if (left <= 0) {
				uint64_t mine = det_obj_shared_key(obj);
				if (atomic_compare_exchange_strong(&me->strict_cond, &mine, 0)) {
					atomic_store(&me->strict_timedout, 1);
					det_strict_runnable(t->num);
				}
				break;
			}
			struct timespec ts = {left / 1000000000, left % 1000000000};
			sleep_on_wake(me, w, &ts);
		} else {
			sleep_on_wake(me, w, NULL);
		}
	}
	wait_token(t);
	atomic_store_explicit(&me->blocked_kind, 0, memory_order_relaxed); /* (a handler runs unblocked) */
	if (det_unlikely(t->nsigs))
		det_signals_in_wait(t);
	return (int)atomic_load(&me->strict_timedout);
}

/* Wake the thread(s) waiting on obj that waited first (all of them for a
 * broadcast or a barrier). Called by the holder. Returns how many woke. */
int det_strict_signal(const void *obj, int all)
{
	struct det_shm_header *h = det_hdr;
	uint64_t key = det_obj_shared_key(obj);
	uint32_t n = det_threads_so_far();
	int woke = 0;
	for (;;) {
		int found = 0;
		uint32_t who = 0;
		uint64_t best = UINT64_MAX;
		for (uint32_t i = 0; i < n; i++) {
			struct det_slot *s = det_shm_slot(h, i);
			if (atomic_load(&s->strict_cond) == key && s->strict_ticket < best) {
				best = s->strict_ticket;
				who = i;
				found = 1;
			}
		}
		if (!found)
			return woke;
		woke += wake_waiter(who, key);
		if (!all)
			return woke;
	}
}

/* A lock (mutex, rwlock, spinlock, semaphore, FILE) was released: its
 * waiters try again, and the holder's quantum ends with this event. Else a
 * holder that polls under the lock can offer the token at the same point of
 * its loop each time, always holding the lock, and starve the waiter. */
void det_strict_unlocked(struct det_thread *t, const void *obj)
{
	if (det_strict_signal(obj, 1) && t->holding)
		t->quantum = 1;
}

/* Barriers, emulated: how many of a round have arrived. */
static struct {
	_Atomic uint64_t addr;
	uint32_t count, arrived;
} barriers[256];

void det_strict_barrier_init(const void *b, unsigned count)
{
	for (int i = 0; i < 256; i++) {
		uint64_t empty = 0, a = (uint64_t)(uintptr_t)b;
		if (atomic_load(&barriers[i].addr) == a ||
		    atomic_compare_exchange_strong(&barriers[i].addr, &empty, a)) {
			barriers[i].count = count;
			barriers[i].arrived = 0;
			return;
		}
	}
	det_fatal("more than 256 barriers in strict mode");
}

/* Returns PTHREAD_BARRIER_SERIAL_THREAD for the last arrival, else 0. */
int det_strict_barrier_wait(struct det_op *arrive, const void *b)
{
	struct det_thread *t = arrive->t;
	det_strict_acquire(t); /* logical time: the arrival's turn is over */
	for (int i = 0; i < 256; i++) {
		if (atomic_load(&barriers[i].addr) != (uint64_t)(uintptr_t)b)
			continue;
		if (++barriers[i].arrived < barriers[i].count) {
			det_strict_wait(arrive, b, NULL, 0);
			return 0;
		}
		barriers[i].arrived = 0;
		det_strict_signal(b, 1);
		return PTHREAD_BARRIER_SERIAL_THREAD;
	}
	det_fatal("a barrier det did not see initialised (strict mode emulates barriers)");
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

/* Strict mode and chaos: reached from preload/ and the other modes through det_ops. */
static const struct det_mode_ops strict_ops = {
	.strict_start = det_strict_start,
	.strict_acquire = det_strict_acquire,
	.strict_release = det_strict_release,
	.strict_process_ending = det_strict_process_ending,
	.strict_point_of = det_strict_point_of,
	.strict_after_event = det_strict_after_event,
	.strict_created = det_strict_created,
	.strict_not_ready = det_strict_not_ready,
	.strict_wait = det_strict_wait,
	.strict_wait_for = det_strict_wait_for,
	.strict_wait_for_cancelable = det_strict_wait_for_cancelable,
	.strict_sem_wait = det_strict_sem_wait,
	.strict_wait_until = det_strict_wait_until,
	.strict_canceled = det_strict_canceled,
	.strict_signal = det_strict_signal,
	.strict_unlocked = det_strict_unlocked,
	.strict_barrier_init = det_strict_barrier_init,
	.strict_barrier_wait = det_strict_barrier_wait,
	.strict_cc_yield = det_strict_cc_yield,
	.chaos_delay = det_chaos_delay,
};
DET_MODE_REGISTER(strict_ops);
