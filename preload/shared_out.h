/*
 * preload/shared_out.h - writes to a stream that several of the program's
 * processes write (preload/shared_out.c): a write's place in the order and
 * the write itself happen under one lock per stream, in record and replay.
 *
 * Rules of this file:
 *  - Declarations only; the definitions live in preload/shared_out.c.
 */
#ifndef DET_SHARED_OUT_H
#define DET_SHARED_OUT_H

#include "runtime.h"

/* The lock of fd's stream, or NULL when no lock is needed: the program has
 * one process (no other process can write it), fd is not a stream (a
 * regular file's writes are no events), or strict mode records (one thread
 * runs at a time, the write inside its turn). */
DET_HIDDEN struct det_out_lock *shared_out(int fd);
DET_HIDDEN void shared_out_lock(struct det_out_lock *l);
DET_HIDDEN void shared_out_unlock(struct det_out_lock *l);

#endif /* DET_SHARED_OUT_H */
