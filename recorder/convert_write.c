/*
 * recorder/convert_write.c - libdetsup.so: the converter's SQLite writer: the
 * rows of the trace (events, calls, sites, objects, data, marks, threads,
 * processes, modules), as the merge (convert_merge.c) places events.
 *
 * Rules of this file:
 *  - One transaction, prepared statements, multi-row inserts; indexes are
 *    made after the load. SQL text comes from schema.py (include/det/sup.h).
 *    event_rows' rows go to convert_btree.c's pages instead where it can
 *    (then the rest is committed, the pages placed, and the transaction
 *    begins again for what follows: late results, the packed schedule);
 *    the merge makes those pages itself, the writer thread only inserts.
 *  - The checksum lanes of event_rows and calls (supervisor/sums.h) are added
 *    up as rows are made, and corrected when a late result changes one, so
 *    the seal needs no second pass over the tables.
 *  - SQLite's inserts cost several times the merge, so while the merge runs
 *    every row it makes goes, in order, through a queue of ops to a writer
 *    thread, the only user of the connection meanwhile (the merge reads the
 *    log as the writer inserts). Ops run in the order they were made, so a
 *    late result's update follows its row. Without the thread (no CPU is
 *    free for it, it could not be made, or after the merge) ops run at
 *    once, alike: the trace is the same byte for byte.
 */
#include "convert.h"
#include "../supervisor/digest.h"
#include "../supervisor/sums.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value for key, or 0; with add, a new entry gets value *fresh. */
static int hmap_get(struct hmap *m, uint64_t key, uint32_t *val, int *found)
{
	if (m->used * 2 >= m->cap) {
		uint64_t ncap = m->cap ? m->cap * 2 : 1024;
		uint64_t *nk = calloc(ncap, sizeof(*nk));
		uint32_t *nv = calloc(ncap, sizeof(*nv));
		if (!nk || !nv) {
			free(nk);
			free(nv);
			return -1;
		}
		for (uint64_t i = 0; i < m->cap; i++) {
			if (!m->vals[i])
				continue;
			uint64_t j = det_mix64(m->keys[i]) & (ncap - 1);
			while (nv[j])
				j = (j + 1) & (ncap - 1);
			nk[j] = m->keys[i];
			nv[j] = m->vals[i];
		}
		free(m->keys);
		free(m->vals);
		m->keys = nk;
		m->vals = nv;
		m->cap = ncap;
	}
	uint64_t j = det_mix64(key) & (m->cap - 1);
	while (m->vals[j] && m->keys[j] != key)
		j = (j + 1) & (m->cap - 1);
	*found = m->vals[j] != 0;
	if (*found) {
		*val = m->vals[j];
		return 0;
	}
	m->keys[j] = key;
	m->vals[j] = *val;
	m->used++;
	return 0;
}

static int step(struct conv *c, sqlite3_stmt *st, const char *what)
{
	if (sqlite3_step(st) != SQLITE_DONE)
		return fail(c, "cannot store %s: %s", what, sqlite3_errmsg(c->db));
	sqlite3_reset(st);
	return 0;
}

/* Rows go in seq order. The first carries its seq; after it SQLite gives
 * each row the next rowid, which is its seq, and appends without a search. */
static int flush_rows(struct conv *c)
{
	int done = 0;
	if (c->pages) {
		for (; done < c->nrows; done++)
			if (pages_row(c, c->rows[done]))
				return -1;
		c->nrows = 0;
		return 0;
	}
	if (c->nrows && c->rows[0][0] == 0) {
		sqlite3_stmt *st = c->st_sql[DET_SQL_FIRST_EVENT];
		for (int k = 0; k < 5; k++)
			sqlite3_bind_int64(st, k + 1, c->rows[0][k]);
		if (step(c, st, "an event"))
			return -1;
		done = 1;
	}
	if (done == 0 && c->nrows == DET_CONVERT_BATCH) {
		sqlite3_stmt *st = c->st_sql[DET_SQL_EVENTS];
		for (int i = 0; i < DET_CONVERT_BATCH; i++)
			for (int k = 1; k < 5; k++)
				sqlite3_bind_int64(st, i * 4 + k, c->rows[i][k]);
		if (step(c, st, "events"))
			return -1;
		done = DET_CONVERT_BATCH;
	}
	for (; done < c->nrows; done++) {
		for (int k = 1; k < 5; k++)
			sqlite3_bind_int64(c->ev_one, k, c->rows[done][k]);
		if (step(c, c->ev_one, "an event"))
			return -1;
	}
	c->nrows = 0;
	return 0;
}

