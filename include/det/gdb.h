/*
 * include/det/gdb.h - what det's gdb extension (gdb-ext/) and libdet.so
 * agree on during a replay under gdb.
 *
 * Rules of this file:
 *  - No inferior function calls: the extension only writes det_gdb_control
 *    (memory writes) and sets breakpoints on det_gdb_stop,
 *    det_gdb_diverged and det_gdb_snapshot, which libdet.so calls itself.
 *  - libdet.so is built with debug info, so the extension reads these
 *    structures (and det_hdr, det_tls) through gdb's expression evaluator
 *    with their real types: no layout is duplicated in Python.
 */
#ifndef DET_GDB_H
#define DET_GDB_H

#include <stdint.h>

/* Why det_gdb_stop was called. */
enum det_gdb_reason {
	DET_GDB_SEQ = 1,    /* the next event's seq reached stop_seq */
	DET_GDB_THREAD = 2, /* stop_thread is about to do an event */
	DET_GDB_KIND = 3,   /* an event of stop_kind (on stop_obj) is next */
};

/* Why a snapshot was not taken (det_gdb_control.snap_refused). */
enum det_snap_refusal {
	DET_SNAP_THREADS = 1,   /* a thread of the process did not reach a point det controls in time */
	DET_SNAP_PROCESSES = 2, /* the program has more than one process */
	DET_SNAP_MEMORY = 3,    /* no memory for the copy of the shared region */
	DET_SNAP_FORK = 4,      /* fork failed */
	DET_SNAP_BACKEND = 5,   /* the enforcement backend keeps turns outside the process (kmod) */
	DET_SNAP_SIGCHLD = 6,   /* the program handles SIGCHLD (a snapshot's helper process ends) */
	DET_SNAP_STRICT = 7,    /* strict or logical replay: its threads wait for the run token (strict.c) */
};

struct det_gdb_control {
	/* written by the extension */
	uint32_t attached;    /* nonzero: libdet.so checks the conditions below */
	uint32_t stop_thread; /* det thread number + 1; 0: any */
	uint64_t stop_seq;    /* stop before the event with seq >= this; UINT64_MAX: never */
	uint32_t stop_kind;   /* nonzero: stop before the next event of this kind */
	uint32_t stop_obj;    /* with stop_kind or alone: only on this object id */
	uint64_t snap_at;     /* snapshot the process before the first event with seq >= this; UINT64_MAX: never
			       * (replayer/snapshot.c; det_gdb_snapshot reports each one) */
	uint64_t snap_every;  /* then at snap_at + k * snap_every; 0: once */
	uint32_t snap_go;     /* in a snapshot process that gdb attached to: go on from here */
	uint32_t snap_refused; /* enum det_snap_refusal of the last snapshot not taken, 0: none */
	/* written by libdet.so before it calls det_gdb_stop */
	uint64_t seq;         /* the event about to happen */
	uint64_t idx;         /* its index among its thread's events */
	uint32_t thread;      /* its thread */
	uint32_t kind;
	uint32_t obj;
	uint32_t reason;      /* enum det_gdb_reason */
	uint64_t stops;       /* how many times det_gdb_stop was called */
};

#endif /* DET_GDB_H */
