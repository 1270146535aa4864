/*
 * recorder/convert.c - libdetsup.so: turn a capture log (recorder/logfmt.h)
 * into the SQLite trace, after the program has ended.
 *
 * Rules of this file:
 *  - The log is read in place (mapped), one cursor per thread; nothing is
 *    read past the first chunk whose length or checksum is wrong: that is
 *    where a killed writer stopped, and the file is cut there.
 *  - A chunk whose checksum is right was written whole: one that det could
 *    not have written (a length its kind cannot have, a thread or object
 *    number beyond any run's) fails the conversion with a message naming
 *    it and where it is, before it can size an allocation. What the merge
 *    does for an event does not grow with the thread numbers a log names.
 *  - The merged order is a linear extension of each thread's order, each
 *    object's order (parallel recording: positions taken on the object's
 *    counter) and the order of creates (thread numbers); among the events
 *    it may emit next, it takes the one with the earliest timestamp, so the
 *    order is as close to real time as those orders allow. A strict
 *    recording's global numbers are its order. Why any such order replays
 *    faithfully: docs/DESIGN.md.
 *  - A position that never came (its thread died between taking it and
 *    publishing the event) would block its object for ever: when nothing
 *    can go on, the earliest waiting event goes anyway and is counted as
 *    forced. In a log whose capture was cut (no END chunk: detrec was
 *    killed) the threads' entries stop at different points, so there the
 *    merge stops instead: the trace is the largest prefix that is
 *    consistent, and the events after it are counted as cut.
 *  - One transaction, prepared statements, multi-row inserts; indexes are
 *    made after the load. SQL text comes from schema.py (include/det/sup.h).
 *  - The schedule digest (docs/TRACE_FORMAT.md) is taken as events are
 *    ordered, by the same merge with or without a trace to write: a hunt
 *    learns a run's schedule from its log (det_log_digest) without making
 *    the trace, and a converted trace stores the same value (meta
 *    schedule_digest). det_trace_digest hashes a trace's rows with the
 *    same two functions, for traces that lack the key.
 *  - The checksum lanes of event_rows and calls (supervisor/sums.h) are added
 *    up as rows are made, and corrected when a late result changes one, so
 *    the seal needs no second pass over the tables.
 *  - The packed schedule (supervisor/schedpack.h) is made from the same rows
 *    as they are made: the last two chunks' events wait unpacked, so a late
 *    result still finds its event there; one that comes later than that (a
 *    thread held up for a whole chunk of others' events between an event
 *    and its result) has the schedule made again from the rows, in the
 *    same transaction, after the merge. meta schedule_rows holds the lanes
 *    of the rows it was made from.
 *  - SQLite's inserts cost several times the merge, so while the merge runs
 *    every row it makes goes, in order, through a queue of ops to a writer
 *    thread, the only user of the connection meanwhile (the merge reads the
 *    log as the writer inserts). Ops run in the order they were made, so a
 *    late result's update follows its row. Without the thread (no CPU is
 *    free for it, it could not be made, or after the merge) ops run at
 *    once, alike: the trace is the same byte for byte.
 */
#include "../supervisor/supervisor.h"
#include "logfmt.h"
#include "../supervisor/schedpack.h"
#include "../supervisor/sums.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct piece {
	uint64_t off; /* of the first entry in the log */
	uint32_t n;   /* entries */
};

/* One thread's entries, across its ring chunks, and its next event. */
struct stream {
	struct piece *pieces;
	uint32_t npieces, cap;
	uint32_t pi, pos;                 /* cursor: piece, entry in it */
	struct det_log_thread ident;
	int has_ident;
	/* the next event and what came with it */
	const struct det_rec *head;
	uint64_t ts_raw;                  /* the timestamp the next event's dts counts from */
	int64_t head_result;
	int64_t head_ts;                  /* its ts, ns since the start */
	const struct det_rec **pend;      /* OBJECT, DATA, AUXSEQ entries before it */
	uint32_t npend, cap_pend;
	uint64_t aux_pos;                 /* AUXSEQ: position on aux (or ~0: none) */
	uint32_t aux_obj;
	/* where it stands */
	uint64_t emitted;                 /* events emitted = index of the head */
	int64_t last_ts;
	uint64_t mark_win;                /* window + 1 of its last mark */
	uint64_t recent_seq[16];          /* seq of its last 16 events, by index % 16 */
	uint32_t recent_call[16];         /* ... their calls and results, as summed */
	int64_t recent_result[16];
	struct call_memo {                /* its last calls: a loop repeats a few */
		uint64_t ra;
		uint32_t kind, obj, aux, call;
	} memo[4];
	uint32_t memo_next;
	uint32_t wait_next;               /* + 1: next thread waiting on the same key */
	uint64_t wait_key_obj, wait_key_val;
	uint32_t waiting;                 /* + 1: where it is in conv.waiters */
	uint32_t pid;                     /* + 1: its process's pid in conv.pids (0: none) */
	int forced_head;                  /* its head goes whatever it waits for */
};

/* A key of an event's requirement: object obj reached count val. The
 * create order is the object CHAIN. */
#define CHAIN UINT32_MAX
/* ... and the threads of the processes of a pid that have events to come
 * (val: pid << 1 | how many may be left), for a wait that returned a child
 * process: the child's threads had all ended. */
#define ENDED (UINT32_MAX - 1)

struct hmap { /* 64-bit key -> 32-bit value, open addressing, grows */
	uint64_t *keys;
	uint32_t *vals;
	uint64_t cap, used;
};

