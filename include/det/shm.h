/*
 * include/det/shm.h - the shared-memory region between libdet.so (inside the
 * program) and the supervisor (detrec / detreplay, through libdetsup.so).
 *
 * Rules of this file:
 *  - It is an ABI between two processes built from the same tree: fixed-size
 *    types only, explicit padding, no pointers (offsets from the region start).
 *  - The supervisor creates the region (a memfd), fills the header and names
 *    it in the environment variable DET_SHM_ENV as "PID:FD", its own pid and
 *    fd; every process of the program (children and exec'd images too)
 *    opens /proc/PID/fd/FD and maps it at DET_SHM_ADDR, so that det's memory
 *    never moves the program's own mappings between recording and replay,
 *    and the program's file descriptors are the ones it would have natively.
 *  - Bump DET_SHM_VERSION on any change; the runtime refuses a mismatch.
 *  - x86_64 only: the ordering arguments in recorder/rings.c rely on TSO.
 */
#ifndef DET_SHM_H
#define DET_SHM_H

#include <stdint.h>
#ifndef __cplusplus
#include <stdatomic.h>
#define DET_ATOMIC(t) _Atomic t
#else
#define DET_ATOMIC(t) t
#endif

#define DET_SHM_MAGIC   0x31306d6873746564ULL /* "detshm01" */
#define DET_SHM_VERSION 16
#define DET_SHM_ADDR    0x200000000000UL
/* Fixed width ("%07d:%06d") so that the environment, and with it the
 * initial stack, has the same size in every mode. */
#define DET_SHM_ENV     "_DET_SHM"
/* The raw system call instructions libdet.so traps where one thread runs at
 * a time (preload/trapped_syscalls.c says the format; det.check.patch
 * computes them) */
#define DET_SYSCALL_SITES_ENV "_DET_SYSCALL_SITES"

enum det_mode {
	DET_MODE_RECORD = 1,
	DET_MODE_REPLAY = 2,
};

/* Replay's enforcement backends (include/det/turns.def, replayer/turns.h). */
enum det_turns_backend {
#define DET_TURNS(name, number, description) DET_TURNS_##name = number,
#include "det/turns.def"
#undef DET_TURNS
};

/* header.flags */
#define DET_F_RELAXED   0x1  /* replay: per-object order only */
#define DET_F_STDIN_FED 0x2  /* stdin is a pipe det fills with the recorded input */
#define DET_F_TS_NS     0x4  /* some process traps rdtsc: its events say so (DET_RF_TS_NS) */
#define DET_F_STRICT    0x8  /* one thread runs at a time, switching only at events */
#define DET_F_LOGICAL   0x10 /* with STRICT's waits: threads take turns by logical clock (Kendo) */
#define DET_F_CC_POINTS 0x20 /* chaos: PCT change points count det-cc memory points, not events */
#define DET_F_NOTRACE   0x40 /* nobody reads the rings (detrun): a full ring is simply overwritten */
#define DET_F_ALL_ORDERED 0x80 /* replay under gdb: inputs too wait for their place in one order, so a
				    * stop before event N is there (inputs run ahead otherwise) */
#define DET_F_HOLD_FAULTS 0x100 /* replay (a standby replica): a fatal signal at its default action stops
				 * the whole process for gdb first (detrec --follow --standby) */

/* The record clock packs the thread count and, in strict mode, the next
 * event number, so a create takes its sequence number and its child's
 * number in one atomic add: thread numbers follow creation order exactly.
 * Parallel recording numbers events per object instead (struct det_rec). */
#define DET_SEQ_BITS  48
#define DET_SEQ_MASK  ((1ULL << DET_SEQ_BITS) - 1)
#define DET_THREAD_ONE (1ULL << DET_SEQ_BITS)

