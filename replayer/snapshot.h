/*
 * replayer/snapshot.h - snapshots of the replayed process under gdb
 * (replayer/snapshot.c).
 *
 * Rules of this file: only replayer/ calls these; every place a thread of a
 * replay waits inside det for long calls det_snap_point in its loop.
 */
#ifndef DET_SNAPSHOT_H
#define DET_SNAPSHOT_H

#include "runtime.h"
#include "det/gdb.h"

/* Read and written by det's gdb extension (replayer/enforce.c). */
extern struct det_gdb_control det_gdb_control;

/* The thread holding the turn, before its event `seq`, every other thread
 * settled: snapshot the process (or say in det_gdb_control.snap_refused why
 * not). In a snapshot process that gdb resumes, this returns there. */
DET_HIDDEN void det_snap_take(struct det_thread *t, uint64_t seq);

/* A waiting thread's loop: save its context if a snapshot is being taken,
 * and stay until it is. Costs one load otherwise. */
DET_HIDDEN void det_snap_point(struct det_thread *t);

#endif /* DET_SNAPSHOT_H */
