/*
 * replayer/schedule.c - libdetsup.so: turn a trace into the replay region,
 * streamed: each thread's recorded events go into a window of the region
 * (struct det_slot.sched_off/sched_window) a little ahead of the thread,
 * so replay memory does not grow with the trace.
 *
 * Rules of this file:
 *  - Each event gets at most two prerequisites on other threads and at most
 *    two threads to wake (include/det/shm.h struct det_sched):
 *      ordered: its predecessor in the recorded global order (inputs stay
 *               out of it, but for hand-offs, clock reads and sleeps:
 *               kept_in_place);
 *      relaxed: its predecessor on each object it touches (its object, and
 *               the mutex of a condition wait), which also carries the
 *               create -> start and exit -> join edges (a thread's events
 *               all name the thread's own object); a sleep, the last event
 *               before it of the thread last signalled; a clock read, a
 *               sleep and a thread's next event after one, the one before
 *               it among those (the time chain: one successor each); a
 *               thread create or start, the one before it among those
 *               (maps_memory: they map memory);
 *      both: a hand-off through a descriptor (det_kind_handoff), its
 *               predecessor among the hand-offs only; a stdio write to a
 *               stream several processes write (det_event_also_handoff)
 *               that predecessor as its second.
 *    Program order within a thread needs no edge.
 *  - One feeder reads the trace once, in seq order, and writes entry i of
 *    thread T into T's window only while T has done enough of its events
 *    that the slot is free (T's done + window - 2: the entry it is at and
 *    the one it just finished stay put). An entry is published by
 *    sched_filled (with the run's generation: under gdb the program starts
 *    again and the feeder with it). A wake-up is added to a predecessor's
 *    entry only if that event is not done yet; if it is done by the time
 *    the waiter looks, the waiter sees it done and never sleeps.
 *  - Progress: every entry before the feeder's position in the order is in
 *    a window, so the earliest event not done can always run; a full
 *    window waits for its thread only.
 *  - Rows that contradict themselves (unknown threads or calls, more
 *    events than a thread has) stop the replay with a message: what the
 *    feeder reads before the program starts is checked before it starts.
 *  - The events come from the trace's packed schedule when it has one that
 *    holds as many events as its threads (supervisor/schedpack.h: a byte or
 *    less an event, decoded here, where a row through SQLite costs ~110
 *    ns), else from event_rows; both give the same (seq, thread, call,
 *    result), and the validator checked that they agree before detreplay
 *    got here. DET_REPLAY_ROWS=1 reads the rows whatever the trace has.
 */
#include "feeder.h"
#include "../supervisor/schedpack.h"
#include "det/cc.h"

#include <errno.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Entries of a thread's window (a thread with fewer events gets the power of
 * two that holds them: the runtime finds entry i at i & (window - 1)). */
#define WINDOW (1u << 16)

/* A thread's entries are published at the end of a run of its rows once this
 * many wait (and all of them whenever the feeder stops): the slot line that
 * says so is one the thread reads, so it is written seldom. */
#define PUBLISH_EVERY 1024

static uint32_t window_of(uint64_t count)
{
	return count < WINDOW ? sup_pow2(count, 1) : WINDOW;
}

/* Does this kind's aux name a second object (the mutex of a condition wait)? */
static int aux_is_object(uint16_t kind)
{
	int role = det_kind_role(kind);
	return (role == DET_ROLE_WAIT || role == DET_ROLE_WAKE) && kind >= DET_EV_COND_WAIT &&
	       kind <= DET_EV_COND_WAKE;
}

struct last_event {
	uint32_t thread; /* + 1; 0: none yet */
	uint32_t pad;
	uint64_t idx;
};

struct call {
	uint32_t kind, obj, aux;
};

/* struct order's marks: the thread's last event was a clock read or sleep
 * (relaxed replays); it was preempted since its last event (strict). */
#define MARK_TIMED 1u
#define MARK_PREEMPTED 2u

/* What the next event waits for: the last event in the order so far
 * (ordered), the last on each object (relaxed), the last hand-off (both). */
struct order {
	struct last_event prev;      /* ordered */
	struct last_event *last_obj; /* relaxed, per object */
	struct last_event handoff;   /* the last hand-off through a descriptor */
	struct last_event signalled; /* relaxed: the last event of the thread last signalled */
	struct last_event time;      /* relaxed: the last event of the time chain (order_next) */
	struct last_event maps;      /* relaxed: the last thread create or start (maps_memory) */
	uint8_t *marks;              /* per thread: MARK_TIMED, MARK_PREEMPTED */
	uint32_t nthreads;
	uint32_t sig_thread;         /* relaxed: that thread + 1 (0: none yet) */
	int64_t max_obj;
};

/* A clock read, in an ordered replay, keeps its recorded place in the one
 * order although it is an input: a server's clock thread (or event loop)
 * stores what it read where other threads read it between their events
 * without a lock (memcached's current_time, a cached time of day). Left
 * out of the order, that store could come any time between the reader's
 * neighbouring events in replay (a busy machine delays the thread that
 * reads the clock while another runs hundreds of events ahead); in its
 * place, only the few instructions between the read and the store are
 * left to chance. So does a sleep, the other half of the same pattern: a
 * loop that polls a flag written without a lock (while (!flag)
 * usleep(1000), the flag set by another thread or a signal's handler)
 * made as many sleeps as it took the write to come; replay skips sleeps,
 * so out of the order the loop runs through them before the write and
 * sleeps once more than recorded. Relaxed replay keeps them, and each
 * thread's next event after one, in one chain of their own (order_next),
 * and puts a sleep after a signal's handler (a flag it writes). */