enum det_thread_state {
	DET_TS_FREE = 0,
	DET_TS_STARTING = 1, /* created, not yet running */
	DET_TS_RUNNING = 2,
	DET_TS_EXITING = 3,  /* recorded its exit; the kernel thread may still run destructors */
	DET_TS_PARKED = 4,   /* replay: past the end of its recorded events */
};

/*
 * One entry of a thread's ring; 32 bytes, two to a cache line. The capture
 * log holds these as they are (docs/TRACE_FORMAT.md), so this layout is
 * part of the log format.
 *
 * seq is the event's place in the order:
 *  - strict mode: its number in the global order (the clock);
 *  - parallel recording: its position among the events of its object (obj,
 *    or object 0 for ordered events without one, like fd_open), counted
 *    from 0; DET_SEQ_OBSERVE | n for an event that only saw the object (a
 *    failed trylock: n of the object's events came before it, and it does
 *    not count as one); DET_SEQ_NONE for an input, which needs no order
 *    (a hand-off through a descriptor has one: det_kind_handoff).
 *    The total order is built after the run (recorder/convert_merge.c).
 *
 * An event's timestamp is dts ticks after the thread's previous one (its
 * previous event's, or a DET_REC_TS entry's); its result is 0 unless a
 * RESULT entry follows it (or flags say DET_RF_PENDING); its input data,
 * if any, is in the DATA entries before it.
 */
struct det_rec {
	uint64_t seq;
	union {
		uint64_t ra;     /* event: return address of the interposed call; OBJECT: the object's address */
		int64_t result;  /* RESULT: the result */
		uint64_t ts;     /* TS: the timestamp the thread's next dts counts from */
	};
	uint32_t obj;     /* object id (0: none) */
	uint32_t aux;     /* kind-specific, see events.def */
	uint32_t dts;     /* event: timestamp (TSC ticks, or ns: DET_RF_TS_NS) minus the thread's previous one */
	uint16_t kind;    /* enum det_kind, or DET_REC_* */
	uint16_t flags;   /* DET_RF_*; DATA: the bytes it carries */
};

/* det_rec.flags: ts is CLOCK_MONOTONIC ns, not TSC ticks (this process
 * traps rdtsc; the others of the same program may not). */
#define DET_RF_TS_NS 0x1
/* det_rec.flags of an event: its result is DET_RESULT_PENDING (a RESULT
 * entry says what it became, if it came back) */
#define DET_RF_PENDING 0x2

/* aux of a SIGNAL event: the signal number and where it was delivered; one
 * delivered neither BEFORE nor UNANCHORED came as the thread left det after
 * its previous event, and the trace's order keeps it right after that one. */
#define DET_SIG_BEFORE 0x10000     /* as the thread next called into det */
#define DET_SIG_UNANCHORED 0x20000 /* wherever the thread was (it made no event) */
/* with DET_SIG_BEFORE: while the thread waited in a call det made for it (a
 * read, a join...), which the signal interrupted; replay delivers it as the
 * thread comes to the wait's next event, before that event */
#define DET_SIG_IN_WAIT 0x40000
/* with DET_SIG_BEFORE: as the call that let it in returned (sigprocmask or
 * pthread_sigmask unblocking it, raise whose handler's end unblocked it, a
 * raw system call it interrupted): replay delivers it at the same call */
#define DET_SIG_AT_CALL 0x80000
#define DET_SIG_NUMBER 0xffff

#define DET_SEQ_NONE    UINT64_MAX
#define DET_SEQ_OBSERVE (1ULL << 63)

/* The result of a call logged before it ran that never came back: the
 * thread (or its process) died in it. Replay does not come back either. */
#define DET_RESULT_PENDING INT64_MIN

/* Ring entries that are not events. OBJECT, DATA, AUXSEQ and TS belong to
 * the thread's next event; RESULT to its latest one or an earlier one. */
