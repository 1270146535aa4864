/*
 * preload/process.h - what the files of the program's processes share
 * (preload/process.c, fork.c, exec.c, wait.c).
 *
 * Rules of this file:
 *  - Declarations only; each definition lives in the file of its call.
 */
#ifndef DET_PROCESS_H
#define DET_PROCESS_H

#include "runtime.h"

/* The region's process table (process.c). */
static inline struct det_proc *proc_at(uint32_t i)
{
	return det_shm_proc(det_hdr, i);
}

static inline uint32_t nprocs(void)
{
	uint32_t n = atomic_load(&det_hdr->next_proc);
	return n < det_hdr->max_procs ? n : det_hdr->max_procs;
}

/* A new process of the program (a fork's child, an exec'd or spawned
 * image) takes its entry idx and its first thread num (process.c). */
DET_HIDDEN void start_process(struct det_thread *t, uint32_t idx, uint32_t num, uint64_t ra);
/* Take the creating event's place and the child's numbers. Returns nonzero
 * in replay when the recording's call failed (result in op->rec) (fork.c). */
DET_HIDDEN int begin_create(struct det_thread *t, struct det_op *op, uint16_t kind, uint64_t ra, uint32_t *child,
			    uint32_t *idx);
/* The creating call returned `res` (the child's real pid, or -error) (fork.c). */
DET_HIDDEN pid_t end_create(struct det_op *op, uint32_t idx, int64_t res, int ended);
/* Replay: until the threads of process idx but `except` (made: only those
 * made so far, not an image's to come) have done their recorded events
 * before place `before` (UINT64_MAX: all of them), or the process is gone. */
DET_HIDDEN void det_replay_wait_threads_of(uint32_t idx, uint32_t except, int made, uint64_t before);

#endif /* DET_PROCESS_H */