static int kept_in_place(unsigned kind)
{
	return kind == DET_EV_CLOCK_GETTIME || kind == DET_EV_GETTIMEOFDAY || kind == DET_EV_TIME ||
	       kind == DET_EV_SLEEP;
}

/* A thread create maps the thread's stack and a start its heap
 * (preload/threads.c); where the kernel puts a mapping depends on those
 * before it, so a relaxed replay keeps these in their recorded order among
 * themselves (out of it, two threads' heaps traded addresses and so did
 * every pointer they allocated). */
static int maps_memory(unsigned kind)
{
	return kind == DET_EV_THREAD_CREATE || kind == DET_EV_THREAD_START;
}

static int patched_atomic(const struct det_sched *e)
{
	return (e->kind == DET_EV_ATOMIC_RMW || e->kind == DET_EV_ATOMIC_CMPXCHG) && (e->aux & DET_ATOMIC_TRAPPED) &&
	       e->obj;
}

/* Event idx of thread t (kind, obj, aux of entry e) in the order: its
 * prerequisites on other threads go to dep[0..1] (thread 0: none), and it
 * becomes the last event of what it orders. */
static void order_next(struct order *o, uint32_t flags, struct det_sched *e, uint32_t t, uint64_t idx,
		       struct last_event dep[2])
{
	memset(dep, 0, 2 * sizeof(*dep));
	if (flags & DET_F_STRICT) {
		/* A thread the watchdog preempted (a PREEMPT another thread
		 * logged) ran on after its last event, out of its turn (a spin
		 * with no call into det): its next event says so, and replay
		 * lets it run from its previous event on (enforce.c). */
		if (e->kind == DET_EV_PREEMPT && e->aux < o->nthreads) {
			o->marks[e->aux] = MARK_PREEMPTED;
		} else if (o->marks[t] & MARK_PREEMPTED) {
			e->flags |= DET_SCHED_RAN_FREE;
			o->marks[t] = 0;
		}
	}
	int timed = 0; /* relaxed: it joins the time chain */
	if ((flags & DET_F_RELAXED) && !(flags & (DET_F_STRICT | DET_F_ALL_ORDERED))) {
		/* A signal handler's writes are the sanctioned way to tell
		 * another thread something without a lock (a volatile
		 * sig_atomic_t flag it polls with sleeps), and they belong to no
		 * object: a relaxed replay puts each sleep of another thread
		 * after the signalled thread's last event before it in the
		 * recorded order (its handler's end, or where a handler that
		 * siglongjmp'd out went on). Out of it, the poller skipped its
		 * sleeps before the handler ran and slept once more than
		 * recorded. A thread that takes its signals with sigwait is
		 * signalled as well: a sender that sleeps between two kills
		 * sent the second after the first was taken (out of it, the two
		 * came while one was pending, made one, and the second sigwait
		 * waited for ever). */
		struct last_event me = {t + 1, 0, idx};
		if (e->kind == DET_EV_SIGNAL || e->kind == DET_EV_SIGWAIT)
			o->sig_thread = t + 1;
		if (o->sig_thread == t + 1)
			o->signalled = me;
		else if (e->kind == DET_EV_SLEEP)
			dep[0] = o->signalled;
		/* The time chain: a cached clock (kept_in_place) in a relaxed
		 * replay. Clock reads, sleeps, and each thread's next event
		 * after one of them keep their recorded order among themselves:
		 * the event after a clock read (its store of what it read came
		 * before) comes before the sleeps that returned after it, and
		 * a thread's next event after a sleep (where it reads the
		 * cached clock: replay skips the sleep) after it. Out of it,
		 * memcached's LRU thread ran ahead of the main thread's
		 * current_time and saw the previous second. */
		timed = kept_in_place(e->kind) || (o->marks[t] & MARK_TIMED);
		o->marks[t] = kept_in_place(e->kind) ? MARK_TIMED : 0;
		if (kept_in_place(e->kind))
			goto chained;
	}
	/* (a fence stays out of the one order under gdb too: see det_kind_unordered) */
	if (det_kind_unordered(e->kind) && !(flags & DET_F_STRICT) &&
	    (!(flags & DET_F_ALL_ORDERED) || e->kind == DET_EV_ATOMIC_FENCE) &&
	    !(kept_in_place(e->kind) && !(flags & DET_F_RELAXED)))
		goto chained;
	struct last_event me = {t + 1, 0, idx};
	if (patched_atomic(e) && !(flags & (DET_F_STRICT | DET_F_ALL_ORDERED))) {
		/* A patched atomic (preload/trapped_atomics.c) keeps its place
		 * among its location's events only, in the ordered and relaxed
		 * replays (strict takes turns; under gdb every event keeps its
		 * place, where `det goto` stops): that is what it decides (who
		 * took a spinlock, what a counter said). In the one order it made cycles with what the default
		 * mode does not see: a C++20 latch's waiter woken by a futex in
		 * libstdc++, a plain store, before its own next event, while the
		 * atomic that changes what it waits for came after that event
		 * (cxx20_latch: 1 replay in 6 stalled under load). */
		dep[0] = o->last_obj[e->obj];
		o->last_obj[e->obj] = me;
		goto chained;
	}
	if (flags & DET_F_ALL_ORDERED) {
		dep[0] = o->prev; /* one order, the recorded one (it is a relaxed order too) */
		o->prev = me;
	} else if (det_kind_handoff(e->kind) && !(flags & DET_F_STRICT)) {
		/* A hand-off through a descriptor (include/det/events.h
		 * det_kind_handoff) keeps its place among the others, in both
		 * modes: a reader comes after the writes it saw, and what it does
		 * next (call a handler the writer stored) does not overtake
		 * them. Only among them: joining the global order would make a
		 * write to stdout wait for events that a replay may never make
		 * (a child another process killed at another moment). */
		dep[0] = o->handoff;
		o->handoff = me;
		/* (an ordered replay keeps a pipe read, or a socket pair's
		 * receive, in the global order too: what the reader does next,
		 * like closing its end, must not overtake the writer's process; a
		 * reader running ahead made a pipeline's writer die of SIGPIPE
		 * early) */
		if ((e->kind == DET_EV_PIPE_READ || e->kind == DET_EV_SOCK_RECV) && !(flags & DET_F_RELAXED)) {
			dep[1] = o->prev;
			o->prev = me;
		}
	} else if (flags & DET_F_RELAXED) {
		dep[0] = o->last_obj[e->obj];
		o->last_obj[e->obj] = me;
		if (aux_is_object(e->kind) && e->aux > 0 && e->aux <= o->max_obj && e->aux != e->obj) {
			dep[1] = o->last_obj[e->aux];
			o->last_obj[e->aux] = me;
			timed = 0; /* (two successors already: an event wakes two threads at most) */
		} else if (maps_memory(e->kind)) {
			if (o->maps.thread != dep[0].thread || o->maps.idx != dep[0].idx)
				dep[1] = o->maps;
			o->maps = me;
			timed = 0; /* (as above) */
		}
	} else {
		dep[0] = o->prev;
		o->prev = me;
	}
	if (det_event_also_handoff(e->kind, e->aux) && !(flags & (DET_F_STRICT | DET_F_ALL_ORDERED))) {
		/* a stdio write to a stream other processes write: after
		 * the hand-off before it, whatever else orders it */
		dep[1] = o->handoff;
		o->handoff = me;
		timed = 0; /* (as above) */
	}
chained:
	if (timed) {
		dep[1] = o->time; /* (free: a chained event has one other order at most) */
		o->time = (struct last_event){t + 1, 0, idx};
	}
	for (int i = 0; i < 2; i++)
		if (dep[i].thread == t + 1) /* program order needs no edge */
			memset(&dep[i], 0, sizeof(dep[i])); /* (the module refuses an index without a thread) */
}

