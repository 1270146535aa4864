/*
 * replayer/schedule.c - libdetsup.so: turn a trace into the replay region.
 *
 * Rules of this file:
 *  - Each event gets at most two prerequisites on other threads and at most
 *    two threads to wake (include/det/shm.h struct det_sched):
 *      ordered: its predecessor in the recorded global order;
 *      relaxed: its predecessor on each object it touches (its object, and
 *               the mutex of a condition wait), which also carries the
 *               create -> start and exit -> join edges (a thread's events
 *               all name the thread's own object).
 *    Program order within a thread needs no edge.
 *  - A trace whose rows contradict themselves (indices out of order, unknown
 *    threads) is refused with a message, never half-loaded.
 */
#include "../recorder/supervisor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t kind_role[DET_KIND_LIMIT] = {
#define DET_EVENT(name, number, objkind, role, description) [number] = DET_ROLE_##role + 1,
#include "det/events.def"
};

/* Inputs carry their values: replay needs no cross-thread order for them. */
static int unordered(uint16_t kind)
{
	int role = kind < DET_KIND_LIMIT ? kind_role[kind] - 1 : -1;
	return role == DET_ROLE_INPUT || kind == DET_EV_SEND;
}

/* Does this kind's aux name a second object (the mutex of a condition wait)? */
static int aux_is_object(uint16_t kind)
{
	int role = kind < DET_KIND_LIMIT ? kind_role[kind] - 1 : -1;
	return (role == DET_ROLE_WAIT || role == DET_ROLE_WAKE) && kind >= DET_EV_COND_WAIT &&
	       kind <= DET_EV_COND_WAKE;
}

struct last_event {
	uint32_t thread; /* + 1; 0: none yet */
	uint32_t pad;
	uint64_t idx;
	struct det_sched *ev;
};

static void add_wake(struct det_sched *e, uint32_t thread)
{
	for (int i = 0; i < 2; i++) {
		if (e->wake[i] == thread + 1)
			return;
		if (!e->wake[i]) {
			e->wake[i] = thread + 1;
			return;
		}
	}
	/* Cannot happen: an event touches at most two objects, each with one
	 * successor. Keep the build honest if that ever changes. */
	abort();
}

static void add_dep(struct det_sched *e, int slot, struct last_event *prev, uint32_t thread)
{
	if (!prev->thread || prev->thread == thread + 1)
		return;
	e->dep_thread[slot] = prev->thread;
	e->dep_idx[slot] = (uint32_t)prev->idx;
	add_wake(prev->ev, thread);
}

static int query(struct det_sup *s, sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
	if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK)
		return sup_fail(s, "the trace cannot be read (%s)", sqlite3_errmsg(db));
	return 0;
}