#define DET_REC_OBJECT 0x8001 /* a new object: obj = id, aux = enum det_objkind, ra = its address */
#define DET_REC_RESULT 0x8002 /* the thread's event number `seq` (its index) returned `result`, not 0 */
#define DET_REC_DATA   0x8003 /* up to DET_DATA_CHUNK bytes of the next event's data, in place; flags: how many */
#define DET_REC_AUXSEQ 0x8004 /* parallel: the next event's position `seq` on its second object `obj` */
#define DET_REC_TS     0x8005 /* the next event's dts counts from `ts` (flags: DET_RF_TS_NS), not the last event's */
#define DET_DATA_CHUNK 28     /* a data entry carries its bytes over seq..dts */

/* Per-object event counters of a parallel recording, one cache line each
 * (two objects used by two threads never share a line). */
struct det_objseq {
	DET_ATOMIC(uint64_t) n;
	uint32_t free_next; /* record: the id given back after this one, of its kind (0: none) */
	uint8_t pad[52];
};

/* One replay schedule entry; 64 bytes. Each thread has an array of them. */
/* det_sched.flags: a strict recording's watchdog preempted the thread since
 * its previous event, so the code before this one ran out of its turn */
#define DET_SCHED_RAN_FREE 1u

struct det_sched {
	uint64_t seq;
	int64_t result;
	uint32_t obj;
	uint32_t aux;
	uint16_t kind;
	uint16_t flags;         /* DET_SCHED_* */
	uint32_t dep_thread[2]; /* number + 1 of a thread whose event must be done first; 0: none */
	uint32_t dep_idx[2];    /* ... that thread's event index */
	uint32_t wake[2];       /* number + 1 of a thread that may wait for this event; DET_WAKE_ALL: any may */
	uint32_t data_len;      /* bytes of recorded data */
	uint64_t data_off;      /* where they are in the region */
};