static void order_reset(struct order *o)
{
	memset(&o->prev, 0, sizeof(o->prev));
	memset(&o->handoff, 0, sizeof(o->handoff));
	memset(&o->signalled, 0, sizeof(o->signalled));
	memset(&o->time, 0, sizeof(o->time));
	memset(&o->maps, 0, sizeof(o->maps));
	memset(o->marks, 0, o->nthreads);
	o->sig_thread = 0;
	memset(o->last_obj, 0, ((size_t)o->max_obj + 1) * sizeof(*o->last_obj));
}

/* Where events come from: event_rows (st steps the rows) or the packed
 * schedule (u.st steps its chunks). */
struct source {
	int packed;
	sqlite3_stmt *st;
	struct det_unpacker u;
	char err[200];
};

static int source_open(sqlite3 *db, const char *sql, int packed, uint32_t nthreads, struct source *src)
{
	memset(src, 0, sizeof(*src));
	src->packed = packed;
	src->u.d.nthreads = nthreads;
	return sqlite3_prepare_v2(db, sql, -1, packed ? &src->u.st : &src->st, NULL) == SQLITE_OK ? 0 : -1;
}

static void source_rewind(struct source *src)
{
	if (src->packed)
		det_unpack_rewind(&src->u);
	else
		sqlite3_reset(src->st);
}

static void source_close(struct source *src)
{
	sqlite3_finalize(src->st);
	sqlite3_finalize(src->u.st);
	det_pack_dec_free(&src->u.d);
	memset(src, 0, sizeof(*src));
}

static const char *source_sql(struct source *src)
{
	return sqlite3_sql(src->packed ? src->u.st : src->st);
}

/* The next event (seq, thread, call, result): 1, 0 at the end, -1 with a
 * message in src->err. */
static inline int source_next(struct source *src, int64_t v[4])
{
	if (src->packed)
		return det_unpack_row(&src->u, v, src->err, sizeof(src->err));
	int rc = sqlite3_step(src->st);
	if (rc == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW) {
		snprintf(src->err, sizeof(src->err), "the trace cannot be read (%s)",
			 sqlite3_errmsg(sqlite3_db_handle(src->st)));
		return -1;
	}
	for (int i = 0; i < 4; i++)
		v[i] = sqlite3_column_int64(src->st, i);
	return 1;
}

