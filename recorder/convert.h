/*
 * recorder/convert.h - the converter's one state (struct conv) and what its
 * parts offer each other: the driver (recorder/convert.c), the log reader
 * (convert_log.c), the merge (convert_merge.c), the SQLite writer
 * (convert_write.c), its b-tree page writer for event_rows
 * (convert_btree.c) and the schedule packer (convert_pack.c).
 *
 * Rules of this file:
 *  - Internal to libdetsup.so: every function declared here is hidden;
 *    the API is include/det/sup.h (det_convert, det_log_digest,
 *    det_log_meta).
 *  - A part reaches another's state only through struct conv and the
 *    functions named here; helpers used by one part stay static in it.
 */
#ifndef DET_CONVERT_H
#define DET_CONVERT_H

#include "../supervisor/supervisor.h"
#include "../supervisor/schedpack.h"
#include "logfmt.h"

#include <pthread.h>

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

/* event_rows as b-tree pages (convert_btree.c) */
struct pages {
	int fd;            /* the leaves so far (an unlinked scratch file) */
	uint32_t psize;    /* the trace's page size */
	int small;         /* 0 and 1 stored without bytes (schema format 4) */
	uint8_t *page;     /* the leaf filling */
	uint32_t ncells, content;
	int64_t last_key;
	uint64_t rows, nleaves;
	int64_t *leaf_max; /* per leaf: its last rowid */
	uint64_t cap_leaf;
	struct {
		int64_t seq, result;
	} *late;           /* results changed after their row was paged */
	uint64_t nlate, cap_late;
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
	struct pages *pages;                /* (NULL: rows go through INSERT) */
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

/* --- recorder/convert.c: the driver --- */

/* The first error wins (c->err); returns -1. */
SUP_HIDDEN int fail(struct conv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* *p holds at least need items of size bytes (new ones zeroed): 0, or -1. */
SUP_HIDDEN int grow(void **p, uint64_t *cap, uint64_t need, size_t size);

/* --- recorder/convert_log.c: the log reader --- */

SUP_HIDDEN int map_log(struct conv *c, const char *log_path, int *fd, int writable);
SUP_HIDDEN int64_t scan(struct conv *c, const char *path);
SUP_HIDDEN int entry_bad(struct conv *c, struct stream *s, const struct det_rec *e);
SUP_HIDDEN int load_head(struct conv *c, struct stream *s);

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

/* --- recorder/convert_merge.c: the order --- */

SUP_HIDDEN int merge(struct conv *c);

/* --- recorder/convert_write.c: the SQLite writer --- */

SUP_HIDDEN int open_db(struct conv *c, const char *db_path, const char *const *sql, uint32_t nsql);
SUP_HIDDEN void writer_start(struct conv *c);
SUP_HIDDEN int writer_end(struct conv *c);
SUP_HIDDEN int put(struct conv *c, uint32_t stmt, uint32_t nv, const int64_t *v, const void *blob, uint64_t nblob);
SUP_HIDDEN int late_result(struct conv *c, struct stream *s, uint64_t idx, int64_t result);
SUP_HIDDEN int store(struct conv *c, uint32_t t, uint64_t seq);
SUP_HIDDEN int leftovers(struct conv *c);
SUP_HIDDEN int write_tables(struct conv *c);
SUP_HIDDEN int store_digest(struct conv *c);
SUP_HIDDEN void db_close(struct conv *c);

/* --- recorder/convert_btree.c: event_rows' pages --- */

SUP_HIDDEN int pages_open(struct conv *c, const char *db_path);
SUP_HIDDEN int pages_row(struct conv *c, const int64_t *row);
SUP_HIDDEN int pages_late(struct conv *c, int64_t seq, int64_t result);
SUP_HIDDEN int pages_finish(struct conv *c, const char *db_path, const char *const *sql, uint32_t nsql);
SUP_HIDDEN void pages_free(struct conv *c);

/* --- recorder/convert_pack.c: the packed schedule --- */

SUP_HIDDEN int pack_event(struct conv *c, uint64_t seq, uint32_t t, uint32_t call, int64_t result);
SUP_HIDDEN void pack_fix(struct conv *c, uint64_t seq, int64_t result);
SUP_HIDDEN int pack_finish(struct conv *c);

#endif /* DET_CONVERT_H */