/* One thread; 320 bytes. Cache lines are split by writer. */
struct det_slot {
	/* line 0: identity, written before the thread runs */
	uint32_t num;
	uint32_t parent;
	int32_t ktid;           /* kernel thread id in this run */
	uint32_t ring;          /* ring index + 1, 0: none */
	uint64_t create_seq;
	uint64_t pthread;       /* pthread_self() */
	uint64_t start_routine; /* handed from creator to child */
	uint64_t start_arg;
	uint32_t obj;           /* the thread's own object id */
	uint32_t proc;          /* its process: index in the process table */
	int32_t rec_ktid;       /* replay: the thread id the recording saw (0: not known) */
	uint32_t pad0;
	/* line 1: state, written by the thread */
	DET_ATOMIC(uint32_t) state;
	DET_ATOMIC(uint32_t) blocked_kind; /* event kind it is blocked in, 0: running */
	uint32_t blocked_obj;
	DET_ATOMIC(uint32_t) strict_sleeping; /* strict: 1 while asleep on strict_wake (a hand-off wakes it) */
	uint64_t blocked_ra;
	DET_ATOMIC(uint32_t) strict_wants; /* strict: waits for the run token */
	DET_ATOMIC(uint32_t) strict_wake;  /* strict: futex word, bumped when handed the token */
	DET_ATOMIC(int32_t) prio;          /* chaos (PCT): the thread's priority */
	DET_ATOMIC(uint32_t) strict_yielded; /* strict: handed the token on after an event and waits to
					      * get it back (replay: did so when the recording ended) */
	uint64_t blocked_addr;             /* the object's address, when its id was not known yet */
	DET_ATOMIC(uint64_t) strict_defer; /* chaos: it polled; others go first until this event number */
	DET_ATOMIC(uint64_t) pipe_writing; /* replay: the program's pipe it may wait to write into
					    * (det_own_pipe), 0: none; a reader due later drains it */
	/* line 2: producer side of the ring */
	DET_ATOMIC(uint64_t) head;      /* entries published */
	uint64_t pad2a;
	uint32_t pad2b;
	DET_ATOMIC(uint32_t) waiting;   /* sleeps until the supervisor drains its ring */
	uint8_t pad2[40];
	/* line 3: consumer side, written by the supervisor */
	DET_ATOMIC(uint64_t) tail;
	uint8_t pad3[56];
	/* line 4: replay */
	DET_ATOMIC(uint64_t) done;      /* events completed */
	DET_ATOMIC(uint32_t) sleeping;  /* futex word: 1 while asleep in a turnstile */
	DET_ATOMIC(uint32_t) at_turnstile; /* waiting for its turn, or parked */
	uint64_t sched_off;             /* this thread's window of struct det_sched entries... */
	/* ... of its recorded events: event i is entry i % sched_window; a live
	 * replica's (replayer/follow.c) is DET_SCHED_OPEN until the capture ended */
	DET_ATOMIC(uint64_t) sched_count;
	uint64_t resume_idx;            /* events done when it called exec: the new image goes on from there */
	uint32_t sched_window;
	uint32_t pad4a;
	DET_ATOMIC(uint64_t) sched_filled; /* sched_gen << DET_FILLED_BITS | entries written so far */
	DET_ATOMIC(uint32_t) kicks;     /* futex turns: bumped when an event it may wait for is done */
	DET_ATOMIC(uint32_t) cancel_at_large; /* replay: DET_CANCEL_* bits (enforce.c det_replay_cancel_request) */
	/* line 5: strict mode's waits, written under the run token */
	DET_ATOMIC(uint64_t) strict_cond;  /* the condition variable or barrier it waits on, 0: none */
	uint64_t strict_ticket;            /* the order in which waiters started waiting */
	DET_ATOMIC(uint32_t) strict_timedout;
	DET_ATOMIC(uint32_t) strict_cancel_point; /* its wait is a cancellation point (a condition wait,
						   * a join, a semaphore): pthread_cancel wakes it */
	DET_ATOMIC(uint64_t) lt_clock;     /* logical time: the thread's clock, as last published */
	DET_ATOMIC(uint32_t) lt_counted;   /* logical time: it takes part in the turn order (not blocked) */
	DET_ATOMIC(uint32_t) lt_sleeping;  /* logical time: asleep until its turn may have come... */
	DET_ATOMIC(uint32_t) lt_wake;      /* ...on this futex word */
	DET_ATOMIC(uint32_t) lt_retry;     /* logical time: it found its lock taken again each of its
					    * last LT_RETRIES wake-ups: its next waker lets it go first */
	uint8_t pad5[16];
	/* line 6: record: how the thread died, if a signal that ends the
	 * program (a fault, abort) killed it (preload/signals.c note_crash) */
	DET_ATOMIC(uint32_t) crash_sig;    /* 0: none; written last */
	int32_t crash_code;                /* si_code */
	uint64_t crash_pc;                 /* where it was: the interrupted instruction */
	uint64_t crash_addr;               /* a fault's address (si_addr), else 0 */
	uint64_t crash_call_ra;            /* inside a call det wraps: where the program made it */
	uint64_t crash_caller;             /* the first return address into the program's own code
					    * on its stack (its frame, when it died inside a library) */
	uint64_t crash_entry;              /* inside det: a return address into the entry the program
					    * called (its exported stub: the function's name), else 0 */
	uint8_t pad6[16];
};

/* A cancellation that acted where det does not see (THREAD_CANCELED aux
 * ELSEWHERE: an asynchronous one, or a cancellation point inside libc) is
 * sent for real in replay, once both the canceler's THREAD_CANCEL was
 * replayed and the target's next event is that THREAD_CANCELED. */
#define DET_CANCEL_REQUESTED 1u /* the canceler's pthread_cancel was replayed */
#define DET_CANCEL_DUE 2u       /* the target's next event is its THREAD_CANCELED */
#define DET_CANCEL_SENT 4u      /* one of them sent the request */

/* Object table entry: address -> id, open addressing; a deleted entry
 * (a destroyed object) is taken again by a new address (preload/runtime.c). */