struct feeder {
	sqlite3 *db;
	struct source ev;
	sqlite3_stmt *data;
	int64_t cur[4];           /* the event read: seq, thread, call, result */
	const char *db_path;
	int drc;                  /* the data statement's last step */
	struct call *calls;
	uint64_t ncalls;
	int64_t max_obj;
	uint32_t nthreads;
	uint64_t *fed;            /* per thread: entries written */
	uint64_t *published;      /* per thread: entries published (sched_filled) */
	uint64_t *done_seen;      /* per thread: its done counter, as last read (it only grows) */
	/* per thread: its window, as in its slot (whose line holds its done
	 * counter, which it writes at every event: read per row, that line
	 * would move between the feeder and the thread at every event) */
	struct window {
		struct det_sched *base;
		uint64_t count; /* its recorded events */
		uint32_t size;  /* entries */
	} *win;
	struct order order;
	uint64_t seen, total;
	uint64_t data_at, data_end;
	uint32_t gen;             /* the run the windows are for */
	int row;                  /* a row is read and not written yet */
	int done;                 /* everything fed */
	_Atomic int stop;
	char err[256];
};

static int query(struct det_sup *s, sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
	if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK)
		return sup_fail(s, "the trace cannot be read (%s)", sqlite3_errmsg(db));
	return 0;
}

static struct det_sched *entry(struct det_sup *s, uint32_t thread, uint64_t idx)
{
	const struct window *w = &s->feed->win[thread];
	return w->base + (idx & (w->size - 1));
}

/* Is thread's event idx still to be done (its entry in place, not reused)?
 * By the count last read: a thread's done line is its own to write at every
 * event, and reading it for every row would take it away each time. A stale
 * count only adds a wake-up the thread has gone past; its waiter then finds
 * the event done by itself (enforce.c's done store is ordered before the
 * thread reads its wake-ups, so whatever misses one sees the other). */
static int pending(struct det_sup *s, uint32_t thread, uint64_t idx)
{
	return s->feed->done_seen[thread] <= idx;
}

static void add_wake(struct det_sched *e, uint32_t thread)
{
	for (int i = 0; i < 2; i++) {
		uint32_t w = atomic_load((_Atomic uint32_t *)&e->wake[i]);
		if (w == thread + 1)
			return;
		if (!w) {
			atomic_store((_Atomic uint32_t *)&e->wake[i], thread + 1);
			return;
		}
	}
	/* A third waiter (an event on two objects is followed on each, and a
	 * relaxed replay's time and mapping chains add theirs): wake them all. */
	atomic_store((_Atomic uint32_t *)&e->wake[1], DET_WAKE_ALL);
}

static void add_dep(struct det_sup *s, struct det_sched *e, int slot, const struct last_event *prev,
		    uint32_t thread)
{
	if (!prev->thread)
		return;
	e->dep_thread[slot] = prev->thread;
	e->dep_idx[slot] = (uint32_t)prev->idx;
	if (pending(s, prev->thread - 1, prev->idx))
		add_wake(entry(s, prev->thread - 1, prev->idx), thread);
}

static int feed_fail(struct det_sup *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int feed_fail(struct det_sup *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->feed->err, sizeof(s->feed->err), fmt, ap);
	va_end(ap);
	return -1;
}

/* Back to the trace's first event, for a run that starts again. */
static void feed_rewind(struct det_sup *s, uint32_t gen)
{
	struct feeder *f = s->feed;
	source_rewind(&f->ev);
	sqlite3_reset(f->data);
	f->drc = sqlite3_step(f->data);
	memset(f->fed, 0, f->nthreads * sizeof(*f->fed));
	memset(f->published, 0, f->nthreads * sizeof(*f->published));
	/* a run that starts again from a snapshot (replayer/snapshot.c) has
	 * its progress restored before the new generation: the entries its
	 * threads are past are only counted and ordered, not written (a
	 * restart's progress reads 0 here) */
	for (uint32_t t = 0; t < f->nthreads; t++)
		f->done_seen[t] = atomic_load(&det_shm_slot(s->hdr, t)->done);
	order_reset(&f->order);
	f->seen = 0;
	f->data_at = s->data_off;
	f->gen = gen;
	f->row = 0;
	f->done = 0;
}

static void publish(struct det_sup *s, uint32_t t)
{
	struct det_slot *sl = det_shm_slot(s->hdr, t);
	struct feeder *f = s->feed;
	if (f->published[t] == f->fed[t])
		return;
	f->published[t] = f->fed[t];
	atomic_store_explicit(&sl->sched_filled, (uint64_t)f->gen << DET_FILLED_BITS | f->fed[t],
			      memory_order_release);
}

/* The end of a run of t's rows: publish if enough wait. */
static void run_ends(struct det_sup *s, uint32_t t)
{
	if (s->feed->fed[t] - s->feed->published[t] >= PUBLISH_EVERY)
		publish(s, t);
}

/* Publish every thread but `busy` (UINT32_MAX: none), whose run of rows
 * may not be over. */