struct conv {
	const char *path; /* the log's */
	const uint8_t *map;
	size_t size;
	int strict;
	double tsc_per_ns;
	struct det_log_clock clock;
	struct stream *st;
	uint32_t nst;
	const struct det_proc *procs;
	uint32_t nprocs;
	const struct det_module *mods;
	uint32_t nmods;
	/* order state */
	uint64_t *count; /* per object: events placed */
	uint64_t ncount;
	uint64_t next_child;
	uint32_t *buckets; /* waiting threads by key: thread + 1, chained by wait_next */
	uint32_t nbuckets;
	uint32_t *waiters, nwaiters; /* the waiting threads, in no order */
	int32_t *pids;               /* the processes' pids, sorted, each once */
	uint32_t npids;
	uint32_t *pid_live;          /* per pid: its processes' threads with events to come */
	int64_t *create_seq; /* per thread: the seq of the event that created it, -1 */
	/* heap of ready threads, by the timestamp (strict: seq) of their head */
	uint32_t *heap;
	uint32_t nheap;
	/* output */
	sqlite3 *db;
	sqlite3_stmt *st_sql[DET_SQL_COUNT], *ev_one;
	const char *indexes;
	int64_t rows[DET_CONVERT_BATCH][5]; /* the writer's: rows not inserted yet */
	int nrows;
	struct writer *w;                   /* the writer thread, while it runs */
	struct hmap sites, calls;
	uint64_t *call_keys; /* per call: kind, obj, aux, site */
	uint64_t ncalls, cap_calls;
	uint64_t seq;
	uint64_t digest, digest_n; /* the schedule digest so far, over digest_n events */
	uint8_t *data;
	uint64_t cap_data;
	/* the packed schedule: the last two chunks' events, unpacked (cur is
	 * the one filling), and the encoder */
	struct pack_ev {
		uint64_t seq;
		uint32_t thread, call;
		int64_t result;
	} *pack[2];
	uint32_t npack[2], pack_cur;
	uint64_t pack_chunks; /* chunks written */
	int pack_lost;        /* a late result missed them: made again from the rows */
	struct det_pack_enc enc;
	const char *sched_sql[DET_SCHED_SQL_COUNT];
	struct det_convert_stats stats;
	char err[512];
};

/* What the converter writes: a statement (enum det_convert_sql, or OP_EVENT:
 * a row of event_rows: seq, thread, call, result, ts delta) and its
 * values; DATA's bytes are the op's own (freed once written). */
#define OP_EVENT DET_SQL_COUNT
struct op {
	uint32_t stmt, nv;
	int64_t v[5];
	void *blob;
	uint64_t nblob;
};

/* Ops pass to the writer a chunk at a time: the merge fills chunk head %
 * CHUNKS, the writer writes chunks tail..head-1. */
#define CHUNK_OPS 4096
#define CHUNKS 16
struct writer {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct {
		struct op ops[CHUNK_OPS];
		uint32_t n;
	} chunk[CHUNKS];
	uint64_t head, tail;
	int done;   /* no more chunks will come */
	int failed; /* the writer stopped: c->err says why */
};

static int fail(struct conv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct conv *c, const char *fmt, ...)
{
	if (c->w) /* (the merge or the writer) */
		pthread_mutex_lock(&c->w->mu);
	if (!c->err[0]) { /* the first error wins */
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->err, sizeof(c->err), fmt, ap);
		va_end(ap);
	}
	if (c->w)
		pthread_mutex_unlock(&c->w->mu);
	return -1;
}

static int grow(void **p, uint64_t *cap, uint64_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	uint64_t n = *cap ? *cap : 16;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * size);
	if (!q)
		return -1;
	memset((char *)q + *cap * size, 0, (n - *cap) * size);
	*p = q;
	*cap = n;
	return 0;
}

/* ------------------------------------------------------------------ */
/* the log */

static struct stream *stream_of(struct conv *c, uint32_t thread)
{
	if (thread >= (1u << 16)) {
		fail(c, "%s: a chunk names thread T%u (threads are numbered below 65536): not a log det wrote", c->path,
		     thread);
		return NULL;
	}
	if (thread >= c->nst) {
		uint64_t cap = c->nst;
		if (grow((void **)&c->st, &cap, thread + 1, sizeof(*c->st))) {
			fail(c, "out of memory");
			return NULL;
		}
		c->nst = (uint32_t)cap;
	}
	return &c->st[thread];
}

static int add_piece(struct conv *c, uint32_t thread, uint64_t off, uint32_t n)
{
	struct stream *s = stream_of(c, thread);
	if (!s)
		return -1;
	uint64_t cap = s->cap;
	if (grow((void **)&s->pieces, &cap, s->npieces + 1, sizeof(*s->pieces)))
		return fail(c, "out of memory");
	s->cap = (uint32_t)cap;
	s->pieces[s->npieces++] = (struct piece){off, n};
	return 0;
}

/* What a chunk of each kind this det reads holds: entries of `unit` bytes,
 * exactly one when `one` (END: none). A chunk whose checksum is right but
 * whose length is not so was not written by det. */
static const struct chunk_shape {
	const char *name;
	uint32_t unit, one;
} shapes[] = {
	[DET_LOG_META] = {"META", 8, 0},
	[DET_LOG_RING] = {"ring", sizeof(struct det_rec), 0},
	[DET_LOG_THREAD] = {"THREAD", sizeof(struct det_log_thread), 1},
	[DET_LOG_PROCS] = {"PROCS", sizeof(struct det_proc), 0},
	[DET_LOG_MODULES] = {"MODULES", sizeof(struct det_module), 0},
	[DET_LOG_CLOCK] = {"CLOCK", sizeof(struct det_log_clock), 1},
	[DET_LOG_END] = {"END", 0, 1},
};