struct det_objent {
	DET_ATOMIC(uint64_t) addr; /* 0: empty, 1: deleted */
	DET_ATOMIC(uint32_t) id;
	uint32_t kind;
};
#define DET_OBJ_DELETED 1
#define DET_OBJ_FREE_KINDS 12 /* object kinds (events.def DET_OBJKIND) whose ids are given back */
/* A destroyed object's id is taken again only after this many more of its
 * kind were destroyed: a program's use of the address soon after (a freed
 * queue's mutex) is a new id, which det.names tells apart ("after mutex 4
 * was destroyed there"), and small programs keep an id per object. */
#define DET_OBJ_QUARANTINE 1024
struct det_obj_free {
	uint32_t head, tail; /* oldest and newest id given back, 0: none */
	uint32_t count;
};

static inline uint64_t det_obj_hash(uint64_t a)
{
	a ^= a >> 33;
	a *= 0xff51afd7ed558ccdULL;
	a ^= a >> 33;
	return a;
}

/* The id bound to addr in the object table, or 0. */
static inline uint32_t det_obj_lookup(const struct det_objent *tab, uint32_t cap, uint64_t addr)
{
	uint64_t mask = cap - 1;
	for (uint64_t i = det_obj_hash(addr) & mask, n = 0; n <= mask; i = (i + 1) & mask, n++) {
		uint64_t cur = tab[i].addr;
		if (cur == addr)
			return tab[i].id;
		if (cur == 0)
			return 0;
	}
	return 0;
}

/* Where a replay stopped because the program did something else. */
struct det_divergence {
	uint32_t thread;
	uint32_t got_kind;
	uint64_t idx;        /* the thread's event index */
	uint64_t seq;        /* recorded seq of the expected event (or ~0: none) */
	uint32_t want_kind, want_obj;
	uint32_t got_obj, reason;
	uint64_t got_addr;
	uint64_t ra;
	char what[192];
};

/* det_shm_header.failed: the first to stop the program claims it, writes
 * error, then marks it written; others wait for that before they exit. */
enum det_failed_state {
	DET_FAILED_NO = 0,
	DET_FAILED_WRITING = 1,
	DET_FAILED_WRITTEN = 2,
};

/* det_sched.wake[1] when more than two threads wait for one event (its
 * object's chain and the relaxed schedule's other chains: time, mappings):
 * the turnstile wakes every sleeper, each looks again. */
#define DET_WAKE_ALL UINT32_MAX

enum det_divergence_reason {
	DET_DIV_NONE = 0,
	DET_DIV_KIND = 1,      /* another kind of event */
	DET_DIV_OBJECT = 2,    /* same kind, another object */
	DET_DIV_RESULT = 3,    /* the operation returned something else */
	DET_DIV_EXTRA = 4,     /* more events than recorded */
	DET_DIV_THREAD = 5,    /* a thread that was not recorded */
};

/*
 * One process of the program. The top one is index 0; fork, vfork,
 * posix_spawn, system and popen add one each. Replay fills the table by
 * the recording's process numbers (threads.process); recording by
 * arrival, renumbered in creation order when the trace is written.
 */
enum det_proc_state {
	DET_PS_FREE = 0,
	DET_PS_RESERVED = 1, /* created, not yet running det */
	DET_PS_RUNNING = 2,
	DET_PS_EXEC = 3,     /* a thread called exec: the new image resumes thread exec_thread */
	DET_PS_GONE = 4,     /* exited, or exec'd into something det cannot follow */
};