static void publish_all(struct det_sup *s, uint32_t busy)
{
	for (uint32_t t = 0; t < s->feed->nthreads; t++)
		if (t != busy)
			publish(s, t);
}

/* Entry idx = fed[t] of thread t, written and ordered (its data already in
 * the region at data_off): the one step the trace's feeder and the live
 * follower (replayer/follow.c) share. */
static void put_entry(struct det_sup *s, uint32_t t, uint64_t seq, int64_t result, uint16_t kind, uint32_t obj,
		      uint32_t aux, uint64_t data_off, uint32_t data_len)
{
	struct feeder *f = s->feed;
	uint64_t idx = f->fed[t];
	struct det_sched *e = entry(s, t, idx);
	memset(e, 0, sizeof(*e));
	e->seq = seq;
	e->result = result;
	e->obj = obj;
	e->aux = aux;
	e->kind = kind;
	e->data_off = data_off;
	e->data_len = data_len;
	struct last_event dep[2];
	order_next(&f->order, s->hdr->flags, e, t, idx, dep);
	add_dep(s, e, 0, &dep[0], t);
	add_dep(s, e, 1, &dep[1], t);
	f->fed[t]++;
}

/* Entry fed[t] of thread t, which t is past: only its place in the order
 * (what later entries wait for) and the count. */
static void count_entry(struct det_sup *s, uint32_t t, uint16_t kind, uint32_t obj, uint32_t aux)
{
	struct feeder *f = s->feed;
	struct det_sched e = {.kind = kind, .obj = obj, .aux = aux};
	struct last_event dep[2];
	order_next(&f->order, s->hdr->flags, &e, t, f->fed[t], dep);
	f->fed[t]++;
}

/*
 * Write events into the windows until a window is full or the trace ends.
 * Returns 1 if it moved, 0 if it waits for a thread (or is done), < 0 on a
 * damaged trace.
 */
static int feed_some(struct det_sup *s)
{
	struct feeder *f = s->feed;
	struct det_shm_header *h = s->hdr;
	int moved = 0;
	uint32_t last_thread = UINT32_MAX;
	uint32_t kick = atomic_load(&h->feed_kick);
	while (!f->done) {
		if (f->seen % 256 == 0 && atomic_load(&h->feed_kick) != kick) {
			/* a thread caught up with the feeder: it gets what is
			 * written (of runs that are over) */
			kick = atomic_load(&h->feed_kick);
			publish_all(s, last_thread);
		}
		if (!f->row) {
			int rc = source_next(&f->ev, f->cur);
			if (rc == 0) {
				if (f->seen != f->total)
					return feed_fail(s, "the trace has %llu events but its threads account for %llu",
							 (unsigned long long)f->seen, (unsigned long long)f->total);
				f->done = 1;
				break;
			}
			if (rc < 0)
				return feed_fail(s, "%s", f->ev.err);
			f->row = 1;
		}
		int64_t seq = f->cur[0];
		int64_t num = f->cur[1];
		int64_t call = f->cur[2];
		if (num < 0 || (uint64_t)num >= f->nthreads || call <= 0 || (uint64_t)call >= f->ncalls ||
		    !f->calls[call].kind)
			return feed_fail(s, "event %lld of the trace is damaged (thread %lld, call %lld)", (long long)seq,
					 (long long)num, (long long)call);
		uint32_t t = (uint32_t)num;
		const struct window *w = &f->win[t];
		uint64_t idx = f->fed[t];
		if (idx >= w->count)
			return feed_fail(s, "event %lld of the trace is one more than T%u has", (long long)seq, t);
		if (idx >= f->done_seen[t] + w->size - 2 && w->size < w->count) {
			f->done_seen[t] = atomic_load(&det_shm_slot(h, t)->done);
			if (idx >= f->done_seen[t] + w->size - 2) {
				publish_all(s, UINT32_MAX);
				return moved; /* its window is full: it has to move first */
			}
		}
		struct call *k = &f->calls[call];
		uint64_t data_off = 0;
		uint32_t data_len = 0;
		/* an entry its thread finished, and not the last one (a resumed
		 * snapshot's): nobody reads it again */
		int past = idx + 1 < f->done_seen[t];
		/* this event's data: the data rows come in the same seq order */
		while (f->drc == SQLITE_ROW && sqlite3_column_int64(f->data, 0) < seq)
			f->drc = sqlite3_step(f->data);
		if (f->drc == SQLITE_ROW && sqlite3_column_int64(f->data, 0) == seq) {
			int n = sqlite3_column_bytes(f->data, 1);
			if (f->data_at + (uint64_t)n > f->data_end)
				return feed_fail(s, "the trace's data table is damaged");
			if (!past)
				memcpy((char *)h + f->data_at, sqlite3_column_blob(f->data, 1), (size_t)n);
			data_off = f->data_at;
			data_len = (uint32_t)n;
			f->data_at += (uint64_t)n;
			f->drc = sqlite3_step(f->data);
		}
		if (past)
			count_entry(s, t, (uint16_t)k->kind, k->obj, k->aux);
		else
			put_entry(s, t, (uint64_t)seq, f->cur[3], (uint16_t)k->kind, k->obj, k->aux, data_off,
				  data_len);
		f->seen++;
		f->row = 0;
		moved = 1;
		/* publish at the end of a thread's run of rows: an entry and the
		 * signal glued after it (recorder/convert_merge.c) appear together */
		if (last_thread != t) {
			if (last_thread != UINT32_MAX)
				run_ends(s, last_thread);
			last_thread = t;
		}
	}
	publish_all(s, UINT32_MAX);
	return moved;
}