/* Read the chunks; returns the length of the good part. */
static int64_t scan(struct conv *c, const char *path)
{
	const struct det_log_header *h = (const void *)c->map;
	if (c->size < sizeof(*h) || memcmp(h->magic, DET_LOG_MAGIC, 8) != 0)
		return fail(c, "%s: not a det capture log", path);
	if (h->version != DET_LOG_VERSION || h->rec_bytes != sizeof(struct det_rec) ||
	    h->header_bytes != sizeof(*h) || h->shm_version != DET_SHM_VERSION)
		return fail(c, "%s: capture log version %u (runtime %u), this det reads version %u (runtime %u)", path,
			    h->version, h->shm_version, DET_LOG_VERSION, DET_SHM_VERSION);
	uint64_t off = sizeof(*h);
	int clock = 0;
	while (off + sizeof(struct det_log_chunk) <= c->size) {
		const struct det_log_chunk *k = (const void *)(c->map + off);
		const uint8_t *p = (const uint8_t *)(k + 1);
		if (k->bytes % 8 || k->bytes > DET_LOG_CHUNK_MAX || off + sizeof(*k) + k->bytes > c->size ||
		    det_log_check(p, k->bytes, k->type, k->bytes) != k->check)
			break;
		uint64_t poff = off + sizeof(*k);
		const struct chunk_shape *sh = k->type < sizeof(shapes) / sizeof(shapes[0]) ? &shapes[k->type] : NULL;
		if (sh && sh->name && (sh->one ? k->bytes != sh->unit : k->bytes % sh->unit))
			return fail(c, "%s: a %s chunk of %u bytes at byte %llu: not a log det wrote", path, sh->name,
				    k->bytes, (unsigned long long)off);
		switch (k->type) {
		case DET_LOG_RING:
			if (add_piece(c, k->thread, poff, k->bytes / sizeof(struct det_rec)))
				return -1;
			break;
		case DET_LOG_THREAD: {
			struct stream *s = stream_of(c, k->thread);
			if (!s)
				return -1;
			memcpy(&s->ident, p, sizeof(s->ident));
			s->has_ident = 1;
			break;
		}
		case DET_LOG_PROCS:
			c->procs = (const void *)p;
			c->nprocs = k->bytes / sizeof(struct det_proc);
			break;
		case DET_LOG_MODULES:
			c->mods = (const void *)p;
			c->nmods = k->bytes / sizeof(struct det_module);
			break;
		case DET_LOG_CLOCK: {
			struct det_log_clock ck;
			memcpy(&ck, p, sizeof(ck));
			c->strict = !!(ck.flags & DET_F_STRICT);
			c->clock = ck;
			if (ck.mono2 > ck.mono1 && ck.tsc2 > ck.tsc1)
				c->tsc_per_ns = (double)(ck.tsc2 - ck.tsc1) / (double)(ck.mono2 - ck.mono1);
			clock = 1;
			break;
		}
		case DET_LOG_END:
			c->stats.complete = 1;
			break;
		default:
			break; /* META, or a kind this det does not need */
		}
		off = poff + k->bytes;
	}
	if (!clock)
		c->tsc_per_ns = 0; /* no calibration: timestamps stay 0 */
	return (int64_t)off;
}

static inline const struct det_rec *entry_at(struct conv *c, struct stream *s)
{
	if (s->pi >= s->npieces)
		return NULL;
	return (const struct det_rec *)(c->map + s->pieces[s->pi].off) + s->pos;
}

static inline void advance(struct stream *s)
{
	if (++s->pos >= s->pieces[s->pi].n) {
		s->pi++;
		s->pos = 0;
		while (s->pi < s->npieces && s->pieces[s->pi].n == 0)
			s->pi++;
	}
}

/* Object ids are those a trace may hold (det.validate MAX_ID: 2^20 objects
 * and the threads' own): an entry naming another is not det's, and would
 * have the order's per-object counts (count_of) grow to it. */
#define MAX_OBJ 0x10FFFFu

static int entry_bad(struct conv *c, struct stream *s, const struct det_rec *e)
{
	int names_object = e->kind < DET_KIND_LIMIT || e->kind == DET_REC_OBJECT || e->kind == DET_REC_AUXSEQ;
	if (!names_object || e->obj <= MAX_OBJ)
		return 0;
	return fail(c, "%s: thread T%u's entry at byte %llu names object %u (ids stop at %u): not a log det wrote",
		    c->path, (unsigned)(s - c->st), (unsigned long long)((const uint8_t *)e - c->map), e->obj, MAX_OBJ);
}

/* ------------------------------------------------------------------ */
/* output */

static uint64_t mix(uint64_t a)
{
	a ^= a >> 33;
	a *= 0xff51afd7ed558ccdULL;
	a ^= a >> 33;
	a *= 0xc4ceb9fe1a85ec53ULL;
	a ^= a >> 33;
	return a;
}

/* The schedule digest: the ordered events' (thread, kind, object), in
 * order, each packed into one word (thread: 16 bits, kind: 16, object: 32)
 * and chained through mix(); the count closes it. Inputs are left out:
 * their values (a clock's, say) differ between runs of one schedule. */
#define DIGEST_START 0x6a09e667f3bcc908ULL
#define DIGEST_STEP 0x9e3779b97f4a7c15ULL

static inline int in_schedule(uint32_t kind)
{
	int role = det_kind_role(kind);
	return role >= 0 && role != DET_ROLE_INPUT;
}

static inline uint64_t digest_step(uint64_t h, uint64_t tid, uint64_t kind, uint64_t obj)
{
	return mix(h ^ ((tid & 0xffff) << 48 | (kind & 0xffff) << 32 | (obj & 0xffffffff))) + DIGEST_STEP;
}

static inline uint64_t digest_end(uint64_t h, uint64_t n)
{
	return mix(h ^ n);
}

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
			uint64_t j = mix(m->keys[i]) & (ncap - 1);
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
	uint64_t j = mix(key) & (m->cap - 1);
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