struct det_proc {
	DET_ATOMIC(int32_t) pid;        /* kernel pid in this run, 0: not yet known */
	int32_t rec_pid;                /* the pid the recording saw (= pid when recording) */
	uint32_t parent;                /* parent's index + 1; 0: none (the top process) */
	uint32_t first_thread;          /* its first thread's number */
	uint64_t create_seq;            /* the fork or spawn event */
	/* posix_spawn in progress: (process index + 1) << 32 | (thread number
	 * + 1) that the new image becomes, taken by that image; 0: none */
	DET_ATOMIC(uint64_t) spawn_claim;
	DET_ATOMIC(uint32_t) state;     /* enum det_proc_state */
	DET_ATOMIC(uint32_t) exec_thread;  /* thread number + 1 that called exec */
	DET_ATOMIC(int32_t) status;     /* wait status, once its parent collected it */
	DET_ATOMIC(uint32_t) status_known;
	uint32_t execs;                 /* images it exec'd */
	/* replay: the parent getppid returned when that parent is not one of
	 * the program's processes (the top process's), recorded and live */
	int32_t rec_ppid;
	DET_ATOMIC(int32_t) live_ppid;
	int32_t rec_status;             /* replay: how it ended in the recording (a wait status)... */
	uint32_t rec_status_known;      /* ... if its parent collected it */
	char exe[60];                   /* the last image's file name (for reports; may be cut) */
};

/* A loaded ELF object, for symbolizing return addresses later. */
#define DET_MAX_MODULES 256
struct det_module {
	uint64_t base; /* load bias */
	char path[248];
};

/*
 * A file the program read or loaded, for `detrec pack` (recorder/det_record/pack.py):
 * its path as the program named it, made absolute, with its size and mtime
 * then, so that a file changed since is never packed as the one read.
 */
#define DET_FILE_OPENED 1 /* opened for reading: open, openat, fopen */
#define DET_FILE_LOADED 2 /* an ELF object of a process: the program, its loader, libraries, dlopen'ed */
#define DET_FILE_EXEC   3 /* a path the program exec'd */
#define DET_FILE_CUT    0x100 /* with a kind: the path was longer than path[] and is cut */
struct det_file {
	int64_t size;
	int64_t mtime_ns;
	DET_ATOMIC(uint32_t) how; /* DET_FILE_* (| DET_FILE_CUT), set last; 0 while being written */
	uint32_t pad;
	char path[488];
};

struct det_shm_header {
	uint64_t magic;
	uint32_t version;
	uint32_t mode;          /* enum det_mode */
	uint64_t size;
	uint32_t flags;         /* DET_F_* */
	uint32_t max_threads;
	uint64_t slots_off;
	uint64_t objects_off;
	uint32_t objects_cap;   /* power of two */
	uint32_t ring_count;
	uint64_t ring_owner_off; /* uint32_t per ring: owner thread number + 1 */
	uint64_t rings_off;
	uint64_t ring_entries;  /* struct det_rec per ring */
	uint64_t sched_off;     /* replay: start of the schedule arrays */
	uint64_t objrev_off;    /* replay: uint64_t address per recorded object id */
	DET_ATOMIC(uint32_t) sched_gen;   /* replay: the run the schedule windows are filled for */
	DET_ATOMIC(uint32_t) replay_runs; /* replay: runs started (gdb starts the program again) */
	DET_ATOMIC(uint32_t) feed_kick;   /* replay: futex, bumped to wake the schedule feeder */
	DET_ATOMIC(uint32_t) feed_failed; /* replay: the feeder found the trace damaged (see error) */
	uint64_t objseq_off;    /* record: struct det_objseq per object id */
	uint32_t objseq_count;  /* ... ids below this */
	uint32_t pad_objseq;
	uint32_t objrev_count;
	uint32_t threads_recorded; /* replay: threads in the trace */
	uint64_t events_recorded;  /* replay: events in the trace */

