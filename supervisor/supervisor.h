/*
 * supervisor/supervisor.h - internals of libdetsup.so's shared part
 * (supervisor/: the region, the trace store's C helpers), used by its
 * recorder (recorder/capture.c, recorder/convert*.c) and replayer
 * (replayer/schedule.c, replayer/sup_turns.c) sides.
 *
 * Rules: the public API is include/det/sup.h; nothing here is exported.
 * Nothing here names a function of recorder/ or replayer/: what a side runs
 * on the region is ended through the handle (struct det_sup's release).
 */
#ifndef DET_SUPERVISOR_H
#define DET_SUPERVISOR_H

#include <sqlite3.h>
#include <stdatomic.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>

#include "det/events.h"
#include "det/shm.h"
#include "det/sup.h"

#define SUP_HIDDEN __attribute__((visibility("hidden")))
#define SUP_EXPORT __attribute__((visibility("default")))

/* The region's layout as sup_map made it. The program can write over the
 * header (the region is mapped writable into it), so libdetsup takes no
 * offset, size or count from there: it finds what it reads in the region
 * through these (sup_slot...). */
struct sup_fixed {
	uint32_t mode, max_threads, rings, max_procs, objects_cap, files_cap;
	uint64_t ring_entries, slots_off, owners_off, rings_off, procs_off, objects_off, files_off;
};

/* What the capture knows of a thread's ring (recorder/capture.c). */
struct sup_cap_thread {
	uint64_t tail;   /* entries captured: the slot's tail as the capture last wrote it */
	uint8_t seen;    /* its identity is in the log */
	uint8_t corrupt; /* its ring's indices made no sense: no longer read */
};

struct det_sup {
	int fd;
	struct det_shm_header *hdr;
	uint64_t size;
	struct sup_fixed fixed;
	char err[512];

	/* capture (recorder/capture.c) */
	int log_fd;
	_Atomic int stop;
	uint64_t tsc_start, mono_start;
	struct det_capture_stats cap;
	struct sup_cap_thread *cap_threads; /* per thread number */
	/* why the capture stopped the program (a corrupt ring), "" while it has not */
	char cap_stopped[256];
	_Atomic int cap_stopping; /* cap_stopped is written */
	void *cap_procs;         /* the process table as last written */
	size_t cap_procs_len;
	uint32_t cap_modules;    /* modules last written */
	uint64_t cap_state_at;   /* when the tables were last compared */
	uint64_t cap_reserved;   /* the log's disk space is reserved up to here (UINT64_MAX: cannot be) */
	pthread_t cap_thread;    /* det_capture_start's, running det_capture_run */
	int cap_started, cap_rc;
	_Atomic int cap_failed;  /* det_capture_run ended on an error (det_capture_failed) */

	uint64_t data_off;       /* replay: where recorded input data starts */
	struct feeder *feed;     /* replay: what streams the schedule (replayer/schedule.c) */
	int turns_fd;            /* replay: the enforcement backend's descriptor (kmod: owns the schedule), -1: none */
	struct follower *follow; /* a live replica: what reads the capture log as it grows (replayer/follow.c) */

	/* Set by the side that made the handle (det_sup_record_new: the
	 * capture; det_sup_replay_new: the feeder), so that this shared part
	 * names neither: ends what that side runs on the region (its thread),
	 * det_sup_free's first step. NULL: nothing to end. */
	void (*release)(struct det_sup *s);
};

static inline struct det_slot *sup_slot(const struct det_sup *s, uint32_t num)
{
	return (struct det_slot *)((char *)s->hdr + s->fixed.slots_off) + num;
}

static inline struct det_proc *sup_proc(const struct det_sup *s, uint32_t idx)
{
	return (struct det_proc *)((char *)s->hdr + s->fixed.procs_off) + idx;
}

static inline struct det_rec *sup_ring(const struct det_sup *s, uint32_t ring)
{
	return (struct det_rec *)((char *)s->hdr + s->fixed.rings_off) + (uint64_t)ring * s->fixed.ring_entries;
}

static inline DET_ATOMIC(uint32_t) *sup_ring_owner(const struct det_sup *s, uint32_t ring)
{
	return (DET_ATOMIC(uint32_t) *)((char *)s->hdr + s->fixed.owners_off) + ring;
}

static inline struct det_file *sup_file(const struct det_sup *s, uint32_t idx)
{
	return (struct det_file *)((char *)s->hdr + s->fixed.files_off) + idx;
}

static inline struct det_objent *sup_objects(const struct det_sup *s)
{
	return (struct det_objent *)((char *)s->hdr + s->fixed.objects_off);
}

/* Pipes the program may make (inodes remembered; a fuller table only
 * makes later pipes count as outside ones, recorded rather than re-read). */
#define SUP_PIPES 8192
#define SUP_OUT_LOCKS 256 /* streams several processes write (more share the last ones' locks) */
#define SUP_FILES 4096 /* files a recording lists for `detrec pack` */

/* Sizes that decide the region's layout. */
struct sup_layout {
	uint32_t mode, max_threads, rings, objects_cap, objseq_count;
	uint64_t ring_entries, objrev_count, sched_entries, data_bytes;
};

SUP_HIDDEN struct det_sup *sup_alloc(void);
SUP_HIDDEN int sup_map(struct det_sup *s, const struct sup_layout *l);
SUP_HIDDEN int sup_fail(struct det_sup *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
SUP_HIDDEN uint64_t sup_mono_ns(void);
SUP_HIDDEN uint32_t sup_pow2(uint64_t n, uint32_t min);
/* A read-only connection to the trace at db_path, immutable: SQLite reads
 * the file alone and never a journal or WAL beside it (supervisor/sums.c). */
SUP_HIDDEN int det_open_trace_ro(const char *db_path, sqlite3 **db);
/* A trace's rows read with its own read-only connection: each row's ncols
 * (<= 8) integers go to row(); 0, or -1 with a message (supervisor/sums.c). */
SUP_HIDDEN int det_scan_rows(const char *db_path, const char *select, int ncols,
			     void (*row)(const int64_t *v, void *ctx), void *ctx, char *err, uint32_t errlen);
/* The packed schedule made again from event_rows on an open connection, in
 * the caller's transaction (statements as enum det_sched_sql names them);
 * sum gets event_rows' checksum lanes. 0, or -1 with a message
 * (supervisor/schedpack.c). */
SUP_HIDDEN int sup_schedule_build(sqlite3 *db, const char *rows_sql, const char *clear_sql, const char *chunk_sql,
				  const char *meta_sql, struct det_table_sum *sum, char *err, uint32_t errlen);

#endif /* DET_SUPERVISOR_H */