/* Do one op (the writer's thread, or the merge's when there is none). */
static int run_op(struct conv *c, uint32_t stmt, uint32_t nv, const int64_t *v, const void *blob, uint64_t nblob)
{
	if (stmt == OP_EVENT) {
		memcpy(c->rows[c->nrows++], v, sizeof(c->rows[0]));
		return c->nrows == DET_CONVERT_BATCH ? flush_rows(c) : 0;
	}
	if (stmt == DET_SQL_RESULT)
		for (int i = c->nrows - 1; i >= 0; i--)
			if (c->rows[i][0] == v[1]) { /* not inserted yet */
				c->rows[i][3] = v[0];
				return 0;
			}
	if (stmt == DET_SQL_RESULT && c->pages)
		return pages_late(c, v[1], v[0]);
	sqlite3_stmt *st = c->st_sql[stmt];
	for (uint32_t i = 0; i < nv; i++)
		sqlite3_bind_int64(st, (int)i + 1, v[i]);
	if (stmt == DET_SQL_DATA || stmt == DET_SQL_SCHED_CHUNK)
		sqlite3_bind_blob64(st, (int)nv + 1, blob, nblob, SQLITE_STATIC);
	static const char *const what[DET_SQL_COUNT] = {
		[DET_SQL_CALL] = "a call", [DET_SQL_SITE] = "a site", [DET_SQL_OBJECT] = "an object",
		[DET_SQL_DATA] = "input data", [DET_SQL_MARK] = "a mark", [DET_SQL_RESULT] = "a result",
		[DET_SQL_SCHED_CHUNK] = "the packed schedule",
	};
	return step(c, st, what[stmt] ? what[stmt] : "a row");
}

static void *writer_main(void *arg)
{
	struct conv *c = arg;
	struct writer *w = c->w;
	int failed = 0;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (w->tail == w->head && !w->done)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->tail == w->head)
			break;
		pthread_mutex_unlock(&w->mu);
		uint32_t k = (uint32_t)(w->tail % CHUNKS);
		for (uint32_t i = 0; i < w->chunk[k].n; i++) {
			struct op *o = &w->chunk[k].ops[i];
			if (!failed && run_op(c, o->stmt, o->nv, o->v, o->blob, o->nblob))
				failed = 1;
			free(o->blob);
			o->blob = NULL;
		}
		pthread_mutex_lock(&w->mu);
		w->chunk[k].n = 0;
		w->tail++;
		w->failed = failed;
		if (w->head - w->tail == CHUNKS / 2 || failed) /* (the merge waits for half) */
			pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* The merge's chunk is full (or the merge is over): it goes to the writer. */
static int hand_over(struct conv *c, int last)
{
	struct writer *w = c->w;
	pthread_mutex_lock(&w->mu);
	w->head++;
	w->done = last;
	pthread_cond_broadcast(&w->cv);
	if (w->head - w->tail == CHUNKS) /* full: on when half is written, so that
					   the writer never waits for the merge to be scheduled */
		while (w->head - w->tail > CHUNKS / 2 && !w->failed)
			pthread_cond_wait(&w->cv, &w->mu);
	int failed = w->failed;
	pthread_mutex_unlock(&w->mu);
	return failed ? -1 : 0;
}

/* Is a CPU free for a second thread? With every CPU busy the merge and the
 * writer only take turns, and the hand-overs cost (measured: ~10% more CPU,
 * up to 20% more time on a loaded machine); with one free, the merge and
 * the log's reading are hidden behind the inserts. /proc/loadavg's fourth
 * field counts the tasks running now, this one included. */
static int cpu_free(void)
{
	cpu_set_t cpus;
	int n = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
	unsigned running = 0;
	FILE *f = fopen("/proc/loadavg", "re");
	if (f) {
		if (fscanf(f, "%*s %*s %*s %u/", &running) != 1)
			running = 0;
		fclose(f);
	}
	return n >= 2 && running < (unsigned)n;
}