	/* written by the runtime */
	DET_ATOMIC(uint32_t) attached;   /* program pid once libdet is initialised */
	DET_ATOMIC(uint32_t) capture_kick; /* futex: bumped when a ring is full (wakes the capture) */
	DET_ATOMIC(uint32_t) rings_freed;  /* futex: bumped by the capture when it frees rings */
	/* record: thread number + 1 that last took a signal it brought on itself
	 * whose default action kills (a fault, an abort): if the program died of
	 * it, or exited in its handler, it ended in that thread, maybe inside a
	 * call det wraps (trace meta ran_last). Replay: the thread that ran last
	 * (meta ran_last), which runs on alone, outside det, once every recorded
	 * event is done (replayer/enforce.c run_last) */
	DET_ATOMIC(uint32_t) ran_last;
	uint64_t tsc0, mono0;            /* TSC and CLOCK_MONOTONIC (ns) at attach */
	DET_ATOMIC(uint32_t) failed;     /* nonzero: the runtime stopped the program (enum below) */
	DET_ATOMIC(uint32_t) diverged;
	struct det_divergence div;
	char error[256];                 /* why the runtime stopped the program */
	DET_ATOMIC(uint32_t) module_count;
	uint32_t pad_modules;
	struct det_module modules[DET_MAX_MODULES];

	/* strict mode: who runs */
	DET_ATOMIC(uint32_t) strict_owner;   /* thread number + 1 holding the run token; 0: free.
					      * Replay: the thread that held it when the recording's
					      * program ended by itself (trace meta ran_last: see
					      * ran_last above) */
	DET_ATOMIC(uint32_t) strict_wanting; /* threads waiting for it */
	uint32_t strict_quantum;             /* events a thread runs before it offers the token */
	uint32_t strict_watchdog_ms;         /* a holder that makes no event this long loses it */
	uint64_t chaos_seed;                 /* nonzero: seeded random scheduling (chaos) */
	DET_ATOMIC(uint32_t) preemptions;    /* watchdog preemptions: points not reproducible */
	uint32_t chaos_delay_us;             /* parallel chaos: the longest delay at an event */
	uint32_t pct_changes;                /* chaos in strict mode (PCT): d-1 priority change points... */
	DET_ATOMIC(uint32_t) pct_fired;      /* ...a bit for each one passed */
	uint64_t pct_change[8];              /* ...at these event numbers, drawn independently (unsorted) */
	uint32_t strict_spin_steps;          /* chaos: steps a thread runs while others wait before it defers */
	DET_ATOMIC(uint64_t) strict_tickets; /* next waiter ticket */
	uint32_t cc_quantum;                 /* det-cc ticks a thread runs before it offers the token */
	DET_ATOMIC(uint32_t) lt_owner;       /* logical time: thread number + 1 in its turn; 0: none */
	DET_ATOMIC(uint64_t) cc_points;      /* chaos: det-cc memory points passed, all threads */

	/* processes, and the pipes made inside the program (by inode, so a
	 * read end handed to an exec'd child is still known as internal) */
	uint64_t procs_off;
	uint32_t max_procs;
	DET_ATOMIC(uint32_t) next_proc;
	uint64_t pipes_off;
	uint32_t pipes_cap;                  /* power of two; entries are DET_ATOMIC(uint64_t) inodes */
	/* locks on the streams several processes write (struct det_out_lock,
	 * preload/shared_out.c) */
	uint32_t out_locks_cap;              /* power of two */
	uint64_t out_locks_off;

	/* replay: how threads wait for their turns (enum det_turns_backend) */
	uint32_t turns;
	uint32_t pad_turns;
	uint64_t turns_arg[2];               /* the backend's own (kmod: schedule id and key) */

	/* record: the files the program read or loaded (struct det_file), and
	 * a set of their path hashes (DET_ATOMIC(uint64_t), 2 * files_cap) */
	uint64_t files_off;
	uint64_t file_keys_off;
	uint32_t files_cap;                  /* power of two */
	DET_ATOMIC(uint32_t) files_count;    /* may pass files_cap: the rest were not kept */

