/*
 * replayer/enforce.c - replay: make every thread wait for its recorded turn.
 *
 * Rules of this file:
 *  - Each recorded event names up to two prerequisite events of other
 *    threads (struct det_sched.dep_*): ordered replay gives every event its
 *    predecessor in the global order, relaxed replay its predecessors on the
 *    objects it touches. One mechanism serves both; detreplay chooses the
 *    edges (replayer/schedule.c).
 *  - A thread whose next event has a prerequisite not done yet waits in its
 *    backend (replayer/turns.h: futex turnstiles, or the kernel module),
 *    which spins for a while before it sleeps; a finished event wakes only
 *    the threads listed in its wake[] entries. The backend is chosen by the
 *    shared header's `turns` field, through the table below.
 *  - The first divergence wins: it is written to the shared header for
 *    detreplay to report, and the program stops with DET_EXIT_STOPPED.
 */
#include "enforce.h"
#include "snapshot.h"
#include "strict.h"
#include "turns.h"
#include "det/gdb.h"

#include <errno.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The enforcement backends, by enum det_turns_backend. */
static const struct det_turns *const backends[] = {
#define DET_TURNS(name, number, description) [number] = &det_turns_##name,
#include "det/turns.def"
#undef DET_TURNS
};

static const struct det_turns *turns = &det_turns_futex;

static void choose_turns(void)
{
	uint32_t b = det_hdr->turns;
	if (b >= sizeof(backends) / sizeof(backends[0]) || !backends[b])
		det_fatal("replay asks for enforcement backend %u, which this libdet.so does not have", b);
	turns = backends[b];
}

/* Read and written by det's gdb extension; see include/det/gdb.h. */
__attribute__((visibility("default"))) struct det_gdb_control det_gdb_control = {.stop_seq = UINT64_MAX,
										      .snap_at = UINT64_MAX};

/* gdb breaks here: every other thread waits at its turnstile (or runs code
 * that has no more events), the calling thread is about to do its event. */
__attribute__((visibility("default"), noinline)) void det_gdb_stop(void)
{
	__asm__ volatile("" ::: "memory");
}

/* gdb breaks here once libdet.so is set up in a replay, before the first
 * event: the moment to write det_gdb_control (again, after a restart). */
__attribute__((visibility("default"), noinline)) void det_gdb_ready(void)
{
	__asm__ volatile("" ::: "memory");
}

/* gdb breaks here when a thread of the replay starts (num: its det number),
 * to name the thread after it before gdb reports anything about it. */
__attribute__((visibility("default"), noinline)) void det_gdb_thread(uint32_t num)
{
	__asm__ volatile("" ::"r"(num) : "memory");
}

/* gdb breaks here once the recording's last event is done (every thread has
 * done its events, or waits past them), once per run. */
__attribute__((visibility("default"), noinline)) void det_gdb_end(void)
{
	__asm__ volatile("" ::: "memory");
}

static _Atomic int end_reported;

static void check_end(void)
{
	if (!det_gdb_control.attached || atomic_load(&end_reported))
		return;
	uint64_t done = 0;
	for (uint32_t i = 0; i < det_hdr->threads_recorded; i++)
		done += atomic_load(&det_shm_slot(det_hdr, i)->done);
	if (done >= det_hdr->events_recorded && !atomic_exchange(&end_reported, 1))
		det_gdb_end();
}

/* gdb breaks here when a replay diverges, before the program stops. */
__attribute__((visibility("default"), noinline)) void det_gdb_diverged(void)
{
	__asm__ volatile("" ::: "memory");
}

static long futex(_Atomic uint32_t *addr, int op, uint32_t val)
{
	return det_sys(SYS_futex, (long)addr, op, val, 0, 0, 0);
}

/* Has the feeder written t's entry idx? The slot's line is read only when
 * t's cached count says no (the feeder writes that line). */
int det_sched_known(struct det_thread *t, uint64_t idx)
{
	uint64_t f = atomic_load_explicit(&t->slot->sched_filled, memory_order_acquire);
	if ((uint32_t)(f >> DET_FILLED_BITS) != atomic_load(&det_hdr->sched_gen))
		return 0;
	t->sched_known = f & DET_FILLED_MASK;
	return t->sched_known > idx;
}

/* The feeder has not written the thread's entry idx yet (a window is
 * written a little ahead of its thread; this thread caught up with it). */
