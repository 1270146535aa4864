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

struct det_sup {
	int fd;
	struct det_shm_header *hdr;
	uint64_t size;
	char err[512];

	/* capture (recorder/capture.c) */
	int log_fd;
	_Atomic int stop;
	uint64_t tsc_start, mono_start;
	struct det_capture_stats cap;
	uint8_t *cap_seen;       /* per thread: its identity is in the log */
	void *cap_procs;         /* the process table as last written */
	size_t cap_procs_len;
	uint32_t cap_modules;    /* modules last written */
	uint64_t cap_state_at;   /* when the tables were last compared */

	uint64_t data_off;       /* replay: where recorded input data starts */
	struct feeder *feed;     /* replay: what streams the schedule (replayer/schedule.c) */
};

/* Pipes the program may make (inodes remembered; a fuller table only
 * makes later pipes count as outside ones, recorded rather than re-read). */
#define SUP_PIPES 8192

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
SUP_HIDDEN void sup_feed_free(struct det_sup *s);

#endif /* DET_SUPERVISOR_H */