static void writer_start(struct conv *c)
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
static int writer_end(struct conv *c)
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
static int put(struct conv *c, uint32_t stmt, uint32_t nv, const int64_t *v, const void *blob, uint64_t nblob)
{
	if (!c->w)
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
	uint64_t key = mix(((uint64_t)kind << 32 | obj) ^ mix((uint64_t)aux << 32 | site));
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

/* ------------------------------------------------------------------ */
/* the packed schedule */

_Static_assert(DET_SQL_SCHED_CLEAR - DET_SQL_SCHED_ROWS == DET_SCHED_SQL_CLEAR &&
		       DET_SQL_SCHED_CHUNK - DET_SQL_SCHED_ROWS == DET_SCHED_SQL_CHUNK &&
		       DET_SQL_SCHED_META - DET_SQL_SCHED_ROWS == DET_SCHED_SQL_META,
	       "the converter's schedule statements are enum det_sched_sql's");

/* Pack and write the waiting chunk in buffer b. */
static int pack_write(struct conv *c, uint32_t b)
{
	uint32_t n = c->npack[b];
	struct pack_ev *ev = c->pack[b];
	if (!n || c->pack_lost)
		return 0;
	det_pack_start(&c->enc, c->pack_chunks, ev[0].seq);
	for (uint32_t i = 0; i < n; i++)
		if (det_pack_add(&c->enc, ev[i].seq, ev[i].thread, ev[i].call, ev[i].result)) {
			c->pack_lost = 1; /* (made again from the rows, which say why) */
			return 0;
		}
	if (det_pack_end(&c->enc))
		return fail(c, "out of memory");
	c->npack[b] = 0;
	return put(c, DET_SQL_SCHED_CHUNK, 3,
		   (const int64_t[]){(int64_t)c->pack_chunks++, (int64_t)ev[0].seq, (int64_t)n}, c->enc.buf, c->enc.len);
}

static int pack_event(struct conv *c, uint64_t seq, uint32_t t, uint32_t call, int64_t result)
{
	if (c->pack_lost)
		return 0;
	uint32_t b = c->pack_cur;
	if (c->npack[b] == DET_PACK_EVENTS) { /* the older chunk can change no more */
		if (pack_write(c, !b))
			return -1;
		b = c->pack_cur = !b;
	}
	if (!c->pack[b] && !(c->pack[b] = malloc(DET_PACK_EVENTS * sizeof(*c->pack[b]))))
		return fail(c, "out of memory");
	c->pack[b][c->npack[b]++] = (struct pack_ev){seq, t, call, result};
	return 0;
}

/* Event seq's result changed after it was packed (or is waiting). */
static void pack_fix(struct conv *c, uint64_t seq, int64_t result)
{
	for (uint32_t k = 0; k < 2; k++) {
		uint32_t b = k ? !c->pack_cur : c->pack_cur, lo = 0, hi = c->npack[b];
		struct pack_ev *ev = c->pack[b];
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;
			if (ev[mid].seq < seq)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < c->npack[b] && ev[lo].seq == seq) {
			ev[lo].result = result;
			return;
		}
	}
	c->pack_lost = 1;
}

/* Every row is made: the last chunks, and what they were made from. */
static int pack_finish(struct conv *c)
{
	uint32_t older = !c->pack_cur;
	if (pack_write(c, older) || pack_write(c, c->pack_cur))
		return -1;
	if (c->pack_lost) {
		char why[300];
		if (sup_schedule_build(c->db, c->sched_sql[DET_SCHED_SQL_ROWS], c->sched_sql[DET_SCHED_SQL_CLEAR],
				       c->sched_sql[DET_SCHED_SQL_CHUNK], c->sched_sql[DET_SCHED_SQL_META], NULL, why,
				       sizeof(why)) == 0)
			return 0;
		/* (rows the schedule cannot hold: the trace goes without one, and
		 * replay reads the rows) */
		return sqlite3_exec(c->db, c->sched_sql[DET_SCHED_SQL_CLEAR], NULL, NULL, NULL) == SQLITE_OK
			       ? 0
			       : fail(c, "cannot drop the packed schedule: %s", sqlite3_errmsg(c->db));
	}
	char text[96];
	const struct det_table_sum *sum = &c->stats.event_sum;
	snprintf(text, sizeof(text), "[%llu, %lld, %lld]", (unsigned long long)sum->rows, (long long)sum->lane[0],
		 (long long)sum->lane[1]);
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(c->db, c->sched_sql[DET_SCHED_SQL_META], -1, &st, NULL) != SQLITE_OK)
		return fail(c, "cannot prepare \"%.60s\": %s", c->sched_sql[DET_SCHED_SQL_META], sqlite3_errmsg(c->db));
	sqlite3_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
	int r = sqlite3_step(st);
	sqlite3_finalize(st);
	return r == SQLITE_DONE ? 0 : fail(c, "cannot store meta schedule_rows: %s", sqlite3_errmsg(c->db));
}

/* An event already emitted turned out to return `result`. */
static int late_result(struct conv *c, struct stream *s, uint64_t idx, int64_t result)
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

/* ------------------------------------------------------------------ */
/* the order */

static inline uint64_t *count_of(struct conv *c, uint32_t obj)
{
	if (obj == CHAIN)
		return &c->next_child;
	if (obj >= c->ncount && grow((void **)&c->count, &c->ncount, (uint64_t)obj + 1, sizeof(*c->count)))
		return NULL;
	return &c->count[obj];
}

static int is_create(uint16_t kind)
{
	return kind == DET_EV_THREAD_CREATE || kind == DET_EV_PROC_FORK || kind == DET_EV_PROC_SPAWN;
}

/* An event's ts in ns since the program started (CLOCK_MONOTONIC at the
 * runtime's start, mono0): a process that traps rdtsc logs CLOCK_MONOTONIC
 * ns, the others TSC ticks, placed by the capture's own (TSC, ns) pair. */