void det_sched_wait(struct det_thread *t, uint64_t idx)
{
	/* it waits for its turn as much as at a turnstile (settle_others: gdb
	 * and a snapshot need not wait for it) */
	uint32_t was = atomic_load_explicit(&t->slot->at_turnstile, memory_order_relaxed);
	for (unsigned round = 0;; round++) {
		if (det_sched_known(t, idx)) {
			if (round)
				atomic_store_explicit(&t->slot->at_turnstile, was, memory_order_relaxed);
			return;
		}
		if (!round)
			atomic_store_explicit(&t->slot->at_turnstile, 1, memory_order_relaxed);
		if (atomic_load(&det_hdr->feed_failed))
			det_fatal("%s", det_hdr->error);
		if (round % 64 == 0) {
			atomic_fetch_add(&det_hdr->feed_kick, 1);
			futex(&det_hdr->feed_kick, FUTEX_WAKE, 1);
		}
		det_snap_point(t);
		/* 20 us at first, longer the longer the feeder has nothing: a
		 * live replica's threads wait here while the program is idle
		 * (and a standby's for good), at up to 1.28 ms a look */
		struct timespec ts = {0, 20000L << (round / 64 < 6 ? round / 64 : 6)};
		det_sys(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
	}
}

/* A replay region may be run more than once (gdb restarts the program to go
 * back in time): T0 clears everything a previous run changed. */
void det_replay_reset(void)
{
	struct det_shm_header *h = det_hdr;
	choose_turns();
	turns->reset();
	for (uint32_t i = 0; i < h->threads_recorded; i++) {
		struct det_slot *s = det_shm_slot(h, i);
		atomic_store(&s->done, 0);
		atomic_store(&s->state, DET_TS_FREE);
		atomic_store(&s->blocked_kind, 0);
		s->blocked_obj = 0;
		s->blocked_addr = 0;
		s->blocked_ra = 0;
		atomic_store(&s->at_turnstile, 0);
	}
	for (uint32_t i = 0; i < h->max_procs; i++) {
		struct det_proc *p = det_shm_proc(h, i);
		atomic_store(&p->pid, 0);
		atomic_store(&p->state, DET_PS_FREE);
		atomic_store(&p->exec_thread, 0);
		atomic_store(&p->spawn_claim, 0);
		atomic_store(&p->status_known, 0);
	}
	memset((char *)h + h->pipes_off, 0, (size_t)h->pipes_cap * sizeof(uint64_t));
	memset(det_shm_out_lock(h, 0), 0, (size_t)h->out_locks_cap * sizeof(struct det_out_lock));
	memset(det_shm_objects(h), 0, (size_t)h->objects_cap * sizeof(struct det_objent));
	memset((char *)h + h->objrev_off, 0, ((size_t)h->objrev_count + 1) * sizeof(uint64_t));
	atomic_store(&h->diverged, 0);
	atomic_store(&h->failed, 0);
	atomic_store(&end_reported, 0);
	memset(&h->div, 0, sizeof(h->div));
	h->error[0] = 0;
	if (atomic_fetch_add(&h->replay_runs, 1)) {
		/* a run again (gdb went back): the schedule is fed from its start,
		 * once every thread's progress above reads 0 again (the feeder
		 * judges windows and wake-ups by it) */
		atomic_fetch_add(&h->sched_gen, 1);
		atomic_fetch_add(&h->feed_kick, 1);
		futex(&h->feed_kick, FUTEX_WAKE, 1);
	}
}

void det_replay_attach(struct det_thread *t)
{
	struct det_slot *s = t->slot;
	if (t->num >= det_hdr->threads_recorded)
		det_diverge(t, DET_DIV_THREAD, DET_EV_THREAD_START, NULL, 0,
			    "a thread that the recording does not have");
	t->sched = (const struct det_sched *)((char *)det_hdr + s->sched_off);
	t->sched_count = s->sched_count;
	t->idx = 0;
	det_replay_resume(t);
	if (det_unlikely(det_gdb_control.attached))
		det_gdb_thread(t->num);
	if (t->num == 0) {
		det_obj_bind((void *)pthread_self(), s->obj, DET_OBJ_THREAD);
		det_gdb_ready();
	}
}

/* A thread starts replaying at t->idx: here, or in an exec'd image. */
void det_replay_resume(struct det_thread *t)
{
	struct det_slot *s = t->slot;
	uint32_t w = s->sched_window;
	if (!w || (w & (w - 1)))
		det_fatal("T%u's schedule window of %u entries is not a power of two: mixed det builds?", t->num, w);
	t->sched_mask = w - 1;
	t->sched_known = 0;
	/* a window shorter than the thread's events is refilled as it goes:
	 * it says so every quarter window */
	t->feed_kick_at = w < s->sched_count ? (t->idx / (w / 4) + 1) * (w / 4) : UINT64_MAX;
	choose_turns();
	turns->thread_attach(t);
}

/* Sleep for ever: the thread has done everything the recording saw it do. */
static __attribute__((noreturn)) void park(struct det_thread *t)
{
	_Atomic uint32_t never = 0;
	struct det_slot *s = t->slot;
	atomic_store(&s->state, DET_TS_PARKED);
	atomic_store(&s->at_turnstile, 1);
	check_end();
	uint64_t seen = UINT64_MAX;
	unsigned still = 0; /* rounds in which no thread of the program did an event */
	for (;;) {
		uint64_t done = 0;
		for (uint32_t i = 0; i < det_hdr->threads_recorded; i++)
			done += atomic_load(&det_shm_slot(det_hdr, i)->done);
		still = done == seen ? still + 1 : 0;
		seen = done;
		det_replay_thread_done(t, still);
		det_snap_point(t);
		/* the object it wanted may get its id from another thread later:
		 * keep the report (blocked_obj) current */
		struct timespec ts = {0, 20 * 1000 * 1000};
		det_sys(SYS_futex, (long)&never, FUTEX_WAIT_PRIVATE, 0, (long)&ts, 0, 0);
		if (!s->blocked_obj && s->blocked_addr)
			s->blocked_obj = det_obj_find((void *)(uintptr_t)s->blocked_addr);
	}
}

static int turn_due(const struct det_sched *e)
{
	for (int i = 0; i < 2; i++)
		if (e->dep_thread[i] && turns->done_count(e->dep_thread[i] - 1) <= e->dep_idx[i])
			return 0;
	return 1;
}

/* Wait until every prerequisite of e, t's next event, is done. A run of
 * the thread's own events has none: it goes on without reading any other
 * thread's line. */
static void wait_turn(struct det_thread *t, const struct det_sched *e)
{
	if (det_likely(!e->dep_thread[0] && !e->dep_thread[1]) || turn_due(e))
		return;
	atomic_store_explicit(&t->slot->at_turnstile, 1, memory_order_relaxed);
	turns->wait(t, e);
	atomic_store_explicit(&t->slot->at_turnstile, 0, memory_order_relaxed);
}

void det_replay_vanish(struct det_op *op)
{
	det_replay_end(op, op->rec->result);
	if (det_replay_cancel_next(op->t)) /* not killed: canceled in the call */
		det_replay_cancel(op->t);
	park(op->t);
}

/* Before gdb stops the program, let the other threads reach their next
 * turnstile, so that `info threads` shows each one waiting for its turn.
 * Bounded: a thread may compute for long, or have no events left. */
static void settle_others(struct det_thread *t)
{
	for (int round = 0; round < 2000; round++) {
		int moving = 0;
		for (uint32_t i = 0; i < det_hdr->threads_recorded; i++) {
			struct det_slot *s = det_shm_slot(det_hdr, i);
			uint32_t st = atomic_load(&s->state);
			if (i == t->num || st != DET_TS_RUNNING)
				continue;
			if (!atomic_load(&s->at_turnstile) && atomic_load(&s->done) < s->sched_count)
				moving = 1;
		}
		if (!moving)
			return;
		struct timespec ts = {0, 50000};
		det_sys(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
	}
}

static void gdb_check(struct det_thread *t, const struct det_sched *e)
{
	struct det_gdb_control *c = &det_gdb_control;
	uint32_t reason = 0;
	/* A fence keeps no place in the order, under gdb neither (schedule.c):
	 * it may come before events numbered below it, so no snapshot is taken
	 * there, and gdb stops at one only when it is the event asked for. */
	int ordered = e->kind != DET_EV_ATOMIC_FENCE;
	if (det_unlikely(ordered && e->seq >= c->snap_at)) {
		/* (in a snapshot that gdb resumed, this returns with gdb's goal set
		 * anew: the conditions below are read after it) */
		settle_others(t);
		det_snap_take(t, e->seq);
	}
	if (ordered ? e->seq >= c->stop_seq : e->seq == c->stop_seq)
		reason = DET_GDB_SEQ;
	else if (c->stop_thread && c->stop_thread == t->num + 1)
		reason = DET_GDB_THREAD;
	else if ((c->stop_kind && c->stop_kind == e->kind && (!c->stop_obj || c->stop_obj == e->obj)) ||
		 (!c->stop_kind && c->stop_obj && c->stop_obj == e->obj))
		reason = DET_GDB_KIND;
	if (!reason)
		return;
	settle_others(t);
	c->seq = e->seq;
	c->idx = t->idx;
	c->thread = t->num;
	c->kind = e->kind;
	c->obj = e->obj;
	c->reason = reason;
	c->stops++;
	det_gdb_stop();
}

int det_replay_cancel_next(struct det_thread *t)
{
	return t->idx < t->sched_count && det_sched_at(t, t->idx)->kind == DET_EV_THREAD_CANCELED;
}

/* The request of a cancellation that acted where det does not see
 * (DET_CANCEL_*): whichever of the canceler and the target comes second
 * sends it. */
static void cancel_at_large(struct det_slot *s, uint32_t bit, pthread_t th)
{
	uint32_t had = atomic_fetch_or(&s->cancel_at_large, bit);
	uint32_t both = DET_CANCEL_REQUESTED | DET_CANCEL_DUE;
	if (((had | bit) & both) != both || (had & DET_CANCEL_SENT) ||
	    (atomic_fetch_or(&s->cancel_at_large, DET_CANCEL_SENT) & DET_CANCEL_SENT))
		return;
	real.pthread_cancel(th);
}

void det_replay_cancel_request(uint32_t obj, pthread_t th)
{
	for (uint32_t i = 0; i < det_hdr->threads_recorded && i < det_hdr->max_threads; i++) {
		struct det_slot *s = det_shm_slot(det_hdr, i);
		if (s->obj == obj && atomic_load(&s->state) != DET_TS_FREE) {
			cancel_at_large(s, DET_CANCEL_REQUESTED, th);
			return;
		}
	}
}

/* After each event: is the thread's next one a cancellation det did not see?
 * The thread is inside det, where an asynchronous request must not act: it
 * makes its cancellation deferred before it says so, and asynchronous again
 * as it leaves det (det_leave: det_signals_due), where a request sent
 * meanwhile acts. */
static void cancel_due(struct det_thread *t, const struct det_sched *n)
{
	if (n->kind != DET_EV_THREAD_CANCELED || n->aux != DET_AUX_THREAD_CANCELED_ELSEWHERE)
		return;
	int type = PTHREAD_CANCEL_DEFERRED;
	pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &type);
	if (type == PTHREAD_CANCEL_ASYNCHRONOUS) {
		t->cancel_async = 1;
		t->sig_due = 1; /* (det_leave's slow path) */
	}
	cancel_at_large(t->slot, DET_CANCEL_DUE, pthread_self());
}

/* The thread's THREAD_CANCELED, in its turn. */
static void take_canceled(struct det_thread *t)
{
	const struct det_sched *e = det_sched_at(t, t->idx);
	struct det_op op = {.t = t, .kind = e->kind, .rec = e};
	wait_turn(t, e);
	if (det_unlikely(det_gdb_control.attached))
		gdb_check(t, e);
	det_replay_end(&op, e->result);
}

/* The thread is unwinding from a real cancellation (cancel_at_large): its
 * THREAD_CANCELED is done here, as its exit event comes. */
int det_replay_canceled(struct det_thread *t)
{
	if (!det_replay_cancel_next(t))
		return 0;
	take_canceled(t);
	return 1;
}

/*
 * The recording's thread acted on a cancellation here. Replay does not send
 * that request (pthread_cancel is an event only; but see cancel_at_large):
 * where it acts in a real run depends on timing. The thread takes the turn
 * of its THREAD_CANCELED and ends as cancellation ends a thread:
 * pthread_exit(PTHREAD_CANCELED) unwinds the same frames and runs the same
 * cleanup handlers, outside det, whose events follow in the trace, and its
 * joiner gets PTHREAD_CANCELED.
 */
void det_replay_cancel(struct det_thread *t)
{
	take_canceled(t);
	det_load_unwinder(); /* (its own calls are not events: preload/once.c) */
	det_leave(t);
	real.pthread_exit(PTHREAD_CANCELED);
	__builtin_unreachable();
}

void det_diverge(struct det_thread *t, uint32_t reason, uint16_t got_kind, const void *got_addr, uint64_t ra,
		 const char *what)
{
	uint32_t expected = 0;
	if (!atomic_compare_exchange_strong(&det_hdr->diverged, &expected, 1))
		park(t); /* another thread reports first; the program is stopping */
	struct det_divergence *d = &det_hdr->div;
	d->thread = t->num;
	d->idx = t->idx;
	d->reason = reason;
	d->got_kind = got_kind;
	d->got_addr = (uint64_t)(uintptr_t)got_addr;
	d->got_obj = det_obj_find(got_addr);
	d->ra = ra;
	if (t->sched && t->idx < t->sched_count) {
		const struct det_sched *e = det_sched_at(t, t->idx);
		d->seq = e->seq;
		d->want_kind = e->kind;
		d->want_obj = e->obj;
	} else {
		d->seq = UINT64_MAX;
	}
	strncpy(d->what, what, sizeof(d->what) - 1);
	det_gdb_diverged();
	/* detreplay (or det's gdb commands) report it, with source lines. */
	det_fatal("replay diverged at T%u's event %lu: %s", t->num, (unsigned long)t->idx, what);
}

/* The thread's next event is not this call's: a cancellation that acted in
 * this call before its event ends the thread; anything else diverges. */
static __attribute__((noreturn)) void other_kind(struct det_thread *t, const struct det_sched *e, const struct det_op *op, const void *addr)
{
	if (e->kind == DET_EV_THREAD_CANCELED && e->aux != DET_AUX_THREAD_CANCELED_TESTCANCEL)
		det_replay_cancel(t);
	det_diverge(t, DET_DIV_KIND, op->kind, addr, op->ra, "another kind of event");
}

/* A call a polling loop makes as often as its timing makes it: sched_yield,
 * and a sleep that slept its time (while (!flag) usleep(1000), the flag
 * written without a lock). Not one a signal came in or right after: the
 * handler's place is anchored to it (a loop waiting for its handler's
 * flag). */
static int polled(struct det_thread *t, uint64_t idx)
{
	const struct det_sched *e = det_sched_at(t, idx);
	if (e->kind == DET_EV_SCHED_YIELD)
		return 1;
	if (e->kind != DET_EV_SLEEP || e->result != 0)
		return 0;
	/* (a signal after it is written with it: an entry the feeder has not
	 * written yet is not one, and waiting for it could wait for the whole
	 * trace, see det_replay_end) */
	const struct det_sched *n = idx + 1 < t->sched_count ? det_sched_peek(t, idx + 1) : NULL;
	return !n || n->kind != DET_EV_SIGNAL;
}

/* Strict-mode scheduling events: the thread gave up its turn here (BLOCK),
 * or the watchdog took it (PREEMPT). Replay takes their turns where the
 * thread next enters det, which is where the recording made them. So too
 * for the yields and sleeps of a parallel recording that a polling loop no
 * longer makes (det_replay_polled). */
static int skipped(struct det_thread *t, uint16_t kind)
{
	const struct det_sched *e = det_sched_at(t, t->idx);
	if (e->kind == DET_EV_PREEMPT || e->kind == DET_EV_BLOCK)
		return 1;
	/* (strict: a yield is a scheduling point the replay makes as recorded;
	 * a sleep's count differs only where the replay is not exact already,
	 * a thread running outside det's turns, and its turn is taken here) */
	return e->kind != kind && (!(det_hdr->flags & DET_F_STRICT) || e->kind == DET_EV_SLEEP) && polled(t, t->idx);
}

static void skip_preemptions(struct det_thread *t, uint16_t kind)
{
	while (t->idx < t->sched_count && skipped(t, kind)) {
		const struct det_sched *e = det_sched_at(t, t->idx);
		struct det_op op = {.t = t, .kind = e->kind};
		wait_turn(t, e);
		op.rec = e;
		det_replay_end(&op, e->result);
	}
}

/* A recorded signal comes before this event: deliver it first. (One that
 * came during a strict-mode wait has that wait's BLOCK events on both sides,
 * and its handler's events after it.) */
static void signals_first(struct det_thread *t, uint16_t kind)
{
	skip_preemptions(t, kind);
	while (det_unlikely(t->idx < t->sched_count && det_sched_at(t, t->idx)->kind == DET_EV_SIGNAL &&
			    kind != DET_EV_SIGNAL)) {
		det_replay_signals_now(t);
		skip_preemptions(t, kind);
	}
}

const struct det_sched *det_replay_begin(struct det_op *op, const void *addr, enum det_objkind objkind)
{
	struct det_thread *t = op->t;
	signals_first(t, op->kind);
	if (t->idx >= t->sched_count) {
		/* Past its last recorded event: the recording ended here (the
		 * program exited, crashed or was stopped). Park, saying what the
		 * thread wanted next; detreplay decides whether that is the end
		 * of the replay or a divergence. */
		struct det_slot *s = t->slot;
		s->blocked_obj = det_obj_find(addr);
		s->blocked_addr = det_obj_key(addr); /* another thread may bind it later */
		s->blocked_ra = op->ra;
		atomic_store(&s->blocked_kind, op->kind);
		park(t);
	}
	const struct det_sched *e = det_sched_at(t, t->idx);
	wait_turn(t, e);
	if (e->kind != op->kind)
		other_kind(t, e, op, addr);
	if (op->id == UINT32_MAX)
		op->obj = e->obj; /* the event makes its object (a new thread) */
	else if (op->id ? op->id != e->obj : !det_obj_match(addr, e->obj, objkind))
		det_diverge(t, DET_DIV_OBJECT, op->kind, addr, op->ra, "the same kind of event on another object");
	if (op->aux_addr && !det_obj_match(op->aux_addr, e->aux, (enum det_objkind)op->auxkind))
		det_diverge(t, DET_DIV_OBJECT, op->kind, op->aux_addr, op->ra,
			    "a condition wait with another mutex");
	op->obj = e->obj;
	op->aux = e->aux;
	op->seq = e->seq;
	if (det_unlikely(det_debug))
		det_msg("replay T%u[%lu] seq %lu kind %u obj %u at %p ra %#lx", t->num, (unsigned long)t->idx,
			(unsigned long)e->seq, e->kind, e->obj, addr, (unsigned long)op->ra);
	if (det_unlikely(det_gdb_control.attached))
		gdb_check(t, e);
	return e;
}

/*
 * A parallel recording's sched_yield or sleep in a polling loop: the loop
 * made as many as its timing made it. Replay consumes a recorded one when
 * the thread's next event is one (which paces the loop like the recording),
 * skips the ones left when the thread moves on (skip_preemptions), and lets
 * one the recording did not make pass without an event. A sleep the
 * recording did not make passes only where no signal is due (a handler's
 * place is anchored to the thread's events). Strict replays are lenient
 * with sleeps only (see skipped).
 */
int det_replay_polled(struct det_thread *t, uint16_t kind)
{
	if (kind == DET_EV_SCHED_YIELD) {
		if (det_hdr->flags & DET_F_STRICT)
			return 1; /* a scheduling point: always an event */
		return t->idx < t->sched_count && det_sched_at(t, t->idx)->kind == DET_EV_SCHED_YIELD;
	}
	/* a sleep: past the turns the thread gave up (a strict recording's
	 * BLOCK around each sleep), taken at its next event */
	for (uint64_t i = t->idx; i < t->sched_count; i++) {
		const struct det_sched *e = i == t->idx ? det_sched_at(t, i) : det_sched_peek(t, i);
		if (!e)
			return 1; /* (not written yet: take the turns it has) */
		if (e->kind == DET_EV_PREEMPT || e->kind == DET_EV_BLOCK)
			continue;
		/* (a cancellation that acted in a sleep is recorded in its place) */
		return e->kind == DET_EV_SLEEP || e->kind == DET_EV_SIGNAL || e->kind == DET_EV_THREAD_CANCELED;
	}
	/* Past its end. Strict: parks there, as recorded (the thread that ran
	 * last runs on alone). Otherwise the loop goes on sleeping for real
	 * until what it polls for comes (a child that polls for its tracer's
	 * write, then exits: its last event was a sleep the replay made before
	 * that write); its next other call parks it. */
	return (det_hdr->flags & DET_F_STRICT) != 0;
}

/* A strict recording's BLOCK that is the thread's next event, taken alone
 * (a process stopping itself: the events after it are others' until it is
 * continued, and then its own next BLOCK, which it must not wait for now). */
void det_replay_take_block(struct det_thread *t)
{
	if (t->idx >= t->sched_count || det_sched_at(t, t->idx)->kind != DET_EV_BLOCK)
		return;
	const struct det_sched *e = det_sched_at(t, t->idx);
	struct det_op op = {.t = t, .kind = e->kind};
	wait_turn(t, e);
	op.rec = e;
	det_replay_end(&op, e->result);
}

uint16_t det_replay_next_kind(struct det_thread *t, uint16_t kind)
{
	signals_first(t, kind);
	return t->idx < t->sched_count ? det_sched_at(t, t->idx)->kind : 0;
}

int det_replay_free_running(void)
{
	return !(det_hdr->flags & DET_F_STRICT) && !det_gdb_control.attached;
}

const struct det_sched *det_replay_pending(struct det_thread *t, uint16_t kind, uint32_t aux)
{
	/* (strict too: what a read takes ahead goes to det's stash, and the
	 * program sees it only in turn; a writer blocked on the pipe's slots
	 * can be what the read's turn waits for there as well) */
	if (t->idx >= t->sched_count || det_gdb_control.attached)
		return NULL;
	const struct det_sched *e = det_sched_at(t, t->idx);
	return e->kind == kind && e->aux == aux && !turn_due(e) ? e : NULL;
}

int det_replay_wait_due(struct det_thread *t, const struct det_sched *e, long ns)
{
	if (turn_due(e))
		return 1;
	if (!ns)
		return 0;
	if (turns->wait_for) {
		atomic_store_explicit(&t->slot->at_turnstile, 1, memory_order_relaxed);
		turns->wait_for(t, e, ns);
		atomic_store_explicit(&t->slot->at_turnstile, 0, memory_order_relaxed);
	} else {
		struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
		det_sys(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
	}
	return turn_due(e);
}

/* The thread's own count, written at each of its events: the kmod
 * backend's counts lag for events nobody waits for (marked done at the
 * thread's next wait), and a thread that waits for another's progress
 * (preload/process.c) would wait for ever for a thread that has none left
 * (a relaxed replay with --backend=kmod stalled at a thread's exit). */
uint64_t det_replay_done_count(uint32_t num)
{
	return atomic_load_explicit(&det_shm_slot(det_hdr, num)->done, memory_order_acquire);
}

uint64_t det_replay_next_seq(uint32_t num)
{
	struct det_slot *s = det_shm_slot(det_hdr, num);
	uint64_t done = det_replay_done_count(num);
	uint64_t f = atomic_load_explicit(&s->sched_filled, memory_order_acquire);
	if (done >= atomic_load(&s->sched_count) || (uint32_t)(f >> DET_FILLED_BITS) != atomic_load(&det_hdr->sched_gen) ||
	    done >= (f & DET_FILLED_MASK))
		return UINT64_MAX;
	const struct det_sched *w = (const struct det_sched *)((const char *)det_hdr + s->sched_off);
	return w[done & (s->sched_window - 1)].seq;
}

const struct det_sched *det_replay_input(struct det_op *op)
{
	struct det_thread *t = op->t;
	signals_first(t, op->kind);
	if (t->idx >= t->sched_count) {
		struct det_slot *s = t->slot;
		s->blocked_obj = 0;
		s->blocked_ra = op->ra;
		atomic_store(&s->blocked_kind, op->kind);
		park(t);
	}
	const struct det_sched *e = det_sched_at(t, t->idx);
	wait_turn(t, e); /* none, except for the ordered ones (accept, hand-offs) */
	/* (a regular file's read: the recording kept its bytes, or a hash) */
	if (e->kind != op->kind && !(op->kind == DET_EV_FILE_READ && e->kind == DET_EV_FILE_READ_KEPT))
		other_kind(t, e, op, NULL);
	if (e->aux != op->aux) {
		char why[96];
		snprintf(why, sizeof why, "the same input from another file descriptor or clock: %u, recorded %u",
			 op->aux, e->aux);
		det_diverge(t, DET_DIV_OBJECT, op->kind, NULL, op->ra, why);
	}
	op->seq = e->seq;
	op->obj = 0;
	if (det_unlikely(det_gdb_control.attached))
		gdb_check(t, e);
	return e;
}

/* Not strict: rounds of run_last's wait (1 ms each, after the first 100)
 * without another thread's event before t goes on anyway. */
#define RUN_LAST_STILL_ROUNDS 300

/*
 * The recording's program ended by itself in t, after t's last event (strict:
 * in t's turn; any mode: t took the fault or abort it died of): in code of
 * its own, or inside a call det wraps that never returned (a crash in
 * pthread_mutex_lock(NULL), an abort), an event that never completed and is
 * not in the trace. Every other recorded event happened before that; once
 * they have happened here too, t runs on alone and outside det (the others
 * stay where their events end), so that the call it died in runs as libc's
 * own and dies the same way.
 */
static void run_last(struct det_thread *t)
{
	/* Strict: the code after its last event ran after every other event.
	 * Otherwise it ran alongside them, so that they may wait for it (a
	 * flag it sets): t waits only while they make progress. */
	int patient = !!(det_hdr->flags & DET_F_STRICT);
	uint64_t seen = 0;
	unsigned still = 0;
	for (unsigned round = 0;; round++) {
		uint64_t done = 0;
		for (uint32_t i = 0; i < det_hdr->threads_recorded; i++)
			done += atomic_load(&det_shm_slot(det_hdr, i)->done);
		if (done >= det_hdr->events_recorded)
			break;
		if (atomic_load(&det_hdr->diverged))
			park(t);
		if (done != seen) {
			seen = done;
			still = 0;
		} else if (!patient && ++still > RUN_LAST_STILL_ROUNDS) {
			break;
		}
		struct timespec ts = {0, round < 100 ? 20000 : 1000000};
		det_sys(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
	}
	t->active = 0; /* its calls from now on pass straight through */
}

void det_replay_end(struct det_op *op, int64_t result)
{
	struct det_thread *t = op->t;
	const struct det_sched *e = op->rec;
	if (result != e->result)
		det_diverge(t, DET_DIV_RESULT, op->kind, NULL, op->ra, "the operation returned something else");
	t->idx++;
	/* (seq_cst: ordered before the wake-ups are read below, for the
	 * feeder, which adds them; see schedule.c pending()) */
	atomic_store(&t->slot->done, t->idx);
	if (det_unlikely(t->idx >= t->feed_kick_at)) {
		/* room in its window: the feeder may go on */
		t->feed_kick_at += (t->sched_mask + 1) / 4;
		atomic_fetch_add(&det_hdr->feed_kick, 1);
		futex(&det_hdr->feed_kick, FUTEX_WAKE, 1);
	}
	turns->done(t, e);
	/* A signal delivered as the thread left det after this event is its
	 * next entry, and the trace's order keeps it right after this event,
	 * so the feeder writes them together: a next entry not written yet is
	 * not one (and waiting for it here could wait for the whole trace).
	 * (After the wake-ups: a thread owes those first.) */
	const struct det_sched *n = t->idx < t->sched_count ? det_sched_peek(t, t->idx) : NULL;
	if (n && n->kind == DET_EV_SIGNAL && !(n->aux & DET_SIG_BEFORE))
		t->sig_due = 1; /* delivered as the thread leaves det */
	if (det_unlikely(n && n->kind == DET_EV_THREAD_CANCELED))
		cancel_due(t, n);
	if (det_unlikely(det_gdb_control.attached) && t->idx >= t->sched_count)
		check_end();
	if (!(det_hdr->flags & DET_F_STRICT)) {
		if (det_unlikely(t->idx >= t->sched_count) && atomic_load(&det_hdr->ran_last) == t->num + 1)
			run_last(t);
		return;
	}
	det_cc_replay_next(t); /* det-cc: the next event may be a switch at a tick */
	if (e->kind == DET_EV_BLOCK)
		return; /* the recording ran the blocking call without the turn (a FIFO's
			 * open waits for another process's there): its event waits */
	if (t->idx < t->sched_count) {
		/* strict: the code up to the next event ran in its turn in the
		 * recording; it does not run before then (after the wake-ups
		 * above, which the thread owes others first). Unless the
		 * watchdog preempted the thread meanwhile: it ran on, out of
		 * its turn, as it does now. */
		const struct det_sched *next = det_sched_at(t, t->idx);
		if (!(next->flags & DET_SCHED_RAN_FREE))
			wait_turn(t, next);
	} else if (atomic_load(&t->slot->strict_yielded)) {
		/* it handed the token on after this event (the recording does so
		 * only at a boundary: never after a BLOCK or its exit) and the
		 * program ended before it got it back: the code after it never ran */
		park(t);
	} else if (atomic_load(&det_hdr->ran_last) == t->num + 1) {
		run_last(t);
	}
}

/* A live replica's thread (sched_count open) learns the threads' event
 * counts when the recording's capture ended (replayer/follow.c writes them
 * then): 1 once they are known, 0 if the replay stopped first. */
static int final_counts(struct det_thread *t)
{
	for (unsigned round = 0;; round++) {
		uint64_t n = atomic_load(&t->slot->sched_count);
		if (n != DET_SCHED_OPEN) {
			t->sched_count = n;
			return 1;
		}
		if (atomic_load(&det_hdr->diverged) || atomic_load(&det_hdr->failed) ||
		    atomic_load(&det_hdr->feed_failed))
			return 0;
		struct timespec ts = {0, round < 100 ? 20000 : 1000000};
		det_sys(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
	}
}

/*
 * The process is about to end (exit's last steps, or _exit). In the
 * recording every event logged by any of its threads happened before the
 * process died, including those logged after exit() was called; replay
 * lets them all happen before it ends the process, so that a thread's last
 * words (a message printed while another thread exits) are not cut off.
 */
void det_replay_before_exit(void)
{
	struct det_thread *t = &det_tls;
	if (!det_replaying() || !det_hdr || !t->active)
		return;
	if (t->sched_count == DET_SCHED_OPEN && !final_counts(t))
		return;
	if (atomic_load(&det_hdr->diverged) || atomic_load(&det_hdr->failed) || t->idx < t->sched_count)
		return; /* (the exiting thread has more to do: others may wait for it) */
	for (unsigned round = 0;; round++) {
		int waiting = 0;
		for (uint32_t i = 0; i < det_hdr->threads_recorded && !waiting; i++) {
			struct det_slot *s = det_shm_slot(det_hdr, i);
			if (i == t->num || s->proc != det_proc || atomic_load(&s->state) == DET_TS_PARKED)
				continue;
			waiting = atomic_load(&s->done) < s->sched_count;
		}
		if (!waiting || atomic_load(&det_hdr->diverged))
			return;
		struct timespec ts = {0, round < 100 ? 20000 : 1000000};
		det_sys(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
	}
}

/* Replay: reached from preload/ and the other modes through det_ops. */
static const struct det_mode_ops replay_ops = {
	.replay_begin = det_replay_begin,
	.replay_end = det_replay_end,
	.replay_input = det_replay_input,
	.replay_free_running = det_replay_free_running,
	.replay_polled = det_replay_polled,
	.replay_next_kind = det_replay_next_kind,
	.replay_take_block = det_replay_take_block,
	.replay_pending = det_replay_pending,
	.replay_wait_due = det_replay_wait_due,
	.replay_done_count = det_replay_done_count,
	.replay_next_seq = det_replay_next_seq,
	.replay_attach = det_replay_attach,
	.replay_resume = det_replay_resume,
	.replay_reset = det_replay_reset,
	.replay_before_exit = det_replay_before_exit,
	.replay_vanish = det_replay_vanish,
	.replay_cancel = det_replay_cancel,
	.replay_cancel_next = det_replay_cancel_next,
	.replay_cancel_request = det_replay_cancel_request,
	.replay_canceled = det_replay_canceled,
	.diverge = det_diverge,
	.sched_wait = det_sched_wait,
	.sched_known = det_sched_known,
};
DET_MODE_REGISTER(replay_ops);