	/* own cache lines: the hot counters */
	DET_ATOMIC(uint64_t) clock __attribute__((aligned(64))); /* record: next seq | threads << DET_SEQ_BITS */
	DET_ATOMIC(uint32_t) next_obj __attribute__((aligned(64)));
	uint8_t pad_next_obj[60];
	/* the lock of claiming object table entries and of obj_free; record:
	 * the ids of destroyed objects given back, a queue per object kind
	 * (through det_objseq.free_next), taken again by new objects of the
	 * kind once more than DET_OBJ_QUARANTINE wait (preload/runtime.c) */
	DET_ATOMIC(uint32_t) obj_lock __attribute__((aligned(64)));
	struct det_obj_free obj_free[DET_OBJ_FREE_KINDS];
	/* record, parallel: the lock of atomics on memory the program's
	 * processes share (preload/atomics.c: each process's stripes are its
	 * own copy) */
	DET_ATOMIC(uint32_t) shared_atomic_lock;
	uint8_t pad_end[192 - 4 - 12 * DET_OBJ_FREE_KINDS - 4];
};

#define DET_FILLED_BITS 40
#define DET_FILLED_MASK ((1ULL << DET_FILLED_BITS) - 1)
/* A live replica's slot sched_count while the recording goes on: its
 * thread's number of events is not known before the capture's end */
#define DET_SCHED_OPEN (1ULL << 62)

#define DET_EXIT_STOPPED 125 /* exit status when the runtime stops the program */

static inline struct det_slot *det_shm_slot(struct det_shm_header *h, uint32_t num)
{
	return (struct det_slot *)((char *)h + h->slots_off) + num;
}

static inline struct det_proc *det_shm_proc(struct det_shm_header *h, uint32_t idx)
{
	return (struct det_proc *)((char *)h + h->procs_off) + idx;
}

/*
 * A stream (pipe, terminal, device) that several of the program's
 * processes write, by inode: who holds it takes a write's place in the
 * order and makes the write, so the order is the order the bytes reached
 * the stream (preload/shared_out.c).
 */
struct det_out_lock {
	DET_ATOMIC(uint64_t) key;     /* the stream's inode key (odd); 0: free entry */
	DET_ATOMIC(uint32_t) ready;   /* 1: mutex set up */
	uint32_t pad;
	uint64_t mutex[6];            /* a process-shared robust pthread_mutex_t */
};

static inline struct det_out_lock *det_shm_out_lock(struct det_shm_header *h, uint32_t idx)
{
	return (struct det_out_lock *)((char *)h + h->out_locks_off) + idx;
}

static inline struct det_file *det_shm_file(struct det_shm_header *h, uint32_t idx)
{
	return (struct det_file *)((char *)h + h->files_off) + idx;
}

/* Insert a nonzero key into an open-addressing set of mask + 1 slots:
 * 1 if it was not there (and now is), 0 if it was or the set is full. */
static inline int det_set_insert(DET_ATOMIC(uint64_t) *tab, uint64_t mask, uint64_t key)
{
	for (uint64_t i = det_obj_hash(key) & mask, n = 0; n <= mask; i = (i + 1) & mask, n++) {
		uint64_t cur = 0;
		if (atomic_compare_exchange_strong(&tab[i], &cur, key))
			return 1;
		if (cur == key)
			return 0;
	}
	return 0;
}

static inline struct det_objent *det_shm_objects(struct det_shm_header *h)
{
	return (struct det_objent *)((char *)h + h->objects_off);
}

static inline struct det_rec *det_shm_ring(struct det_shm_header *h, uint32_t ring)
{
	return (struct det_rec *)((char *)h + h->rings_off) + (uint64_t)ring * h->ring_entries;
}

static inline DET_ATOMIC(uint64_t) *det_shm_objseq(struct det_shm_header *h, uint32_t obj)
{
	return &((struct det_objseq *)((char *)h + h->objseq_off))[obj].n;
}

static inline DET_ATOMIC(uint32_t) *det_shm_ring_owner(struct det_shm_header *h, uint32_t ring)
{
	return (DET_ATOMIC(uint32_t) *)((char *)h + h->ring_owner_off) + ring;
}

#endif /* DET_SHM_H */