void writer_start(struct conv *c)
{
	/* DET_CONVERT_WRITER=0 or 1 decides instead (tests take both ways) */
	const char *force = getenv("DET_CONVERT_WRITER");
	/* DET_CONVERT_REPACK=1 makes the packed schedule from the rows after the
	 * merge, as a very late result does (tests compare both ways) */
	const char *repack = getenv("DET_CONVERT_REPACK");
	if (repack && *repack == '1')
		c->pack_lost = 1;
	if (force && *force ? *force == '0' : !cpu_free())
		return; /* ops run at once */
	struct writer *w = calloc(1, sizeof(*w));
	if (!w)
		return; /* ops run at once */
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	c->w = w;
	if (pthread_create(&w->thread, NULL, writer_main, c) != 0) {
		c->w = NULL;
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		free(w);
	}
}

/* The merge is over (or failed): the writer writes what it has and ends;
 * the rows still buffered are inserted here. */
int writer_end(struct conv *c)
{
	struct writer *w = c->w;
	int r = 0;
	if (w) {
		r = hand_over(c, 1);
		pthread_join(w->thread, NULL);
		r = r || w->failed ? -1 : 0;
		for (uint32_t k = 0; k < CHUNKS; k++) /* (ops left unwritten after a failure) */
			for (uint32_t i = 0; i < w->chunk[k].n; i++)
				free(w->chunk[k].ops[i].blob);
		c->w = NULL;
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		free(w);
	}
	return r || c->err[0] ? -1 : flush_rows(c);
}

/* Write a row: queued for the writer while it runs, else at once. */
int put(struct conv *c, uint32_t stmt, uint32_t nv, const int64_t *v, const void *blob, uint64_t nblob)
{
	/* (event rows made into pages, and their late results, are the merge's
	 * own work: no SQLite, nothing to hand over) */
	if (!c->w || (c->pages && (stmt == OP_EVENT || stmt == DET_SQL_RESULT)))
		return run_op(c, stmt, nv, v, blob, nblob);
	struct op o = {.stmt = stmt, .nv = nv, .blob = (void *)blob, .nblob = nblob};
	memcpy(o.v, v, nv * sizeof(*v));
	if (blob) { /* (the caller's buffer is reused) */
		if (!(o.blob = malloc(nblob ? nblob : 1)))
			return fail(c, "out of memory");
		memcpy(o.blob, blob, nblob);
	}
	struct writer *w = c->w;
	uint32_t k = (uint32_t)(w->head % CHUNKS);
	w->chunk[k].ops[w->chunk[k].n++] = o;
	return w->chunk[k].n == CHUNK_OPS ? hand_over(c, 0) : 0;
}

static int site_of(struct conv *c, uint64_t ra, uint32_t *site)
{
	if (!ra) {
		*site = 0;
		return 0;
	}
	int found;
	*site = (uint32_t)c->sites.used + 1;
	if (hmap_get(&c->sites, ra, site, &found))
		return fail(c, "out of memory");
	if (found)
		return 0;
	c->stats.sites++;
	return put(c, DET_SQL_SITE, 2, (const int64_t[]){*site, (int64_t)ra}, NULL, 0);
}

static int call_of(struct conv *c, uint32_t kind, uint32_t obj, uint32_t aux, uint32_t site, uint32_t *call)
{
	uint64_t key = det_mix64(((uint64_t)kind << 32 | obj) ^ det_mix64((uint64_t)aux << 32 | site));
	/* the hash is a hint: entries with the same hash chain through probing
	 * on key+1, +2, ... until the call's own fields match */
	for (;;) {
		int found;
		uint32_t id = (uint32_t)c->ncalls + 1;
		if (hmap_get(&c->calls, key, &id, &found))
			return fail(c, "out of memory");
		if (!found)
			break;
		uint64_t *k = &c->call_keys[(id - 1) * 4];
		if (k[0] == kind && k[1] == obj && k[2] == aux && k[3] == site) {
			*call = id;
			return 0;
		}
		key++;
	}
	if (grow((void **)&c->call_keys, &c->cap_calls, (c->ncalls + 1) * 4, sizeof(uint64_t)))
		return fail(c, "out of memory");
	uint64_t *k = &c->call_keys[c->ncalls * 4];
	k[0] = kind;
	k[1] = obj;
	k[2] = aux;
	k[3] = site;
	*call = (uint32_t)++c->ncalls;
	c->stats.calls++;
	det_sum_row(&c->stats.call_sum, (const int64_t[]){*call, kind, obj, aux}, 1);
	return put(c, DET_SQL_CALL, 5, (const int64_t[]){*call, kind, obj, aux, site}, NULL, 0);
}

