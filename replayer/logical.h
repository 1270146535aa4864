/*
 * replayer/logical.h - logical time, turns by clock (replayer/logical.c).
 *
 * Rules of this file:
 *  - Its own folder's files call these directly; preload/ and the other
 *    modes reach them through det_ops (preload/mode.h), which the table at
 *    the end of replayer/logical.c fills.
 */
#ifndef DET_LOGICAL_H
#define DET_LOGICAL_H

#include "runtime.h"

DET_HIDDEN void det_logical_start(struct det_thread *t);
DET_HIDDEN void det_logical_acquire(struct det_thread *t);
DET_HIDDEN void det_logical_release(struct det_thread *t);
DET_HIDDEN void det_logical_after_event(struct det_thread *t);
DET_HIDDEN void det_logical_leave(struct det_thread *t);
DET_HIDDEN void det_logical_runnable(struct det_thread *waker, uint32_t num);
DET_HIDDEN void det_logical_wait_turn(struct det_thread *t);
/* det-cc: publish the clock (a tick quantum ended); give up a turn held
 * for memory points. */
DET_HIDDEN void det_logical_tick(struct det_thread *t);
/* det-cc: a memory point with no turn held for points, or the end of such a
 * turn's quantum: (re)take the turn for the access that follows. */
DET_HIDDEN void det_logical_point(struct det_thread *t);

#endif /* DET_LOGICAL_H */