static int64_t ts_ns(struct conv *c, uint64_t ts, uint16_t flags)
{
	const struct det_log_clock *k = &c->clock;
	double ns;
	if (flags & DET_RF_TS_NS)
		ns = (double)ts - (double)k->mono0;
	else if (c->tsc_per_ns > 0)
		ns = (double)k->mono1 - (double)k->mono0 + ((double)ts - (double)k->tsc1) / c->tsc_per_ns;
	else
		return 0;
	if (!(ns > 0))
		return 0;
	return ns < 0x1p63 ? (int64_t)ns : INT64_MAX; /* (a clock that makes no sense) */
}

/* Move the thread's cursor to its next event, gathering what goes with it;
 * results for events already emitted are applied on the way. */
static int load_head(struct conv *c, struct stream *s)
{
	s->head = NULL;
	s->forced_head = 0;
	s->npend = 0;
	s->aux_pos = UINT64_MAX;
	const struct det_rec *e;
	while ((e = entry_at(c, s))) {
		advance(s);
		if (entry_bad(c, s, e))
			return -1;
		if (e->kind < DET_KIND_LIMIT) {
			s->head = e;
			s->ts_raw += e->dts;
			s->head_ts = ts_ns(c, s->ts_raw, e->flags);
			s->head_result = e->flags & DET_RF_PENDING ? DET_RESULT_PENDING : 0;
			/* results that follow it are its own (the call came back) */
			const struct det_rec *r;
			while ((r = entry_at(c, s)) && r->kind == DET_REC_RESULT && r->seq == s->emitted) {
				s->head_result = r->result;
				advance(s);
			}
			return 0;
		}
		if (e->kind == DET_REC_RESULT) {
			if (late_result(c, s, e->seq, e->result))
				return -1;
			continue;
		}
		if (e->kind == DET_REC_AUXSEQ) {
			s->aux_pos = e->seq;
			s->aux_obj = e->obj;
			continue;
		}
		if (e->kind == DET_REC_TS) {
			s->ts_raw = e->ts;
			continue;
		}
		uint64_t cap = s->cap_pend;
		if (grow((void **)&s->pend, &cap, s->npend + 1, sizeof(*s->pend)))
			return fail(c, "out of memory");
		s->cap_pend = (uint32_t)cap;
		s->pend[s->npend++] = e;
	}
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

/* Where pid is in c->pids, + 1 (0: no process had it). */
static uint32_t pid_rank(struct conv *c, int32_t pid)
{
	const int32_t *at = bsearch(&pid, c->pids, c->npids, sizeof(*c->pids), cmp_pid);
	return at ? (uint32_t)(at - c->pids) + 1 : 0;
}

/* The processes' pids, and each thread's (a wait for a child is ordered
 * after the child's threads by counting those with events to come, so
 * that it costs the same however many threads the run had). */
static int index_pids(struct conv *c)
{
	c->pids = malloc((c->nprocs + 1) * sizeof(*c->pids));
	c->pid_live = calloc(c->nprocs + 1, sizeof(*c->pid_live));
	if (!c->pids || !c->pid_live)
		return fail(c, "out of memory");
	for (uint32_t i = 0; i < c->nprocs; i++)
		c->pids[i] = c->procs[i].rec_pid;
	qsort(c->pids, c->nprocs, sizeof(*c->pids), cmp_pid);
	for (uint32_t i = 0; i < c->nprocs; i++)
		if (!c->npids || c->pids[c->npids - 1] != c->pids[i])
			c->pids[c->npids++] = c->pids[i];
	for (uint32_t t = 0; t < c->nst; t++) {
		struct stream *s = &c->st[t];
		if (s->has_ident && s->ident.proc < c->nprocs)
			s->pid = pid_rank(c, c->procs[s->ident.proc].rec_pid);
	}
	return 0;
}

/* What the head waits for: 0 if nothing (it may be emitted), else 1 with
 * the key. A count past the wanted position means that position was
 * skipped (forced): the event may go. */
static int blocked_on(struct conv *c, struct stream *s, uint32_t *obj, uint64_t *val)
{
	const struct det_rec *e = s->head;
	if (c->strict || s->forced_head)
		return 0;
	if (e->seq != DET_SEQ_NONE) {
		uint64_t *n = count_of(c, e->obj);
		uint64_t want = e->seq & ~DET_SEQ_OBSERVE;
		if (n && *n < want) {
			*obj = e->obj;
			*val = want;
			return 1;
		}
	}
	if (s->aux_pos != UINT64_MAX) {
		uint64_t *n = count_of(c, s->aux_obj);
		if (n && *n < s->aux_pos) {
			*obj = s->aux_obj;
			*val = s->aux_pos;
			return 1;
		}
	}
	if (is_create(e->kind) && c->next_child < e->aux) {
		*obj = CHAIN;
		*val = e->aux;
		return 1;
	}
	if (e->kind == DET_EV_PROC_WAIT && s->head_result > 0 && s->head_result <= INT32_MAX) {
		/* waitpid returned this child: everything its threads did came first
		 * (the thread itself aside, if a pid says it is the child's) */
		uint32_t p = pid_rank(c, (int32_t)s->head_result), self = p && s->pid == p;
		if (p && c->pid_live[p - 1] > self) {
			*obj = ENDED;
			*val = (uint64_t)s->head_result << 1 | self;
			return 1;
		}
	}
	return 0;
}

/* A signal delivered as its thread left det after its last event comes
 * right after that event in the order (replay looks for it there, in the
 * entry next to the event's: replayer/schedule.c). */
static int glued(struct stream *s)
{
	return s->head->kind == DET_EV_SIGNAL && !(s->head->aux & DET_SIG_BEFORE);
}

static uint64_t prio(struct conv *c, uint32_t t)
{
	const struct det_rec *e = c->st[t].head;
	return c->strict ? e->seq : (uint64_t)c->st[t].head_ts;
}

static int heap_less(struct conv *c, uint32_t a, uint32_t b)
{
	uint64_t pa = prio(c, a), pb = prio(c, b);
	return pa < pb || (pa == pb && a < b);
}

static void heap_push(struct conv *c, uint32_t t)
{
	uint32_t i = c->nheap++;
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (!heap_less(c, t, c->heap[p]))
			break;
		c->heap[i] = c->heap[p];
		i = p;
	}
	c->heap[i] = t;
}