static void stop_program(struct det_sup *s)
{
	struct det_shm_header *h = s->hdr;
	uint32_t expected = 0;
	if (atomic_compare_exchange_strong(&h->failed, &expected, DET_FAILED_WRITING)) {
		snprintf(h->error, sizeof(h->error), "%s", s->feed->err);
		atomic_store(&h->failed, DET_FAILED_WRITTEN);
	}
	atomic_store(&h->feed_failed, 1);
}

SUP_EXPORT int det_sup_feed_run(struct det_sup *s)
{
	struct feeder *f = s->feed;
	struct det_shm_header *h = s->hdr;
	if (!f)
		return 0;
	while (!atomic_load(&f->stop)) {
		uint32_t kick = atomic_load(&h->feed_kick);
		uint32_t gen = atomic_load(&h->sched_gen);
		if (gen != f->gen)
			feed_rewind(s, gen);
		int r = feed_some(s);
		if (r < 0) {
			stop_program(s);
			return 0; /* the program reports it */
		}
		if (r > 0)
			continue;
		struct timespec ts = {0, (f->done ? 50 : 1) * 1000 * 1000};
		syscall(SYS_futex, &h->feed_kick, FUTEX_WAIT, kick, &ts, NULL, 0);
	}
	return 0;
}

SUP_EXPORT void det_sup_feed_stop(struct det_sup *s)
{
	if (!s->feed)
		return;
	atomic_store(&s->feed->stop, 1);
	atomic_fetch_add(&s->hdr->feed_kick, 1);
	syscall(SYS_futex, &s->hdr->feed_kick, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* det_sup_free's first step for a replay's handle (its release). */
static void feed_free(struct det_sup *s)
{
	struct feeder *f = s->feed;
	if (!f)
		return;
	source_close(&f->ev);
	sqlite3_finalize(f->data);
	sqlite3_close(f->db);
	free(f->calls);
	free(f->fed);
	free(f->published);
	free(f->done_seen);
	free(f->win);
	free(f->order.last_obj);
	free(f->order.marks);
	free(f);
	s->feed = NULL;
}

SUP_EXPORT struct det_sup *det_sup_replay_new(const char *db_path, const char *threads_sql,
					      const char *max_obj_sql, const char *calls_sql, const char *events_sql,
					      const char *schedule_sql, uint64_t schedule_events,
					      const char *data_size_sql, const char *data_sql, uint32_t flags,
					      char *err, uint32_t errlen)
{
	struct det_sup *s = sup_alloc();
	sqlite3_stmt *st = NULL;
	int64_t data_bytes = 0;
	uint64_t *counts = NULL;
	uint32_t *thread_obj = NULL;
	uint32_t nthreads = 0;
	uint64_t total = 0;
	int ok = 0;

	if (!s)
		return NULL;
	s->release = feed_free;
	struct feeder *f = s->feed = calloc(1, sizeof(*f));
	if (!f) {
		sup_fail(s, "out of memory");
		goto out;
	}
	if (det_open_trace_ro(db_path, &f->db) != SQLITE_OK) {
		sup_fail(s, "cannot open %s: %s", db_path, sqlite3_errmsg(f->db));
		goto out;
	}
	sqlite3 *db = f->db;
	/* threads: (thread, object, events) */
	if (query(s, db, threads_sql, &st))
		goto out;
	uint32_t cap = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t num = sqlite3_column_int64(st, 0);
		if (num < 0 || num >= (1 << 16)) {
			sup_fail(s, "the trace names thread T%lld", (long long)num);
			goto out;
		}
		if ((uint32_t)num >= cap) {
			uint32_t ncap = (uint32_t)num + 64;
			uint32_t *o = realloc(thread_obj, ncap * sizeof(*o));
			if (o)
				thread_obj = o;
			uint64_t *c = realloc(counts, ncap * sizeof(*c));
			if (c)
				counts = c;
			if (!o || !c) {
				sup_fail(s, "out of memory");
				goto out;
			}
			memset(o + cap, 0, (ncap - cap) * sizeof(*o));
			memset(c + cap, 0, (ncap - cap) * sizeof(*c));
			cap = ncap;
		}
		thread_obj[num] = (uint32_t)sqlite3_column_int64(st, 1);
		counts[num] = (uint64_t)sqlite3_column_int64(st, 2);
		total += counts[num];
		if ((uint32_t)num + 1 > nthreads)
			nthreads = (uint32_t)num + 1;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (nthreads == 0) {
		sup_fail(s, "the trace has no threads");
		goto out;
	}
	if (query(s, db, max_obj_sql, &st))
		goto out;
	if (sqlite3_step(st) == SQLITE_ROW)
		f->max_obj = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (f->max_obj < 0 || f->max_obj > (1ll << 31)) {
		sup_fail(s, "the trace has an impossible object id %lld", (long long)f->max_obj);
		goto out;
	}
	/* calls: (call, kind, object, aux) */
	if (query(s, db, calls_sql, &st))
		goto out;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		int64_t kind = sqlite3_column_int64(st, 1), obj = sqlite3_column_int64(st, 2);
		if (id <= 0 || id > (1ll << 32) || kind <= 0 || kind >= DET_KIND_LIMIT || obj < 0 || obj > f->max_obj) {
			sup_fail(s, "call %lld of the trace is damaged (kind %lld, object %lld)", (long long)id,
				 (long long)kind, (long long)obj);
			goto out;
		}
		if ((uint64_t)id >= f->ncalls) { /* ncalls: slots, ids below it */
			uint64_t n = f->ncalls ? f->ncalls : 64;
			while (n <= (uint64_t)id)
				n *= 2;
			struct call *nc = realloc(f->calls, n * sizeof(*nc));
			if (!nc) {
				sup_fail(s, "out of memory");
				goto out;
			}
			memset(nc + f->ncalls, 0, (n - f->ncalls) * sizeof(*nc));
			f->calls = nc;
			f->ncalls = n;
		}
		f->calls[id] = (struct call){(uint32_t)kind, (uint32_t)obj, (uint32_t)sqlite3_column_int64(st, 3)};
	}
	sqlite3_finalize(st);
	st = NULL;
	if (query(s, db, data_size_sql, &st))
		goto out;
	if (sqlite3_step(st) == SQLITE_ROW)
		data_bytes = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (data_bytes < 0) {
		sup_fail(s, "the trace's data table is damaged");
		goto out;
	}

	/* the windows, one after the other */
	uint64_t window_entries = 0;
	for (uint32_t i = 0; i < nthreads; i++)
		window_entries += window_of(counts[i]);
	struct sup_layout l = {
		.mode = DET_MODE_REPLAY,
		.max_threads = nthreads,
		.rings = 0,
		.objects_cap = sup_pow2((uint64_t)f->max_obj * 2 + 64, 1024),
		.ring_entries = 0,
		.objrev_count = (uint64_t)f->max_obj,
		.sched_entries = window_entries,
		.data_bytes = (uint64_t)data_bytes,
	};
	if (sup_map(s, &l))
		goto out;
	struct det_shm_header *h = s->hdr;
	h->flags = flags;
	h->threads_recorded = nthreads;
	h->events_recorded = total;
	uint64_t off = h->sched_off;
	for (uint32_t i = 0; i < nthreads; i++) {
		struct det_slot *sl = det_shm_slot(h, i);
		sl->num = i;
		sl->obj = thread_obj[i];
		sl->sched_off = off;
		sl->sched_count = counts[i];
		sl->sched_window = window_of(counts[i]);
		off += (uint64_t)sl->sched_window * sizeof(struct det_sched);
	}

	f->nthreads = nthreads;
	f->total = total;
	f->data_end = s->data_off + (uint64_t)data_bytes;
	f->fed = calloc(nthreads, sizeof(*f->fed));
	f->published = calloc(nthreads, sizeof(*f->published));
	f->done_seen = calloc(nthreads, sizeof(*f->done_seen));
	f->win = calloc(nthreads, sizeof(*f->win));
	f->order.max_obj = f->max_obj;
	f->order.last_obj = calloc((size_t)f->max_obj + 1, sizeof(*f->order.last_obj));
	f->order.marks = calloc(nthreads, 1);
	f->order.nthreads = nthreads;
	if (!f->fed || !f->published || !f->done_seen || !f->win || !f->order.last_obj || !f->order.marks) {
		sup_fail(s, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < nthreads; i++) {
		struct det_slot *sl = det_shm_slot(h, i);
		f->win[i] = (struct window){(struct det_sched *)((char *)h + sl->sched_off), sl->sched_count,
					    sl->sched_window};
	}
	/* the packed schedule when it is there and holds the threads' events
	 * (one made from other rows would not), else the rows */
	const char *rows = getenv("DET_REPLAY_ROWS");
	int packed = schedule_sql && schedule_events == total && !(rows && *rows && *rows != '0');
	if (packed && source_open(db, schedule_sql, 1, nthreads, &f->ev))
		packed = 0; /* (no such table: a trace made before it) */
	if (!packed && source_open(db, events_sql, 0, nthreads, &f->ev)) {
		sup_fail(s, "the trace cannot be read (%s)", sqlite3_errmsg(db));
		goto out;
	}
	if (query(s, db, data_sql, &f->data))
		goto out;
	/* what fits goes in now: the program starts with it (a trace smaller
	 * than the windows is all there and checked before it starts) */
	feed_rewind(s, 0);
	int r;
	while ((r = feed_some(s)) > 0)
		;
	if (r < 0) {
		sup_fail(s, "%s", f->err);
		goto out;
	}
	ok = 1;
out:
	if (st)
		sqlite3_finalize(st);
	free(counts);
	free(thread_obj);
	if (!ok) {
		if (err && errlen) {
			strncpy(err, s->err, errlen - 1);
			err[errlen - 1] = 0;
		}
		det_sup_free(s);
		return NULL;
	}
	return s;
}

/*
 * Every event's prerequisites at once, for a backend that takes the whole
 * schedule before the program starts (kmod): one pass of its own over the
 * trace, by the same order_next as the feeder. dep() gets each event's
 * dep_thread (thread + 1, 0: none) and dep_idx pairs.
 */
int sup_schedule_deps(struct det_sup *s, void (*dep)(void *arg, uint32_t thread, uint64_t idx,
						      const struct det_sched *e),
		      void *arg)
{
	struct feeder *f = s->feed;
	struct det_shm_header *h = s->hdr;
	if (!f)
		return sup_fail(s, "no schedule to read");
	struct order o = {.max_obj = f->max_obj, .nthreads = f->nthreads};
	uint64_t *count = calloc(f->nthreads, sizeof(*count));
	o.last_obj = calloc((size_t)f->max_obj + 1, sizeof(*o.last_obj));
	o.marks = calloc(f->nthreads, 1);
	struct source src;
	memset(&src, 0, sizeof(src));
	int rc = -1;
	if (!count || !o.last_obj || !o.marks) {
		sup_fail(s, "out of memory");
		goto out;
	}
	if (source_open(f->db, source_sql(&f->ev), f->ev.packed, f->nthreads, &src)) {
		sup_fail(s, "the trace cannot be read (%s)", sqlite3_errmsg(f->db));
		goto out;
	}
	int r;
	int64_t v[4];
	while ((r = source_next(&src, v)) > 0) {
		int64_t num = v[1], call = v[2];
		if (num < 0 || (uint64_t)num >= f->nthreads || call <= 0 || (uint64_t)call >= f->ncalls ||
		    !f->calls[call].kind || count[num] >= f->win[num].count) {
			sup_fail(s, "event %lld of the trace is damaged", (long long)v[0]);
			goto out;
		}
		struct call *k = &f->calls[call];
		struct det_sched e = {.obj = k->obj, .aux = k->aux, .kind = (uint16_t)k->kind};
		struct last_event d[2];
		order_next(&o, h->flags, &e, (uint32_t)num, count[num], d);
		for (int i = 0; i < 2; i++) {
			e.dep_thread[i] = d[i].thread;
			e.dep_idx[i] = (uint32_t)d[i].idx;
		}
		dep(arg, (uint32_t)num, count[num]++, &e);
	}
	if (r < 0) {
		sup_fail(s, "%s", src.err);
		goto out;
	}
	rc = 0;
out:
	source_close(&src);
	free(count);
	free(o.last_obj);
	free(o.marks);
	return rc;
}

SUP_EXPORT int det_sup_replay_packed(struct det_sup *s)
{
	return s->feed && s->feed->ev.packed;
}

SUP_EXPORT uint64_t det_sup_events_done(struct det_sup *s)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < s->hdr->threads_recorded; i++)
		n += atomic_load(&det_shm_slot(s->hdr, i)->done);
	return n;
}

