/*
 * recorder/drain.c - libdetsup.so: move events from the threads' rings into
 * the SQLite trace, in global order, while the program runs.
 *
 * Rules of this file:
 *  - Rows are inserted in seq order (a k-way merge of the rings), so SQLite
 *    appends and its pages stay full.
 *  - An event may be emitted only when no thread can still publish a smaller
 *    seq: the watermark below. When the program is dead, everything published
 *    is emitted and events that were never published are simply absent.
 *  - A ring is handed back to the pool only after its thread is gone from the
 *    kernel and the ring is empty.
 */
#include "supervisor.h"

#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#define BATCH 64
#define EV_COLS 9

static int prepare(struct det_sup *s, const char *sql, sqlite3_stmt **st)
{
	if (!sql) {
		*st = NULL;
		return 0;
	}
	if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK)
		return sup_fail(s, "cannot prepare \"%.60s\": %s", sql, sqlite3_errmsg(s->db));
	return 0;
}

SUP_EXPORT int det_drain_open(struct det_sup *s, const char *db_path, const char *event_prefix,
			      const char *event_row, const char *object_sql, const char *site_sql,
			      const char *thread_sql, const char *result_sql, const char *data_sql)
{
	if (sqlite3_open_v2(db_path, &s->db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
		return sup_fail(s, "cannot open %s: %s", db_path, sqlite3_errmsg(s->db));
	sqlite3_busy_timeout(s->db, 10000);
	sqlite3_exec(s->db, "PRAGMA synchronous=OFF", NULL, NULL, NULL);

	size_t plen = strlen(event_prefix), rlen = strlen(event_row);
	char *sql = malloc(plen + BATCH * (rlen + 1) + 1);
	if (!sql)
		return sup_fail(s, "out of memory");
	char *p = sql;
	memcpy(p, event_prefix, plen);
	p += plen;
	for (int i = 0; i < BATCH; i++) {
		if (i)
			*p++ = ',';
		memcpy(p, event_row, rlen);
		p += rlen;
	}
	*p = 0;
	int r = prepare(s, sql, &s->ev_batch);
	free(sql);
	if (r)
		return r;
	sql = malloc(plen + rlen + 1);
	if (!sql)
		return sup_fail(s, "out of memory");
	memcpy(sql, event_prefix, plen);
	memcpy(sql + plen, event_row, rlen + 1);
	r = prepare(s, sql, &s->ev_one);
	free(sql);
	if (r || prepare(s, object_sql, &s->obj_stmt) || prepare(s, site_sql, &s->site_stmt) ||
	    prepare(s, thread_sql, &s->thread_stmt) || prepare(s, result_sql, &s->result_stmt) ||
	    prepare(s, data_sql, &s->data_stmt))
		return -1;
	s->tsc_start = __rdtsc();
	s->mono_start = sup_mono_ns();
	return 0;
}

SUP_EXPORT void det_drain_stop(struct det_sup *s, int dead)
{
	atomic_store(&s->dead, dead);
	atomic_store(&s->stop, 1);
	atomic_fetch_add(&s->hdr->drain_kick, 1);
	syscall(SYS_futex, &s->hdr->drain_kick, FUTEX_WAKE, 1, NULL, NULL, 0);
}

SUP_EXPORT void det_drain_stats(struct det_sup *s, struct det_drain_stats *out)
{
	*out = s->stats;
}

/* TSC ticks -> ns since the runtime attached. Calibrated once, over at least
 * 5 ms since the recording began. */
static uint64_t ts_ns(struct det_sup *s, uint64_t tsc)
{
	if (s->hdr->flags & DET_F_TS_NS)
		return tsc > s->hdr->tsc0 ? tsc - s->hdr->tsc0 : 0;
	if (s->tsc_per_ns == 0) {
		uint64_t now = sup_mono_ns();
		if (now - s->mono_start < 5000000) {
			struct timespec d = {0, (long)(5000000 - (now - s->mono_start))};
			nanosleep(&d, NULL);
		}
		uint64_t t = __rdtsc();
		now = sup_mono_ns();
		s->tsc_per_ns = (double)(t - s->tsc_start) / (double)(now - s->mono_start);
		if (s->tsc_per_ns <= 0)
			s->tsc_per_ns = 1;
	}
	uint64_t base = s->hdr->tsc0;
	return tsc > base ? (uint64_t)((double)(tsc - base) / s->tsc_per_ns) : 0;
}

/* ra -> site number, in order of first appearance. */
static int site_of(struct det_sup *s, uint64_t ra, int64_t *site)
{
	struct site_map *m = &s->sites;
	if (!ra) {
		*site = 0;
		return 0;
	}
	if (m->used * 2 >= m->cap) {
		uint64_t ncap = m->cap ? m->cap * 2 : 1024;
		uint64_t *nk = calloc(ncap, sizeof(*nk));
		uint32_t *ni = calloc(ncap, sizeof(*ni));
		if (!nk || !ni) {
			free(nk);
			free(ni);
			return sup_fail(s, "out of memory");
		}
		for (uint64_t i = 0; i < m->cap; i++) {
			if (!m->keys[i])
				continue;
			uint64_t j = (m->keys[i] * 0x9E3779B97F4A7C15ull) & (ncap - 1);
			while (nk[j])
				j = (j + 1) & (ncap - 1);
			nk[j] = m->keys[i];
			ni[j] = m->ids[i];
		}
		free(m->keys);
		free(m->ids);
		m->keys = nk;
		m->ids = ni;
		m->cap = ncap;
	}
	uint64_t j = (ra * 0x9E3779B97F4A7C15ull) & (m->cap - 1);
	while (m->keys[j] && m->keys[j] != ra)
		j = (j + 1) & (m->cap - 1);
	if (m->keys[j]) {
		*site = m->ids[j];
		return 0;
	}
	m->keys[j] = ra;
	m->ids[j] = (uint32_t)++m->used;
	*site = m->ids[j];
	s->stats.sites++;
	sqlite3_bind_int64(s->site_stmt, 1, *site);
	sqlite3_bind_int64(s->site_stmt, 2, (int64_t)ra);
	if (sqlite3_step(s->site_stmt) != SQLITE_DONE)
		return sup_fail(s, "cannot store a site: %s", sqlite3_errmsg(s->db));
	sqlite3_reset(s->site_stmt);
	return 0;
}

struct row {
	int64_t v[EV_COLS];
};

static int flush_rows(struct det_sup *s, struct row *rows, int n)
{
	int done = 0;
	while (n - done >= BATCH) {
		for (int i = 0; i < BATCH; i++)
			for (int c = 0; c < EV_COLS; c++)
				sqlite3_bind_int64(s->ev_batch, i * EV_COLS + c + 1, rows[done + i].v[c]);
		if (sqlite3_step(s->ev_batch) != SQLITE_DONE)
			return sup_fail(s, "cannot store events: %s", sqlite3_errmsg(s->db));
		sqlite3_reset(s->ev_batch);
		done += BATCH;
	}
	for (; done < n; done++) {
		for (int c = 0; c < EV_COLS; c++)
			sqlite3_bind_int64(s->ev_one, c + 1, rows[done].v[c]);
		if (sqlite3_step(s->ev_one) != SQLITE_DONE)
			return sup_fail(s, "cannot store an event: %s", sqlite3_errmsg(s->db));
		sqlite3_reset(s->ev_one);
	}
	return 0;
}

/* A thread's unread part of its ring. */
struct cursor {
	uint32_t num;
	struct det_slot *slot;
	struct det_rec *ring;
	uint64_t pos, end; /* absolute entry counters */
	uint64_t ev;       /* position of the next event entry */
	uint64_t seq;      /* its seq */
};

static inline struct det_rec *at(struct det_sup *s, struct cursor *c, uint64_t pos)
{
	return &c->ring[pos % s->hdr->ring_entries];
}

/* Is an event published at c->pos (after take_meta)? */
static int cursor_next(struct det_sup *s, struct cursor *c)
{
	if (c->pos >= c->end)
		return 0;
	c->ev = c->pos;
	c->seq = at(s, c, c->pos)->seq;
	return 1;
}

static void heap_push(struct cursor **h, int *n, struct cursor *c)
{
	int i = (*n)++;
	while (i > 0) {
		int parent = (i - 1) / 2;
		if (h[parent]->seq <= c->seq)
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i] = c;
}

static struct cursor *heap_pop(struct cursor **h, int *n)
{
	struct cursor *top = h[0], *last = h[--(*n)];
	int i = 0;
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;
		uint64_t ms = last->seq;
		if (l < *n && h[l]->seq < ms) {
			m = l;
			ms = h[l]->seq;
		}
		if (r < *n && h[r]->seq < ms)
			m = r;
		if (m == i)
			break;
		h[i] = h[m];
		i = m;
	}
	if (*n)
		h[i] = last;
	return top;
}

static int emit_object(struct det_sup *s, struct det_rec *r, uint64_t first_seq)
{
	s->stats.objects++;
	sqlite3_bind_int64(s->obj_stmt, 1, r->obj);
	sqlite3_bind_int64(s->obj_stmt, 2, r->aux);
	sqlite3_bind_int64(s->obj_stmt, 3, (int64_t)r->ra);
	sqlite3_bind_int64(s->obj_stmt, 4, (int64_t)first_seq);
	if (sqlite3_step(s->obj_stmt) != SQLITE_DONE)
		return sup_fail(s, "cannot store an object: %s", sqlite3_errmsg(s->db));
	sqlite3_reset(s->obj_stmt);
	return 0;
}

/* A release-like event failed: fix its result, in the batch or the table. */
static int apply_result(struct det_sup *s, struct row *rows, int nrows, struct det_rec *r)
{
	for (int i = nrows - 1; i >= 0; i--)
		if (rows[i].v[0] == (int64_t)r->seq) {
			rows[i].v[5] = r->result;
			return 0;
		}
	sqlite3_bind_int64(s->result_stmt, 1, r->result);
	sqlite3_bind_int64(s->result_stmt, 2, (int64_t)r->seq);
	if (sqlite3_step(s->result_stmt) != SQLITE_DONE)
		return sup_fail(s, "cannot store a result: %s", sqlite3_errmsg(s->db));
	sqlite3_reset(s->result_stmt);
	return 0;
}

/*
 * Take the entries that come before the thread's next event off its ring:
 * objects and data wait in `pending` for that event; a result belongs to an
 * event already emitted. This frees ring space even while the event itself
 * is held back by the watermark.
 */
static int take_meta(struct det_sup *s, struct cursor *c, struct row *rows, int nrows)
{
	struct pending *p = &s->pending[c->num];
	for (; c->pos < c->end; c->pos++) {
		struct det_rec *e = at(s, c, c->pos);
		if (e->kind < DET_KIND_LIMIT)
			break;
		if (e->kind == DET_REC_OBJECT) {
			if (p->nobjs == p->cap_objs) {
				uint32_t ncap = p->cap_objs ? p->cap_objs * 2 : 8;
				struct det_rec *n = realloc(p->objs, ncap * sizeof(*n));
				if (!n)
					return sup_fail(s, "out of memory");
				p->objs = n;
				p->cap_objs = ncap;
			}
			p->objs[p->nobjs++] = *e;
		} else if (e->kind == DET_REC_RESULT) {
			int r = apply_result(s, rows, nrows, e);
			if (r)
				return r;
		} else if (e->kind == DET_REC_DATA) {
			uint32_t k = e->len <= DET_DATA_CHUNK ? e->len : DET_DATA_CHUNK;
			if (p->len + k > p->cap) {
				uint64_t ncap = p->cap ? p->cap * 2 : 4096;
				while (ncap < p->len + k)
					ncap *= 2;
				uint8_t *n = realloc(p->data, ncap);
				if (!n)
					return sup_fail(s, "out of memory");
				p->data = n;
				p->cap = ncap;
			}
			memcpy(p->data + p->len, e, k);
			p->len += k;
		}
	}
	return 0;
}

/* The event is being emitted: its objects and its data go with it. */
static int emit_pending(struct det_sup *s, uint32_t num, struct det_rec *ev)
{
	struct pending *p = &s->pending[num];
	for (uint32_t i = 0; i < p->nobjs; i++) {
		int r = emit_object(s, &p->objs[i], ev ? ev->seq : 0);
		if (r)
			return r;
	}
	p->nobjs = 0;
	if (!ev) {
		p->len = 0; /* data of an event that never got published */
		return 0;
	}
	if (ev->len != p->len)
		return sup_fail(s, "T%u's event %llu says %u bytes of data, its ring had %llu", num,
				(unsigned long long)ev->seq, ev->len, (unsigned long long)p->len);
	if (!p->len)
		return 0;
	if (s->data_stmt) {
		sqlite3_bind_int64(s->data_stmt, 1, (int64_t)ev->seq);
		sqlite3_bind_blob64(s->data_stmt, 2, p->data, p->len, SQLITE_STATIC);
		if (sqlite3_step(s->data_stmt) != SQLITE_DONE)
			return sup_fail(s, "cannot store input data: %s", sqlite3_errmsg(s->db));
		sqlite3_reset(s->data_stmt);
	}
	s->stats.payload_bytes += p->len;
	p->len = 0;
	return 0;
}

static int emit_thread(struct det_sup *s, struct det_slot *sl)
{
	sqlite3_bind_int64(s->thread_stmt, 1, sl->num);
	sqlite3_bind_int64(s->thread_stmt, 2, sl->num ? (int64_t)sl->parent : -1);
	sqlite3_bind_int64(s->thread_stmt, 3, sl->ktid);
	sqlite3_bind_int64(s->thread_stmt, 4, sl->num ? (int64_t)sl->create_seq : -1);
	sqlite3_bind_int64(s->thread_stmt, 5, sl->obj);
	if (sqlite3_step(s->thread_stmt) != SQLITE_DONE)
		return sup_fail(s, "cannot store a thread: %s", sqlite3_errmsg(s->db));
	sqlite3_reset(s->thread_stmt);
	return 0;
}

/* The kernel thread behind a slot is gone (or a zombie: it runs nothing). */
static int thread_gone(struct det_sup *s, struct det_slot *sl)
{
	struct det_shm_header *h = s->hdr;
	pid_t pid = sl->proc < h->max_procs ? atomic_load(&det_shm_proc(h, sl->proc)->pid) : 0;
	if (!pid)
		pid = (pid_t)atomic_load(&h->attached);
	if (syscall(SYS_tgkill, pid, sl->ktid, 0) != 0)
		return errno == ESRCH;
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, sl->ktid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *paren = strrchr(buf, ')');
	return paren && (paren[2] == 'Z' || paren[2] == 'X');
}

static void release_rings(struct det_sup *s, uint32_t nthreads)
{
	struct det_shm_header *h = s->hdr;
	/* now and then, threads that died without saying so (a child process
	 * killed by a signal) */
	int check_running = s->stats.passes % 128 == 0;
	for (uint32_t i = 0; i < nthreads; i++) {
		struct det_slot *sl = det_shm_slot(h, i);
		uint32_t st = atomic_load(&sl->state);
		if (!sl->ring || (st != DET_TS_EXITING && !(check_running && i && st == DET_TS_RUNNING)))
			continue;
		if (!thread_gone(s, sl))
			continue; /* the kernel thread may still run destructors */
		if (atomic_load(&sl->head) != atomic_load(&sl->tail))
			continue; /* drain it first */
		uint32_t ring = sl->ring - 1;
		sl->ring = 0;
		/* a thread that died running (killed with its process) keeps that
		 * state: the trace says where it was when the program ended */
		if (st == DET_TS_EXITING)
			atomic_store(&sl->state, DET_TS_FREE);
		atomic_store(det_shm_ring_owner(h, ring), 0);
	}
}

/* A thread seen holding an unpublished sequence number for a while may have
 * died holding it (its process was killed, or exec'd under it): then the
 * event will never come, and must not hold the others back. */
static int dead_holder(struct det_sup *s, struct det_slot *sl, uint32_t num, uint64_t last)
{
	uint64_t now = sup_mono_ns();
	if (s->busy_seq[num] != last + 1) {
		s->busy_seq[num] = last + 1;
		s->busy_since[num] = now;
		return 0;
	}
	if (now - s->busy_since[num] < 50 * 1000 * 1000 || !thread_gone(s, sl))
		return 0;
	atomic_store(&sl->busy, 0);
	return 1;
}

/* One pass: emit every event below the watermark. */
static int drain_pass(struct det_sup *s, int final)
{
	struct det_shm_header *h = s->hdr;
	uint64_t clock = atomic_load(&h->clock);
	uint64_t watermark = final ? UINT64_MAX : (clock & DET_SEQ_MASK);
	uint32_t nthreads = (uint32_t)(clock >> DET_SEQ_BITS);
	if (nthreads > h->max_threads)
		nthreads = h->max_threads;
	if (nthreads == 0)
		return 0;

	struct cursor *cur = calloc(nthreads, sizeof(*cur));
	struct cursor **heap = calloc(nthreads, sizeof(*heap));
	struct row *rows = malloc(sizeof(*rows) * 1024);
	int nheap = 0, nrows = 0, ret = 0, began = 0;
	if (!cur || !heap || !rows) {
		ret = sup_fail(s, "out of memory");
		goto out;
	}
	/* Read each thread's busy flag before its head; see recorder/runtime.c
	 * take_seq() for why this bounds every seq still to be published. */
	for (uint32_t i = 0; i < nthreads; i++) {
		struct det_slot *sl = det_shm_slot(h, i);
		struct cursor *c = &cur[i];
		c->num = i;
		c->slot = sl;
		uint32_t ring = sl->ring;
		if (!ring)
			continue;
		uint32_t busy = atomic_load_explicit(&sl->busy, memory_order_acquire);
		uint64_t last = atomic_load_explicit(&sl->last_seq, memory_order_acquire);
		c->end = atomic_load_explicit(&sl->head, memory_order_acquire);
		c->pos = atomic_load_explicit(&sl->tail, memory_order_relaxed);
		c->ring = det_shm_ring(h, ring - 1);
		if (busy && !final && last < watermark && !dead_holder(s, sl, i, last))
			watermark = last;
		if ((ret = take_meta(s, c, rows, nrows)))
			goto out;
		if (cursor_next(s, c))
			heap_push(heap, &nheap, c);
	}
	while (nheap && heap[0]->seq < watermark) {
		struct cursor *c = heap_pop(heap, &nheap);
		if (!began) {
			if (sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
				ret = sup_fail(s, "cannot write the trace: %s", sqlite3_errmsg(s->db));
				goto out;
			}
			began = 1;
		}
		struct det_rec *r = at(s, c, c->ev);
		if ((ret = emit_pending(s, c->num, r)))
			goto out;
		int64_t site = 0;
		if ((ret = site_of(s, r->ra, &site)))
			goto out;
		if (s->thread_idx[c->num] == 0 && (ret = emit_thread(s, c->slot)))
			goto out;
		struct row *row = &rows[nrows++];
		row->v[0] = (int64_t)r->seq;
		row->v[1] = c->num;
		row->v[2] = (int64_t)s->thread_idx[c->num]++;
		row->v[3] = r->kind;
		row->v[4] = r->obj;
		row->v[5] = r->result;
		row->v[6] = r->aux;
		row->v[7] = site;
		row->v[8] = (int64_t)ts_ns(s, r->ts);
		s->stats.events++;
		c->pos = c->ev + 1;
		if (nrows == 1024) {
			if ((ret = flush_rows(s, rows, nrows)))
				goto out;
			nrows = 0;
		}
		if ((ret = take_meta(s, c, rows, nrows)))
			goto out;
		if (cursor_next(s, c))
			heap_push(heap, &nheap, c);
	}
	if (final) {
		/* Objects and data of events that never got published. */
		for (uint32_t i = 0; i < nthreads; i++) {
			if (!cur[i].ring || !(s->pending[i].nobjs || s->pending[i].len))
				continue;
			if (!began && sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK)
				began = 1;
			if ((ret = emit_pending(s, i, NULL)))
				goto out;
		}
	}
	if ((ret = flush_rows(s, rows, nrows)))
		goto out;
out:
	if (began && sqlite3_exec(s->db, ret ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL) != SQLITE_OK && !ret)
		ret = sup_fail(s, "cannot commit to the trace: %s", sqlite3_errmsg(s->db));
	/* Hand space back to the threads, and wake any that wait for it. */
	if (cur && !ret) {
		for (uint32_t i = 0; i < nthreads; i++) {
			struct cursor *c = &cur[i];
			if (!c->ring)
				continue;
			atomic_store_explicit(&c->slot->tail, c->pos, memory_order_release);
			if (atomic_load(&c->slot->waiting) && atomic_exchange(&c->slot->waiting, 0))
				syscall(SYS_futex, &c->slot->waiting, FUTEX_WAKE, 1, NULL, NULL, 0);
		}
		release_rings(s, nthreads);
	}
	s->stats.threads = nthreads;
	s->stats.passes++;
	free(cur);
	free(heap);
	free(rows);
	return ret;
}

SUP_EXPORT int det_drain_run(struct det_sup *s)
{
	for (;;) {
		uint32_t kick = atomic_load(&s->hdr->drain_kick);
		int stop = atomic_load(&s->stop);
		int final = stop && atomic_load(&s->dead);
		uint64_t t0 = sup_mono_ns();
		int r = drain_pass(s, final);
		if (r == 0 && stop && !final)
			r = drain_pass(s, 1);
		s->stats.busy_ns += sup_mono_ns() - t0;
		if (r < 0)
			return -1;
		if (stop)
			return 0;
		struct timespec ts = {0, 2 * 1000 * 1000};
		syscall(SYS_futex, &s->hdr->drain_kick, FUTEX_WAIT, kick, &ts, NULL, 0);
	}
}