/* An event already emitted turned out to return `result`. */
int late_result(struct conv *c, struct stream *s, uint64_t idx, int64_t result)
{
	if (!c->db)
		return 0; /* digest only: results are not part of it */
	if (idx >= s->emitted || s->emitted - idx > 16)
		return 0; /* not one of its recent events: cannot be ours */
	uint64_t seq = s->recent_seq[idx % 16];
	int64_t tid = s - c->st, call = s->recent_call[idx % 16];
	det_sum_row(&c->stats.event_sum, (const int64_t[]){(int64_t)seq, tid, call, s->recent_result[idx % 16]}, -1);
	det_sum_row(&c->stats.event_sum, (const int64_t[]){(int64_t)seq, tid, call, result}, 1);
	s->recent_result[idx % 16] = result;
	pack_fix(c, seq, result);
	if (c->w) { /* its row may not have left the merge's chunk yet */
		struct op *ops = c->w->chunk[c->w->head % CHUNKS].ops;
		for (uint32_t i = c->w->chunk[c->w->head % CHUNKS].n; i-- > 0;)
			if (ops[i].stmt == OP_EVENT && ops[i].v[0] == (int64_t)seq) {
				ops[i].v[3] = result;
				return 0;
			}
	}
	return put(c, DET_SQL_RESULT, 2, (const int64_t[]){result, (int64_t)seq}, NULL, 0);
}

static int emit_data(struct conv *c, struct stream *s, uint64_t seq)
{
	uint64_t len = 0;
	for (uint32_t i = 0; i < s->npend; i++) {
		const struct det_rec *p = s->pend[i];
		uint32_t k = p->flags <= DET_DATA_CHUNK ? p->flags : DET_DATA_CHUNK;
		if (p->kind != DET_REC_DATA || !k)
			continue;
		if (grow((void **)&c->data, &c->cap_data, len + k, 1))
			return fail(c, "out of memory");
		memcpy(c->data + len, p, k);
		len += k;
	}
	if (!len)
		return 0;
	c->stats.data_bytes += len;
	return put(c, DET_SQL_DATA, 1, (const int64_t[]){(int64_t)seq}, c->data, len);
}

static int emit_objects(struct conv *c, struct stream *s, int64_t seq)
{
	for (uint32_t i = 0; i < s->npend; i++) {
		const struct det_rec *p = s->pend[i];
		if (p->kind != DET_REC_OBJECT)
			continue;
		if (put(c, DET_SQL_OBJECT, 4, (const int64_t[]){p->obj, p->aux, (int64_t)p->ra, seq}, NULL, 0))
			return -1;
		c->stats.objects++;
	}
	return 0;
}

