/*
 * preload/threads.h - what the other wrapper files use of preload/threads.c.
 *
 * Rules of this file:
 *  - Declarations only.
 */
#ifndef DET_THREADS_H
#define DET_THREADS_H

#include "runtime.h"

/* Is this pthread_once call the unwinder's own (it passes through)? */
DET_HIDDEN int from_unwinder(uint64_t ra, uint64_t own_ra);
/* Record: unlock a FILE det locked for the program; strict mode's waiters
 * for it try again. */
DET_HIDDEN void file_unlocked(struct det_thread *t, FILE *f);
/* The process made a thread (pthread_create, at its event): stdio's input
 * calls are events from then on (stdio.c). */
extern DET_HIDDEN _Atomic int det_threads_made;
/* A forked child's first steps: no thread of this process holds det's locks. */
DET_HIDDEN void det_threads_forked(void);

#endif /* DET_THREADS_H */
