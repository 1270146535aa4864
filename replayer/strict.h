/*
 * replayer/strict.h - the strict scheduler and chaos (replayer/strict.c).
 *
 * Rules of this file:
 *  - Its own folder's files call these directly; preload/ and the other
 *    modes reach them through det_ops (preload/mode.h), which the table at
 *    the end of replayer/strict.c fills.
 */
#ifndef DET_STRICT_H
#define DET_STRICT_H

#include "runtime.h"

DET_HIDDEN void det_strict_start(struct det_thread *t);
DET_HIDDEN void det_strict_acquire(struct det_thread *t);
DET_HIDDEN void det_strict_release(struct det_thread *t);
DET_HIDDEN void det_strict_process_ending(void);
DET_HIDDEN int det_strict_ending(void); /* the process has begun to end */
DET_HIDDEN enum det_point det_strict_point_of(uint16_t kind, int64_t result);
DET_HIDDEN void det_strict_after_event(struct det_thread *t, enum det_point why);
DET_HIDDEN void det_strict_created(uint32_t child);
/* A new thread waits for an event ring: not runnable, the token passed on. */
DET_HIDDEN void det_strict_not_ready(uint32_t num);
DET_HIDDEN void det_strict_runnable(uint32_t num);
/* Wait on obj in op (a condition, a barrier) until signalled; 1: timed out. */
DET_HIDDEN int det_strict_wait(struct det_op *op, const void *obj, const struct timespec *abstime,
			       clockid_t clock);
/* Wait until obj is released (not runnable meanwhile); for a contended lock. */
DET_HIDDEN void det_strict_wait_for(struct det_op *op, const void *obj);
/* The same at a cancellation point (a join, a semaphore): a pthread_cancel
 * wakes the thread, which acts on it here. */
DET_HIDDEN void det_strict_wait_for_cancelable(struct det_op *op, const void *obj);
DET_HIDDEN int det_strict_wait_until(struct det_op *op, const void *obj, const struct timespec *abstime,
				      clockid_t clock);
DET_HIDDEN int det_strict_sem_wait(struct det_op *op, const void *obj, const struct timespec *abstime,
				   clockid_t clock);
/* pthread_cancel(th) was sent: wake th if it waits at a cancellation point. */
DET_HIDDEN void det_strict_canceled(uint64_t th);
DET_HIDDEN int det_strict_signal(const void *obj, int all);
DET_HIDDEN void det_strict_unlocked(struct det_thread *t, const void *obj);
DET_HIDDEN void det_strict_barrier_init(const void *b, unsigned count);
DET_HIDDEN int det_strict_barrier_wait(struct det_op *arrive, const void *b);
DET_HIDDEN void det_chaos_delay(struct det_thread *t);
/* det-cc: the holder's tick quantum ended (why DET_CC_TICK) or it reached
 * a memory point under PCT (DET_CC_POINT): it may hand its turn on (the
 * decision of det_strict_after_event's), after log(t, why) records the
 * switch. */
DET_HIDDEN void det_strict_cc_yield(struct det_thread *t, int why, void (*log)(struct det_thread *t, int why));

#endif /* DET_STRICT_H */