/* Write thread t's head into the trace as event seq. */
int store(struct conv *c, uint32_t t, uint64_t seq)
{
	struct stream *s = &c->st[t];
	const struct det_rec *e = s->head;
	uint32_t site = 0, call = 0;
	if (emit_objects(c, s, (int64_t)seq) || emit_data(c, s, seq))
		return -1;
	for (int i = 0; i < 4 && !call; i++) {
		const struct call_memo *m = &s->memo[i];
		if (m->call && m->ra == e->ra && m->kind == e->kind && m->obj == e->obj && m->aux == e->aux)
			call = m->call;
	}
	if (!call) {
		if (site_of(c, e->ra, &site) || call_of(c, e->kind, e->obj, e->aux, site, &call))
			return -1;
		s->memo[s->memo_next++ % 4] = (struct call_memo){e->ra, e->kind, e->obj, e->aux, call};
	}
	int64_t ts = s->head_ts;
	if (put(c, OP_EVENT, 5, (const int64_t[]){(int64_t)seq, t, call, s->head_result, ts - s->last_ts}, NULL, 0) ||
	    pack_event(c, seq, t, call, s->head_result))
		return -1;
	/* (what a late result corrects: late_result) */
	s->recent_call[s->emitted % 16] = call;
	s->recent_result[s->emitted % 16] = s->head_result;
	det_sum_row(&c->stats.event_sum, (const int64_t[]){(int64_t)seq, t, call, s->head_result}, 1);
	s->last_ts = ts;
	uint64_t win = seq / DET_MARK_WINDOW + 1;
	if (s->mark_win != win) {
		s->mark_win = win;
		if (put(c, DET_SQL_MARK, 4, (const int64_t[]){(int64_t)(win - 1), t, (int64_t)s->emitted, ts}, NULL, 0))
			return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* threads, processes, modules, objects of events never published */

int leftovers(struct conv *c)
{
	for (uint32_t t = 0; t < c->nst; t++) {
		struct stream *s = &c->st[t];
		/* objects declared for an event that never got published: those
		 * the last load_head gathered (T0's own, when it had no event),
		 * and any after it */
		const struct det_rec *e;
		while ((e = entry_at(c, s))) {
			advance(s);
			if (entry_bad(c, s, e))
				return -1;
			if (e->kind == DET_REC_OBJECT) {
				uint64_t cap = s->cap_pend;
				if (grow((void **)&s->pend, &cap, s->npend + 1, sizeof(*s->pend)))
					return fail(c, "out of memory");
				s->cap_pend = (uint32_t)cap;
				s->pend[s->npend++] = e;
			}
		}
		if (emit_objects(c, s, 0))
			return -1;
	}
	return 0;
}

int write_tables(struct conv *c)
{
	/* processes: 0 is the program, then in the order of their creating events */
	uint32_t np = c->nprocs;
	uint32_t *order = calloc(np + 1, sizeof(*order)), *number = calloc(np + 1, sizeof(*number));
	if (!order || !number) {
		free(order);
		free(number);
		return fail(c, "out of memory");
	}
	for (uint32_t i = 0; i < np; i++)
		order[i] = i;
	for (uint32_t i = 1; i < np; i++) { /* insertion sort: few processes */
		uint32_t x = order[i], j = i;
		int64_t kx = c->procs[x].first_thread < c->nst ? c->create_seq[c->procs[x].first_thread] : INT64_MAX;
		while (j > 1) {
			uint32_t y = order[j - 1];
			int64_t ky =
				c->procs[y].first_thread < c->nst ? c->create_seq[c->procs[y].first_thread] : INT64_MAX;
			if ((uint64_t)ky <= (uint64_t)kx)
				break;
			order[j] = y;
			j--;
		}
		order[j] = x;
	}
	for (uint32_t n = 0; n < np; n++)
		number[order[n]] = n;
	int r = 0;
	sqlite3_stmt *st = c->st_sql[DET_SQL_PROCESS];
	for (uint32_t n = 0; n < np && !r; n++) {
		const struct det_proc *p = &c->procs[order[n]];
		uint32_t idx = order[n];
		char exe[sizeof(p->exe) + 1];
		memcpy(exe, p->exe, sizeof(p->exe));
		exe[sizeof(p->exe)] = 0;
		sqlite3_bind_int64(st, 1, n);
		sqlite3_bind_int64(st, 2, idx && p->parent && p->parent - 1 < np ? (int64_t)number[p->parent - 1] : -1);
		sqlite3_bind_int64(st, 3, p->rec_pid);
		sqlite3_bind_int64(st, 4, idx && p->first_thread < c->nst ? c->create_seq[p->first_thread] : -1);
		sqlite3_bind_int64(st, 5, p->first_thread);
		sqlite3_bind_text(st, 6, exe, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 7, p->execs);
		if (p->status_known)
			sqlite3_bind_int64(st, 8, p->status);
		else
			sqlite3_bind_null(st, 8);
		r = step(c, st, "a process");
		c->stats.processes++;
	}
	st = c->st_sql[DET_SQL_THREAD];
	for (uint32_t t = 0; t < c->nst && !r; t++) {
		struct stream *s = &c->st[t];
		if (!s->has_ident)
			continue;
		sqlite3_bind_int64(st, 1, t);
		sqlite3_bind_int64(st, 2, t ? (int64_t)s->ident.parent : -1);
		sqlite3_bind_int64(st, 3, s->ident.ktid);
		sqlite3_bind_int64(st, 4, t ? c->create_seq[t] : -1);
		sqlite3_bind_int64(st, 5, s->ident.obj);
		sqlite3_bind_int64(st, 6, (int64_t)s->emitted);
		sqlite3_bind_int64(st, 7, s->ident.proc < np ? number[s->ident.proc] : 0);
		r = step(c, st, "a thread");
		c->stats.threads++;
	}
	free(order);
	free(number);
	st = c->st_sql[DET_SQL_MODULE];
	for (uint32_t i = 0; i < c->nmods && !r; i++) {
		char path[sizeof(c->mods[i].path) + 1];
		memcpy(path, c->mods[i].path, sizeof(c->mods[i].path));
		path[sizeof(c->mods[i].path)] = 0;
		sqlite3_bind_text(st, 1, path, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 2, (int64_t)c->mods[i].base);
		r = step(c, st, "a module");
	}
	return r;
}

/* ------------------------------------------------------------------ */

int open_db(struct conv *c, const char *db_path, const char *const *sql, uint32_t nsql)
{
	if (nsql != DET_SQL_COUNT)
		return fail(c, "libdetsup.so expects %d statements, got %u: mixed det builds?", DET_SQL_COUNT, nsql);
	if (sqlite3_open_v2(db_path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
		return fail(c, "cannot open %s: %s", db_path, sqlite3_errmsg(c->db));
	/* The log stays until the trace is done: a conversion cut short is
	 * made again from it, so the trace needs no journal meanwhile. Rows are
	 * appended: a small cache (spilled to the file as it fills) does, and
	 * spares faulting in a cache the size of the trace. */
	sqlite3_exec(c->db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-8192;"
			    "PRAGMA locking_mode=EXCLUSIVE",
		     NULL, NULL, NULL);
	for (int i = 0; i < DET_SQL_COUNT; i++) {
		if (i == DET_SQL_EVENTS || i == DET_SQL_EVENT_ROW || i == DET_SQL_INDEXES)
			continue;
		if (i >= DET_SQL_SCHED_ROWS && i <= DET_SQL_SCHED_META) {
			c->sched_sql[i - DET_SQL_SCHED_ROWS] = sql[i]; /* (pack_finish's) */
			if (i != DET_SQL_SCHED_CHUNK)
				continue;
		}
		if (sqlite3_prepare_v2(c->db, sql[i], -1, &c->st_sql[i], NULL) != SQLITE_OK)
			return fail(c, "cannot prepare \"%.60s\": %s", sql[i], sqlite3_errmsg(c->db));
	}
	size_t plen = strlen(sql[DET_SQL_EVENTS]), rlen = strlen(sql[DET_SQL_EVENT_ROW]);
	char *text = malloc(plen + DET_CONVERT_BATCH * (rlen + 1) + 1);
	if (!text)
		return fail(c, "out of memory");
	char *p = text;
	memcpy(p, sql[DET_SQL_EVENTS], plen);
	p += plen;
	for (int i = 0; i < DET_CONVERT_BATCH; i++) {
		if (i)
			*p++ = ',';
		memcpy(p, sql[DET_SQL_EVENT_ROW], rlen);
		p += rlen;
	}
	*p = 0;
	int r = sqlite3_prepare_v2(c->db, text, -1, &c->st_sql[DET_SQL_EVENTS], NULL);
	if (r == SQLITE_OK) {
		memcpy(text + plen, sql[DET_SQL_EVENT_ROW], rlen + 1);
		r = sqlite3_prepare_v2(c->db, text, -1, &c->ev_one, NULL);
	}
	free(text);
	if (r != SQLITE_OK)
		return fail(c, "cannot prepare the event insert: %s", sqlite3_errmsg(c->db));
	c->indexes = sql[DET_SQL_INDEXES];
	return 0;
}

void db_close(struct conv *c)
{
	for (int i = 0; i < DET_SQL_COUNT; i++) {
		sqlite3_finalize(c->st_sql[i]);
		c->st_sql[i] = NULL;
	}
	sqlite3_finalize(c->ev_one);
	c->ev_one = NULL;
	if (c->db)
		sqlite3_close(c->db);
	c->db = NULL;
}

int store_digest(struct conv *c)
{
	char hex[17];
	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)c->stats.schedule);
	sqlite3_stmt *st = c->st_sql[DET_SQL_META];
	sqlite3_bind_text(st, 1, "schedule_digest", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, hex, -1, SQLITE_TRANSIENT);
	return step(c, st, "the schedule digest");
}
