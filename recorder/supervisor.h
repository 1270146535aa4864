/*
 * recorder/supervisor.h - internals of libdetsup.so shared by its recorder
 * (recorder/supervisor.c, recorder/drain.c) and replayer
 * (replayer/schedule.c) halves.
 *
 * Rules: the public API is include/det/sup.h; nothing here is exported.
 */
#ifndef DET_SUPERVISOR_H
#define DET_SUPERVISOR_H

#include <sqlite3.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "det/events.h"
#include "det/shm.h"
#include "det/sup.h"

#define SUP_HIDDEN __attribute__((visibility("hidden")))
#define SUP_EXPORT __attribute__((visibility("default")))

struct site_map {
	uint64_t *keys;
	uint32_t *ids;
	uint64_t cap, used;
};

/* What a thread's ring said before its next event: objects it declares and
 * the event's data. */
struct pending {
	struct det_rec *objs;
	uint32_t nobjs, cap_objs;
	uint8_t *data;
	uint64_t len, cap;
};

struct det_sup {
	int fd;
	struct det_shm_header *hdr;
	uint64_t size;
	char err[512];

	/* drain */
	sqlite3 *db;
	sqlite3_stmt *ev_batch, *ev_one, *obj_stmt, *site_stmt, *thread_stmt, *result_stmt, *data_stmt;
	uint64_t *thread_idx; /* events drained per thread */
	uint64_t *busy_seq;   /* per thread: the unpublished event it was last seen holding... */
	uint64_t *busy_since; /* ... since when (ns); a thread that died holding one never publishes it */
	struct site_map sites;
	_Atomic int stop, dead;
	uint64_t tsc_start, mono_start;
	double tsc_per_ns;
	struct det_drain_stats stats;
	struct pending *pending; /* per thread */
	uint64_t data_off;       /* replay: where recorded input data starts */
	int turns_fd;            /* replay: the enforcement backend's descriptor (kmod: owns the schedule), -1: none */
};

/* Pipes the program may make (inodes remembered; a fuller table only
 * makes later pipes count as outside ones, recorded rather than re-read). */
#define SUP_PIPES 8192
#define SUP_FILES 4096 /* files a recording lists for `detrec pack` */

/* Sizes that decide the region's layout. */
struct sup_layout {
	uint32_t mode, max_threads, rings, objects_cap;
	uint64_t ring_entries, objrev_count, sched_entries, data_bytes;
};

SUP_HIDDEN struct det_sup *sup_alloc(void);
SUP_HIDDEN int sup_map(struct det_sup *s, const struct sup_layout *l);
SUP_HIDDEN int sup_fail(struct det_sup *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
SUP_HIDDEN uint64_t sup_mono_ns(void);
SUP_HIDDEN uint32_t sup_pow2(uint64_t n, uint32_t min);

#endif /* DET_SUPERVISOR_H */