SUP_EXPORT struct det_sup *det_sup_replay_new(const char *db_path, const char *threads_sql,
					      const char *max_obj_sql, const char *events_sql,
					      const char *data_size_sql, const char *data_sql, uint32_t flags,
					      char *err, uint32_t errlen)
{
	struct det_sup *s = sup_alloc();
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL, *dst = NULL;
	int64_t data_bytes = 0;
	uint64_t *counts = NULL;
	uint32_t *thread_obj = NULL;
	struct det_sched **next = NULL;
	struct last_event *last_obj = NULL;
	uint32_t nthreads = 0;
	int64_t max_obj = 0;
	uint64_t total = 0;
	int ok = 0;

	if (!s)
		return NULL;
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		sup_fail(s, "cannot open %s: %s", db_path, sqlite3_errmsg(db));
		goto out;
	}
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
			uint64_t *c = realloc(counts, ncap * sizeof(*c));
			if (!o || !c) {
				free(o ? o : thread_obj);
				free(c ? c : counts);
				thread_obj = NULL;
				counts = NULL;
				sup_fail(s, "out of memory");
				goto out;
			}
			memset(o + cap, 0, (ncap - cap) * sizeof(*o));
			memset(c + cap, 0, (ncap - cap) * sizeof(*c));
			thread_obj = o;
			counts = c;
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
		max_obj = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (query(s, db, data_size_sql, &st))
		goto out;
	if (sqlite3_step(st) == SQLITE_ROW)
		data_bytes = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (max_obj < 0 || max_obj > (1ll << 31) || data_bytes < 0) {
		sup_fail(s, "the trace has an impossible object id %lld", (long long)max_obj);
		goto out;
	}

	struct sup_layout l = {
		.mode = DET_MODE_REPLAY,
		.max_threads = nthreads,
		.rings = 0,
		.objects_cap = sup_pow2((uint64_t)max_obj * 2 + 64, 1024),
		.ring_entries = 0,
		.objrev_count = (uint64_t)max_obj,
		.sched_entries = total,
		.data_bytes = (uint64_t)data_bytes,
	};
	if (sup_map(s, &l))
		goto out;
	struct det_shm_header *h = s->hdr;
	h->flags = flags;
	h->threads_recorded = nthreads;
	h->events_recorded = total;

	/* Lay the per-thread arrays out one after the other. */
	next = calloc(nthreads, sizeof(*next));
	last_obj = calloc((size_t)max_obj + 1, sizeof(*last_obj));
	if (!next || !last_obj) {
		sup_fail(s, "out of memory");
		goto out;
	}
	uint64_t off = h->sched_off;
	for (uint32_t i = 0; i < nthreads; i++) {
		struct det_slot *sl = det_shm_slot(h, i);
		sl->num = i;
		sl->obj = thread_obj[i];
		sl->sched_off = off;
		sl->sched_count = counts[i];
		next[i] = (struct det_sched *)((char *)h + off);
		off += counts[i] * sizeof(struct det_sched);
	}

	/* events: (seq, thread, idx, kind, obj, aux, result) in seq order */
	if (query(s, db, events_sql, &st) || query(s, db, data_sql, &dst))
		goto out;
	int drc = sqlite3_step(dst);
	uint64_t data_at = s->data_off;
	struct last_event prev = {0};
	uint64_t seen = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t seq = sqlite3_column_int64(st, 0);
		int64_t num = sqlite3_column_int64(st, 1);
		int64_t idx = sqlite3_column_int64(st, 2);
		int64_t kind = sqlite3_column_int64(st, 3);
		int64_t obj = sqlite3_column_int64(st, 4);
		int64_t aux = sqlite3_column_int64(st, 5);
		if (num < 0 || (uint64_t)num >= nthreads || idx < 0 || obj < 0 || obj > max_obj || kind <= 0 ||
		    kind >= DET_KIND_LIMIT) {
			sup_fail(s, "event %lld of the trace is damaged (thread %lld, kind %lld, object %lld)",
				 (long long)seq, (long long)num, (long long)kind, (long long)obj);
			goto out;
		}
		struct det_slot *sl = det_shm_slot(h, (uint32_t)num);
		struct det_sched *base = (struct det_sched *)((char *)h + sl->sched_off);
		if ((uint64_t)idx >= sl->sched_count || &base[idx] != next[num]) {
			sup_fail(s, "event %lld of the trace is out of order for T%lld (index %lld)",
				 (long long)seq, (long long)num, (long long)idx);
			goto out;
		}
		struct det_sched *e = next[num]++;
		e->seq = (uint64_t)seq;
		e->result = sqlite3_column_int64(st, 6);
		e->obj = (uint32_t)obj;
		e->aux = (uint32_t)aux;
		e->kind = (uint16_t)kind;
		uint32_t t = (uint32_t)num;
		/* this event's data: the data rows come in the same seq order */
		while (drc == SQLITE_ROW && sqlite3_column_int64(dst, 0) < seq)
			drc = sqlite3_step(dst);
		if (drc == SQLITE_ROW && sqlite3_column_int64(dst, 0) == seq) {
			int n = sqlite3_column_bytes(dst, 1);
			if (data_at + (uint64_t)n > s->data_off + (uint64_t)data_bytes) {
				sup_fail(s, "the trace's data table is damaged");
				goto out;
			}
			memcpy((char *)h + data_at, sqlite3_column_blob(dst, 1), (size_t)n);
			e->data_off = data_at;
			e->data_len = (uint32_t)n;
			data_at += (uint64_t)n;
			drc = sqlite3_step(dst);
		}
		/* (an ordered replay keeps a pipe read in its place: it consumes
		 * what another process wrote, and what the reader does next, like
		 * closing its end, must not overtake the writer; a reader running
		 * ahead made a pipeline's writer die of SIGPIPE early) */
		if (unordered((uint16_t)kind) && !(flags & DET_F_STRICT) &&
		    !(kind == DET_EV_PIPE_READ && !(flags & DET_F_RELAXED))) {
			seen++;
			continue;
		}
		if (flags & DET_F_RELAXED) {
			add_dep(e, 0, &last_obj[obj], t);
			last_obj[obj] = (struct last_event){t + 1, 0, (uint64_t)idx, e};
			if (aux_is_object((uint16_t)kind) && aux > 0 && aux <= max_obj && aux != obj) {
				add_dep(e, 1, &last_obj[aux], t);
				last_obj[aux] = (struct last_event){t + 1, 0, (uint64_t)idx, e};
			}
		} else {
			add_dep(e, 0, &prev, t);
			prev = (struct last_event){t + 1, 0, (uint64_t)idx, e};
		}
		seen++;
	}
	if (rc != SQLITE_DONE) {
		sup_fail(s, "the trace cannot be read (%s)", sqlite3_errmsg(db));
		goto out;
	}
	if (seen != total) {
		sup_fail(s, "the trace has %llu events but its threads account for %llu",
			 (unsigned long long)seen, (unsigned long long)total);
		goto out;
	}
	ok = 1;
out:
	if (st)
		sqlite3_finalize(st);
	if (dst)
		sqlite3_finalize(dst);
	sqlite3_close(db);
	free(counts);
	free(thread_obj);
	free(next);
	free(last_obj);
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

SUP_EXPORT uint64_t det_sup_events_done(struct det_sup *s)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < s->hdr->threads_recorded; i++)
		n += atomic_load(&det_shm_slot(s->hdr, i)->done);
	return n;
}