static uint32_t heap_pop(struct conv *c)
{
	uint32_t top = c->heap[0], last = c->heap[--c->nheap], i = 0;
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		uint32_t mv = last;
		if (l < c->nheap && heap_less(c, c->heap[l], mv)) {
			m = l;
			mv = c->heap[l];
		}
		if (r < c->nheap && heap_less(c, c->heap[r], mv))
			m = r;
		if (m == i)
			break;
		c->heap[i] = c->heap[m];
		i = m;
	}
	if (c->nheap)
		c->heap[i] = last;
	return top;
}

static inline uint32_t bucket_of(struct conv *c, uint32_t obj, uint64_t val)
{
	return (uint32_t)(mix(((uint64_t)obj << 40) ^ val) & (c->nbuckets - 1));
}

/* The thread's head can go, or waits: put it where it belongs. */
static void place_thread(struct conv *c, uint32_t t)
{
	struct stream *s = &c->st[t];
	uint32_t obj;
	uint64_t val;
	if (!blocked_on(c, s, &obj, &val)) {
		heap_push(c, t);
		return;
	}
	uint32_t b = bucket_of(c, obj, val);
	s->wait_key_obj = obj;
	s->wait_key_val = val;
	c->waiters[c->nwaiters++] = t;
	s->waiting = c->nwaiters;
	s->wait_next = c->buckets[b];
	c->buckets[b] = t + 1;
}

/* Thread t waits no more (it is out of its bucket's chain, or the chains
 * are made again). */
static void unwait(struct conv *c, uint32_t t)
{
	uint32_t at = c->st[t].waiting - 1, last = c->waiters[--c->nwaiters];
	c->waiters[at] = last;
	c->st[last].waiting = at + 1;
	c->st[t].waiting = 0;
}

/* obj's count became val: the threads waiting for that may go on. */
static void wake(struct conv *c, uint32_t obj, uint64_t val)
{
	uint32_t b = bucket_of(c, obj, val);
	uint32_t *link = &c->buckets[b];
	while (*link) {
		uint32_t t = *link - 1;
		struct stream *s = &c->st[t];
		if (s->wait_key_obj == obj && s->wait_key_val == val) {
			*link = s->wait_next;
			unwait(c, t);
			place_thread(c, t);
		} else {
			link = &s->wait_next;
		}
	}
}

/* Thread t has no events to come: waits for its process's pid may end. */
static void thread_ended(struct conv *c, uint32_t t)
{
	uint32_t p = c->st[t].pid;
	if (!p)
		return;
	uint32_t left = --c->pid_live[p - 1];
	if (left <= 1)
		wake(c, ENDED, (uint64_t)c->pids[p - 1] << 1 | left);
}

/* Nothing can go on: the earliest waiting event goes anyway. (Only the
 * waiting threads are looked at, not every thread number.) */
static int force_one(struct conv *c)
{
	uint32_t best = UINT32_MAX;
	for (uint32_t i = 0; i < c->nwaiters; i++)
		if (best == UINT32_MAX || heap_less(c, c->waiters[i], best))
			best = c->waiters[i];
	if (best == UINT32_MAX)
		return 0;
	/* it goes; every waiter is placed again (counts may have jumped: the
	 * order they are placed in changes nothing) */
	c->st[best].forced_head = 1;
	c->stats.forced++;
	uint32_t n = c->nwaiters;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t t = c->waiters[i];
		c->buckets[bucket_of(c, (uint32_t)c->st[t].wait_key_obj, c->st[t].wait_key_val)] = 0;
	}
	uint32_t *again = c->waiters + c->nst; /* (the second half) */
	memcpy(again, c->waiters, n * sizeof(*again));
	for (uint32_t i = 0; i < n; i++)
		c->st[again[i]].waiting = 0;
	c->nwaiters = 0;
	for (uint32_t i = 0; i < n; i++)
		place_thread(c, again[i]);
	return 1;
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
static int store(struct conv *c, uint32_t t, uint64_t seq)
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

/* Emit thread t's head as the next event of the order (into the trace,
 * when there is one to write, and into the schedule digest). */
static int emit(struct conv *c, uint32_t t)
{
	struct stream *s = &c->st[t];
	const struct det_rec *e = s->head;
	uint64_t seq = c->seq++;
	if (in_schedule(e->kind)) {
		c->digest = digest_step(c->digest, t, e->kind, e->obj);
		c->digest_n++;
	}
	if (c->db && store(c, t, seq))
		return -1;
	s->recent_seq[s->emitted % 16] = seq;
	s->emitted++;
	c->stats.events++;
	if (is_create(e->kind) && e->aux < c->nst)
		c->create_seq[e->aux] = (int64_t)seq;
	if (c->strict)
		return 0;
	/* the orders it moves on */
	if (is_create(e->kind) && c->next_child <= e->aux) {
		c->next_child = (uint64_t)e->aux + 1;
		wake(c, CHAIN, c->next_child);
	}
	if (s->aux_pos != UINT64_MAX) {
		uint64_t *n = count_of(c, s->aux_obj);
		if (!n)
			return fail(c, "out of memory");
		if (*n <= s->aux_pos) {
			*n = s->aux_pos + 1;
			wake(c, s->aux_obj, *n);
		}
	}
	if (e->seq != DET_SEQ_NONE && !(e->seq & DET_SEQ_OBSERVE)) {
		uint64_t *n = count_of(c, e->obj);
		if (!n)
			return fail(c, "out of memory");
		if (*n <= e->seq) {
			*n = e->seq + 1;
			wake(c, e->obj, *n);
		}
	}
	return 0;
}

