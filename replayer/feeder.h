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

/* The live follower (replayer/follow.c) feeds the windows of a region it
 * laid out (slots' sched_off, sched_count, sched_window set): open the
 * feeder on it; room: may thread t's next entry be written now (its window
 * has a free slot); put: write it and order it (its data, if any, already
 * at data_off); publish: every thread sees what was put. */
SUP_HIDDEN int sup_feed_open(struct det_sup *s, uint32_t nthreads, int64_t max_obj);
SUP_HIDDEN int sup_feed_room(struct det_sup *s, uint32_t t);
SUP_HIDDEN void sup_feed_put(struct det_sup *s, uint32_t t, uint64_t seq, int64_t result, uint16_t kind,
			     uint32_t obj, uint32_t aux, uint64_t data_off, uint32_t data_len);
SUP_HIDDEN void sup_feed_publish(struct det_sup *s);
SUP_HIDDEN uint64_t sup_feed_fed(struct det_sup *s, uint32_t t);
SUP_HIDDEN void sup_feed_release(struct det_sup *s);

#endif /* DET_FEEDER_H */
