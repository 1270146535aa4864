/*
 * replayer/enforce.c - replay: make every thread wait for its recorded turn.
 *
 * Rules of this file:
 *  - Each recorded event names up to two prerequisite events of other
 *    threads (struct det_sched.dep_*): ordered replay gives every event its
 *    predecessor in the global order, relaxed replay its predecessors on the
 *    objects it touches. One mechanism serves both; detreplay chooses the
 *    edges (replayer/schedule.c).
 *  - A thread waits by spinning briefly, then sleeping on its own futex word;
 *    a finished event wakes only the threads listed in its wake[] entries.
 *  - The first divergence wins: it is written to the shared header for
 *    detreplay to report, and the program stops with DET_EXIT_STOPPED.
 */
#include "runtime.h"

#include <errno.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SPIN_ROUNDS 400

static long futex(_Atomic uint32_t *addr, int op, uint32_t val)
{
	return syscall(SYS_futex, addr, op, val, NULL, NULL, 0);
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
	if (t->num == 0)
		det_obj_bind((void *)pthread_self(), s->obj, DET_OBJ_THREAD);
}

/* Sleep for ever: the thread has done everything the recording saw it do. */
static __attribute__((noreturn)) void park(struct det_thread *t)
{
	_Atomic uint32_t never = 0;
	atomic_store(&t->slot->state, DET_TS_PARKED);
	for (;;)
		futex(&never, FUTEX_WAIT_PRIVATE, 0);
}

static void wait_for(struct det_thread *t, uint32_t dep_thread, uint64_t dep_idx)
{
	struct det_slot *d = det_shm_slot(det_hdr, dep_thread - 1);
	if (atomic_load_explicit(&d->done, memory_order_acquire) > dep_idx)
		return;
	for (int i = 0; i < SPIN_ROUNDS; i++) {
		__builtin_ia32_pause();
		if (atomic_load_explicit(&d->done, memory_order_acquire) > dep_idx)
			return;
	}
	struct det_slot *me = t->slot;
	for (;;) {
		/* Dekker with det_replay_end: sleeping is set before done is
		 * read again, done is set before sleeping is read. */
		atomic_store(&me->sleeping, 1);
		if (atomic_load(&d->done) > dep_idx)
			break;
		futex(&me->sleeping, FUTEX_WAIT, 1);
	}
	atomic_store(&me->sleeping, 0);
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
		const struct det_sched *e = &t->sched[t->idx];
		d->seq = e->seq;
		d->want_kind = e->kind;
		d->want_obj = e->obj;
	} else {
		d->seq = UINT64_MAX;
	}
	strncpy(d->what, what, sizeof(d->what) - 1);
	/* detreplay (or det's gdb commands) report it, with source lines. */
	det_fatal("replay diverged at T%u's event %lu: %s", t->num, (unsigned long)t->idx, what);
}

const struct det_sched *det_replay_begin(struct det_op *op, const void *addr, enum det_objkind objkind)
{
	struct det_thread *t = op->t;
	if (t->idx >= t->sched_count) {
		/* Past its last recorded event: the recording ended here (the
		 * program exited, crashed or was stopped). Park, saying what the
		 * thread wanted next; detreplay decides whether that is the end
		 * of the replay or a divergence. */
		struct det_slot *s = t->slot;
		s->blocked_obj = det_obj_find(addr);
		s->blocked_ra = op->ra;
		atomic_store(&s->blocked_kind, op->kind);
		park(t);
	}
	const struct det_sched *e = &t->sched[t->idx];
	for (int i = 0; i < 2; i++)
		if (e->dep_thread[i])
			wait_for(t, e->dep_thread[i], e->dep_idx[i]);
	if (e->kind != op->kind)
		det_diverge(t, DET_DIV_KIND, op->kind, addr, op->ra, "another kind of event");
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
	return e;
}

void det_replay_end(struct det_op *op, int64_t result)
{
	struct det_thread *t = op->t;
	const struct det_sched *e = op->rec;
	if (result != e->result)
		det_diverge(t, DET_DIV_RESULT, op->kind, NULL, op->ra, "the operation returned something else");
	t->idx++;
	atomic_store(&t->slot->done, t->idx);
	for (int i = 0; i < 2; i++) {
		uint32_t w = e->wake[i];
		if (!w)
			continue;
		struct det_slot *s = det_shm_slot(det_hdr, w - 1);
		if (atomic_load(&s->sleeping) && atomic_exchange(&s->sleeping, 0))
			futex(&s->sleeping, FUTEX_WAKE, 1);
	}
}