static int merge(struct conv *c)
{
	c->nbuckets = 64;
	while (c->nbuckets < 4 * c->nst)
		c->nbuckets *= 2;
	c->buckets = calloc(c->nbuckets, sizeof(*c->buckets));
	c->waiters = malloc(2 * (c->nst + 1) * sizeof(*c->waiters)); /* (and force_one's copy) */
	c->heap = calloc(c->nst + 1, sizeof(*c->heap));
	c->create_seq = malloc((c->nst + 1) * sizeof(*c->create_seq));
	if (!c->buckets || !c->waiters || !c->heap || !c->create_seq || index_pids(c))
		return fail(c, "out of memory");
	for (uint32_t t = 0; t <= c->nst; t++)
		c->create_seq[t] = -1;
	c->next_child = 1;
	for (uint32_t t = 0; t < c->nst; t++) {
		struct stream *s = &c->st[t];
		while (s->pi < s->npieces && s->pieces[s->pi].n == 0)
			s->pi++;
		if (load_head(c, s))
			return -1;
		if (s->head) {
			if (s->pid)
				c->pid_live[s->pid - 1]++;
			place_thread(c, t);
		}
	}
	for (;;) {
		/* (strict: the global numbers must follow each other) */
		if (c->strict && !c->stats.complete && c->nheap && c->st[c->heap[0]].head->seq != c->seq) {
			c->st[c->heap[0]].waiting = 0;
			c->nheap = 0; /* (all of them are counted below) */
		}
		if (!c->nheap && !c->stats.complete) {
			/* the capture was cut (detrec killed): each thread's events
			 * are there up to some point, not the same for all; what can
			 * be ordered is a consistent prefix, and the rest is left out */
			for (uint32_t t = 0; t < c->nst; t++)
				for (struct stream *s = &c->st[t]; s->head; load_head(c, s))
					c->stats.cut++;
			break;
		}
		if (!c->nheap) {
			int r = force_one(c);
			if (r < 0)
				return -1;
			if (!r)
				break;
			continue;
		}
		uint32_t t = heap_pop(c);
		/* a thread goes on while its next event may go and is the earliest */
		for (;;) {
			if (emit(c, t) || load_head(c, &c->st[t]))
				return -1;
			struct stream *s = &c->st[t];
			if (!s->head) {
				thread_ended(c, t);
				break;
			}
			uint32_t obj;
			uint64_t val;
			if (glued(s))
				continue;
			if (!blocked_on(c, s, &obj, &val) && (!c->nheap || heap_less(c, t, c->heap[0])) &&
			    !(c->strict && !c->stats.complete && s->head->seq != c->seq))
				continue;
			place_thread(c, t);
			break;
		}
	}
	return writer_end(c);
}

/* ------------------------------------------------------------------ */
/* threads, processes, modules, objects of events never published */

static int leftovers(struct conv *c)
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

static int write_tables(struct conv *c)
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

static int open_db(struct conv *c, const char *db_path, const char *const *sql, uint32_t nsql)
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

static void conv_free(struct conv *c)
{
	for (int i = 0; i < DET_SQL_COUNT; i++)
		sqlite3_finalize(c->st_sql[i]);
	sqlite3_finalize(c->ev_one);
	if (c->db)
		sqlite3_close(c->db);
	for (uint32_t t = 0; t < c->nst; t++) {
		free(c->st[t].pieces);
		free(c->st[t].pend);
	}
	free(c->st);
	free(c->count);
	free(c->buckets);
	free(c->waiters);
	free(c->pids);
	free(c->pid_live);
	free(c->heap);
	free(c->create_seq);
	free(c->sites.keys);
	free(c->sites.vals);
	free(c->calls.keys);
	free(c->calls.vals);
	free(c->call_keys);
	free(c->data);
	free(c->pack[0]);
	free(c->pack[1]);
	det_pack_enc_free(&c->enc);
}

static int map_log(struct conv *c, const char *log_path, int *fd, int writable)
{
	*fd = open(log_path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (*fd < 0)
		return fail(c, "cannot open %s: %s", log_path, strerror(errno));
	struct stat st;
	if (fstat(*fd, &st) != 0)
		return fail(c, "cannot read %s: %s", log_path, strerror(errno));
	c->size = (size_t)st.st_size;
	if (c->size) {
		void *m = mmap(NULL, c->size, PROT_READ, MAP_PRIVATE, *fd, 0);
		if (m == MAP_FAILED)
			return fail(c, "cannot map %s: %s", log_path, strerror(errno));
		c->map = m;
		madvise(m, c->size, MADV_SEQUENTIAL);
	}
	return 0;
}

static int store_digest(struct conv *c)
{
	char hex[17];
	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)c->stats.schedule);
	sqlite3_stmt *st = c->st_sql[DET_SQL_META];
	sqlite3_bind_text(st, 1, "schedule_digest", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, hex, -1, SQLITE_TRANSIENT);
	return step(c, st, "the schedule digest");
}

/* The log's events in order: into the trace at db_path, or (db_path NULL)
 * only into the digest, reading the log without changing it. */
