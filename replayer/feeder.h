/*
 * replayer/feeder.h - libdetsup.so's replay side: what the feeder
 * (replayer/schedule.c) offers the supervisor's side of the enforcement
 * backends (replayer/sup_turns.c).
 *
 * Rules: the public API is include/det/sup.h; nothing here is exported.
 */
#ifndef DET_FEEDER_H
#define DET_FEEDER_H

#include "../supervisor/supervisor.h"

/* Every event's prerequisites (entry e's dep_thread, dep_idx) in one pass
 * over the trace, for a backend that loads them all at once. */
SUP_HIDDEN int sup_schedule_deps(struct det_sup *s,
				 void (*dep)(void *arg, uint32_t thread, uint64_t idx, const struct det_sched *e),
				 void *arg);

#endif /* DET_FEEDER_H */