/* --- the live follower's use of the windows (replayer/follow.c) --- */

int sup_feed_open(struct det_sup *s, uint32_t nthreads, int64_t max_obj)
{
	struct feeder *f = s->feed = calloc(1, sizeof(*f));
	if (!f)
		return sup_fail(s, "out of memory");
	f->nthreads = nthreads;
	f->max_obj = max_obj;
	f->fed = calloc(nthreads, sizeof(*f->fed));
	f->published = calloc(nthreads, sizeof(*f->published));
	f->done_seen = calloc(nthreads, sizeof(*f->done_seen));
	f->win = calloc(nthreads, sizeof(*f->win));
	f->order.max_obj = max_obj;
	f->order.last_obj = calloc((size_t)max_obj + 1, sizeof(*f->order.last_obj));
	f->order.marks = calloc(nthreads, 1);
	f->order.nthreads = nthreads;
	if (!f->fed || !f->published || !f->done_seen || !f->win || !f->order.last_obj || !f->order.marks)
		return sup_fail(s, "out of memory");
	for (uint32_t i = 0; i < nthreads; i++) {
		struct det_slot *sl = det_shm_slot(s->hdr, i);
		f->win[i] = (struct window){(struct det_sched *)((char *)s->hdr + sl->sched_off), sl->sched_count,
					    sl->sched_window};
	}
	return 0;
}

int sup_feed_room(struct det_sup *s, uint32_t t)
{
	struct feeder *f = s->feed;
	uint64_t idx = f->fed[t];
	uint32_t size = f->win[t].size;
	if (idx < f->done_seen[t] + size - 2)
		return 1;
	f->done_seen[t] = atomic_load(&det_shm_slot(s->hdr, t)->done);
	return idx < f->done_seen[t] + size - 2;
}

void sup_feed_put(struct det_sup *s, uint32_t t, uint64_t seq, int64_t result, uint16_t kind, uint32_t obj,
		  uint32_t aux, uint64_t data_off, uint32_t data_len)
{
	put_entry(s, t, seq, result, kind, obj, aux, data_off, data_len);
	s->feed->seen++;
}

void sup_feed_publish(struct det_sup *s)
{
	publish_all(s, UINT32_MAX);
}

uint64_t sup_feed_fed(struct det_sup *s, uint32_t t)
{
	return s->feed->fed[t];
}

void sup_feed_release(struct det_sup *s)
{
	feed_free(s);
}