static int run(struct conv *c, const char *log_path, const char *db_path, const char *const *sql, uint32_t nsql)
{
	int fd = -1, r = -1, began = 0;
	c->path = log_path;
	if (map_log(c, log_path, &fd, db_path != NULL))
		goto out;
	int64_t good = scan(c, log_path);
	if (good < 0)
		goto out;
	c->stats.log_bytes = (uint64_t)good;
	c->stats.torn_bytes = c->size - (uint64_t)good;
	c->digest = DIGEST_START;
	if (!db_path) {
		if (merge(c))
			goto out;
		c->stats.schedule = digest_end(c->digest, c->digest_n);
		r = 0;
		goto out;
	}
	if (c->stats.torn_bytes && ftruncate(fd, good) != 0) { /* cut the torn tail */
		fail(c, "cannot cut the torn end of %s: %s", log_path, strerror(errno));
		goto out;
	}
	if (open_db(c, db_path, sql, nsql))
		goto out;
	if (sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		fail(c, "cannot write %s: %s", db_path, sqlite3_errmsg(c->db));
		goto out;
	}
	began = 1;
	writer_start(c);
	int merged = merge(c);
	if (c->w) /* (the merge failed midway) */
		writer_end(c);
	if (merged || leftovers(c) || write_tables(c) || pack_finish(c))
		goto out;
	c->stats.schedule = digest_end(c->digest, c->digest_n);
	if (store_digest(c))
		goto out;
	char *msg = NULL;
	if (sqlite3_exec(c->db, c->indexes, NULL, NULL, &msg) != SQLITE_OK) {
		fail(c, "cannot index %s: %s", db_path, msg ? msg : "?");
		sqlite3_free(msg);
		goto out;
	}
	if (sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		fail(c, "cannot write %s: %s", db_path, sqlite3_errmsg(c->db));
		goto out;
	}
	began = 0;
	r = 0;
out:
	if (began)
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	if (c->map)
		munmap((void *)c->map, c->size);
	if (fd >= 0)
		close(fd);
	return r;
}

static int run_and_report(const char *log_path, const char *db_path, const char *const *sql, uint32_t nsql,
			  struct det_convert_stats *out, char *err, uint32_t errlen)
{
	struct conv *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	uint64_t t0 = sup_mono_ns();
	int r = run(c, log_path, db_path, sql, nsql);
	c->stats.ns = sup_mono_ns() - t0;
	if (out)
		*out = c->stats;
	if (r && err && errlen)
		snprintf(err, errlen, "%s", c->err[0] ? c->err : "conversion failed");
	conv_free(c);
	free(c);
	return r;
}

SUP_EXPORT int det_convert(const char *log_path, const char *db_path, const char *const *sql, uint32_t nsql,
			   struct det_convert_stats *out, char *err, uint32_t errlen)
{
	if (!db_path) {
		snprintf(err, errlen, "det_convert needs a trace to write");
		return -1;
	}
	return run_and_report(log_path, db_path, sql, nsql, out, err, errlen);
}

SUP_EXPORT int det_log_digest(const char *log_path, struct det_convert_stats *out, char *err, uint32_t errlen)
{
	return run_and_report(log_path, NULL, NULL, 0, out, err, errlen);
}

struct row_digest {
	uint64_t h, n;
};

static void digest_row(const int64_t *v, void *ctx)
{
	struct row_digest *d = ctx;
	if (!in_schedule((uint32_t)v[1]))
		return;
	d->h = digest_step(d->h, (uint64_t)v[0], (uint64_t)v[1], (uint64_t)v[2]);
	d->n++;
}

SUP_EXPORT int det_trace_digest(const char *db_path, const char *rows_sql, uint64_t *digest, char *err,
				uint32_t errlen)
{
	struct row_digest d = {DIGEST_START, 0};
	char why[400];
	if (det_scan_rows(db_path, rows_sql, 3, digest_row, &d, why, sizeof(why))) {
		snprintf(err, errlen, "cannot read %s: %s", db_path, why);
		return -1;
	}
	*digest = digest_end(d.h, d.n);
	return 0;
}

SUP_EXPORT int det_log_meta(const char *log_path, char *buf, uint32_t len)
{
	int fd = open(log_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -snprintf(buf, len, "cannot open %s: %s", log_path, strerror(errno)) - 1;
	struct det_log_header h;
	struct det_log_chunk k;
	int r = -1;
	if (read(fd, &h, sizeof(h)) != (ssize_t)sizeof(h) || memcmp(h.magic, DET_LOG_MAGIC, 8) != 0) {
		snprintf(buf, len, "%s: not a det capture log", log_path);
	} else if (h.version != DET_LOG_VERSION) {
		snprintf(buf, len, "%s: capture log version %u, this det reads version %u", log_path, h.version,
			 DET_LOG_VERSION);
	} else if (read(fd, &k, sizeof(k)) != (ssize_t)sizeof(k) || k.type != DET_LOG_META) {
		snprintf(buf, len, "%s: the capture log has no META chunk", log_path);
	} else if (k.bytes % 8 || k.bytes > DET_LOG_CHUNK_MAX) {
		snprintf(buf, len, "%s: its META chunk says it holds %u bytes (at most %u, in 8s): not a det capture log",
			 log_path, k.bytes, DET_LOG_CHUNK_MAX);
	} else {
		char *p = malloc(k.bytes + 1);
		if (p && read(fd, p, k.bytes) == (ssize_t)k.bytes &&
		    det_log_check(p, k.bytes, k.type, k.bytes) == k.check) {
			p[k.bytes] = 0;
			size_t n = strlen(p);
			if (n + 1 <= len) {
				memcpy(buf, p, n + 1);
				r = (int)n;
			} else {
				snprintf(buf, len, "%s: its META chunk needs %zu bytes", log_path, n + 1);
			}
		} else {
			snprintf(buf, len, "%s: its META chunk is damaged", log_path);
		}
		free(p);
	}
	close(fd);
	return r;
}
