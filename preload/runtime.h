/*
 * preload/runtime.h - internal API of libdet.so, the preload runtime.
 *
 * Rules of this file:
 *  - Every interposed function (preload/threads.c, sync.c, ...) goes through the
 *    det_*_begin / det_*_end pairs below; they hide the mode. The record side
 *    lives in recorder/rings.c, the replay side in replayer/enforce.c, and
 *    both are reached through det_ops (preload/mode.h) only.
 *  - Nothing here may call an interposed function (pthread_*, stdio, malloc
 *    is allowed but avoided on hot paths): use the real_* pointers.
 *  - Hot-path helpers are static inline; no syscall, lock or allocation on
 *    the record hot path.
 *  - Exported symbols are the interposed libc names and det_* only.
 */
#ifndef DET_RUNTIME_H
#define DET_RUNTIME_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <semaphore.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/msg.h>
#include <sys/select.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/sendfile.h>
#include <fcntl.h> /* splice, tee, loff_t */
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/times.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "det/events.h"
#include "det/shm.h"
#include "mode.h"
#include "entries.h"

#define DET_HIDDEN __attribute__((visibility("hidden")))
#define det_likely(x) __builtin_expect(!!(x), 1)
#define det_unlikely(x) __builtin_expect(!!(x), 0)

/* The real libc functions, resolved once at start-up. */
struct det_real {
#define DET_REAL(ret, name, args) ret (*name) args;
#include "real.def"
#undef DET_REAL
};
extern DET_HIDDEN struct det_real real;

/* Per-thread runtime state (static TLS). */
struct det_thread {
	struct det_slot *slot;
	uint32_t num;
	uint32_t active;   /* attached to the region: events are recorded/enforced */
	uint32_t depth;    /* > 0 inside the runtime: nested calls pass through */
	int32_t fork_parent; /* in libc's fork: the forking process's pid; its at-fork handlers' calls are
			      * events there, and pass through in the child (preload/fork.c) */
	uint32_t exited;   /* its exit event is done */
	uint64_t idx;      /* events so far (= index of the next one) */
	/* record: this thread's ring */
	struct det_rec *ring;
	uint64_t ring_entries;
	uint64_t head;     /* entries written (published or not) */
	uint64_t pos;      /* head % ring_entries */
	uint64_t tail_seen;
	uint64_t kick_at;  /* head at which it wakes the capture again */
	uint64_t published;
	uint64_t ts_last;  /* its last event's timestamp (0: none yet), which the next one's dts counts from */
	uint16_t ts_flags; /* ... and its DET_RF_TS_NS */
	/* replay: this thread's recorded events */
	const struct det_sched *sched;
	uint64_t sched_count;
	uint64_t sched_known; /* entries the feeder is known to have written (the slot's sched_filled, as
			       * last read: its line is the feeder's to write) */
	uint64_t sched_mask;  /* its window's entries - 1 (a power of two) */
	uint64_t feed_kick_at; /* t->idx at which it next tells the feeder its window has room */
	uint32_t snap_seen;   /* replay under gdb: the last snapshot request it answered (replayer/snapshot.c) */
	uint32_t once_ran; /* pthread_once: the init routine ran in this thread */
	uint32_t sig_due;  /* replay: its next recorded event is a signal (or cancel_async); record: signals wait */
	uint32_t cancel_async; /* replay: its cancellation type is asynchronous again as it leaves det
				* (replayer/enforce.c cancel_due; det_signals_due does it) */
	int self_signal;   /* raise/pthread_kill to itself in progress: deliver at once */
	int letting_in;    /* in a call that unblocks signals: hold what comes, for det_signals_at_call */
	uint32_t nsigs;    /* record: signals held for the next event boundary */
	uint32_t sigs_held; /* record: some of them wait for the thread's next call into det */
	struct det_op *wait_op; /* record: the blocking call it waits in (det_block), where a
				 * signal's handler may run at once (signals.c) */
	uint32_t holding;  /* strict: holds the run token */
	uint32_t keep_turn; /* strict: the event being logged is no switch point (a trapped atomic's) */
	int32_t quantum;   /* strict: events left before it offers the token */
	uint32_t run_steps; /* strict chaos: steps run while others waited, since it last deferred */
	uint32_t polls;     /* strict chaos: polls in a row (each defers it twice as long) */
	uint64_t tick_idx; /* strict: t->idx at its last tick (det-cc's quantum end) */
	uint64_t rng;      /* chaos: this thread's generator */
	struct {
		int sig;
		siginfo_t info;
	} sigs[8];
	int kick_timer;    /* a POSIX timer (kernel id) that re-signals the thread, or -1 (signals.c) */
	int kick_armed;
	/* record: what a cancellation that acts in det's current libc call
	 * leaves to finish (det_unwound) */
	FILE *cancel_file;          /* stdio: the FILE det locked around the call */
	const void *cancel_cond;    /* a condition wait: its wake-up is logged, the mutex held again */
	const void *cancel_mutex;
	uint32_t canceled;          /* its THREAD_CANCELED is done */
	/* replay: stops of other processes it made (PROC_STOP), not sent yet
	 * (signals.c det_stops_send) */
	struct det_stop {
		uint32_t aux;
		int32_t pid, tid; /* live */
	} stops[4];
	uint32_t nstops;
	uint32_t in_testcancel;     /* in pthread_testcancel, its call testcancel_calls... */
	uint32_t testcancel_calls;  /* ...since its event testcancel_idx - 1 */
	uint64_t testcancel_idx;
};

extern DET_HIDDEN __thread struct det_thread det_tls __attribute__((tls_model("initial-exec")));
extern DET_HIDDEN struct det_shm_header *det_hdr;
/* Threads the run has made so far, as many slots as may be looked at (the
 * clock's high bits count them; there are never more than max_threads). */
static inline uint32_t det_threads_so_far(void)
{
	uint64_t n = atomic_load(&det_hdr->clock) >> DET_SEQ_BITS;
	return n < det_hdr->max_threads ? (uint32_t)n : det_hdr->max_threads;
}
extern DET_HIDDEN int det_mode; /* 0: off (pass through), or enum det_mode */
extern DET_HIDDEN int det_debug;
extern DET_HIDDEN char det_shm_name[32];
/* det made the process die with detrec or detreplay (PR_SET_PDEATHSIG,
 * SIGKILL): which process, and the program's own setting (process.c's prctl) */
extern DET_HIDDEN int det_pdeathsig_pid, det_prog_pdeathsig;
/* The region held open by a process that changed its user (-1: none): the
 * supervisor's descriptor in /proc may be out of its reach from then on. */
extern DET_HIDDEN int det_region_fd;
DET_HIDDEN void det_region_keep(void);
/* With a held region: before an image starts (exec 1: an exec, which the
 * descriptor survives; 0: a spawn) det_shm_name names it through this
 * process's pid; -1: the exec failed, the descriptor closes on exec again. */
DET_HIDDEN void det_region_for_image(int exec);

/* An event in progress, between its begin and end calls. The caller zeroes
 * it and may preset id, aux, aux_addr and auxkind. */
struct det_op {
	struct det_thread *t;
	const struct det_sched *rec; /* replay: the recorded event */
	const void *aux_addr;        /* a second object (the mutex of a condition wait) */
	uint64_t seq;                /* record: its place (struct det_rec.seq); replay: recorded seq */
	uint64_t idx;                /* record: its index among the thread's events */
	uint64_t ra;
	uint32_t obj;                /* the object's id */
	uint32_t id;                 /* preset: the object's id, known without an address (threads) */
	uint32_t aux;                /* kind-specific value, or the id of aux_addr */
	uint16_t kind;
	uint16_t auxkind;            /* enum det_objkind of aux_addr */
	uint32_t waits;              /* strict: times it waited for its object to be released */
};

/* --- signals and rdtsc (signals.c) --- */
DET_HIDDEN void det_signals_init(void);
DET_HIDDEN extern int det_tsc_trapped;
DET_HIDDEN void det_signals_take_traps(void);
/* --- instructions trapped at load time: atomics (trapped_atomics.c) and
 * raw system calls (trapped_syscalls.c) --- */
DET_HIDDEN extern int det_traps_patched; /* some are: det's entry takes det_trap_sig */
DET_HIDDEN extern int det_trap_sig; /* SIGTRAP, or SIGILL under gdb (trapped_atomics.c) */
DET_HIDDEN void det_atomics_init(void);
DET_HIDDEN void det_syscalls_init(void);
/* The trap's bytes (int3, or ud2 under gdb), setting det_trap_sig to match;
 * and writing them over the instruction at `at`, det's entry taking the
 * trap signal (what: the instruction, for the message if it cannot) */
DET_HIDDEN const uint8_t *det_trap_bytes(size_t *len);
DET_HIDDEN void det_trap_at(uintptr_t at, const uint8_t *trap, size_t len, const char *what);
/* exit's last flush of stdout, as an event (stdio.c) */
DET_HIDDEN void det_flush_at_exit(void);
/* stdio's reads go through det's read (stdio_reads.c) */
DET_HIDDEN void det_stdio_reads_init(void);
/* det_trap_sig at ucontext uc: 1 if it was one of theirs (handled) */
DET_HIDDEN int det_atomic_trap(void *uc);
DET_HIDDEN int det_syscall_trap(void *uc);
/* The runtime's own clock for event timestamps: TSC ticks, or ns when the
 * program's rdtsc is trapped (then rdtsc would fault in det itself). */
DET_HIDDEN uint64_t det_now_slow(void);
static inline uint64_t det_now(void)
{
	extern int det_tsc_trapped;
	return det_likely(!det_tsc_trapped) ? __builtin_ia32_rdtsc() : det_now_slow();
}

/* --- the modes (preload/mode.h: their operations) --- */
DET_HIDDEN extern int det_strict;  /* recording in strict mode (replayer/strict.c) */
DET_HIDDEN extern int det_chaos;   /* recording with seeded delays (parallel chaos) */
DET_HIDDEN extern int det_logical; /* threads take turns by logical clock (Kendo, replayer/logical.c) */

/* --- programs built with det-cc (preload/atomics.c) --- */
#include "det/cc.h" /* DET_CC_TICK, DET_CC_POINT, DET_CC_REFILL; the det_cc_* entries atomics.c defines */
/* An atomic instruction as an event (det_cc_atomic_begin/end's work, ra its
 * site): begin returns the event in progress (replay: op->rec is the
 * recorded one), or NULL when the thread is inside det already (then end
 * only passes it through too). */
DET_HIDDEN const struct det_op *det_atomic_begin(void *addr, uint32_t kind, uint32_t aux, uint64_t ra);
DET_HIDDEN void det_atomic_end(uint64_t value, uint32_t aux);
/* Ticks and memory points the calling thread has passed. */
DET_HIDDEN uint64_t det_cc_count(void);
/* Replay: the thread's next event may be a CC_YIELD; aim its budget there. */
DET_HIDDEN void det_cc_replay_next(struct det_thread *t);
/* Logical time: the thread's turn ended; its next memory point waits for
 * another one. */
DET_HIDDEN void det_cc_turn_over(void);

/* --- lifecycle (runtime.c) --- */
DET_HIDDEN void det_init(void);
DET_HIDDEN __attribute__((noreturn, format(printf, 1, 2))) void det_fatal(const char *fmt, ...);
/* Is s a named semaphore this process opened (preload/named.c)? */
DET_HIDDEN int det_sem_named(const sem_t *s);
DET_HIDDEN __attribute__((format(printf, 1, 2))) void det_msg(const char *fmt, ...);

/* What `detrec pack` needs (recording only): a file the program opened,
 * loaded or exec'd (path relative to dirfd; fd its descriptor, or -1), and
 * the ELF objects loaded so far (again later: dlopen adds objects). */
DET_HIDDEN void det_note_file(int dirfd, const char *path, int fd, uint32_t how);
DET_HIDDEN void det_note_modules(void);

DET_HIDDEN void det_thread_attach(struct det_thread *t, uint32_t num);
DET_HIDDEN void det_thread_exit(struct det_thread *t);

DET_HIDDEN void det_signals_enter(struct det_thread *t);
/* Record: deliver the signals held while the thread waited in det's own
 * code (a strict-mode wait, which they woke), anchored in that wait. */
DET_HIDDEN void det_signals_in_wait(struct det_thread *t);
DET_HIDDEN void det_replay_signals_now(struct det_thread *t);
/* After a call that lets signals in and makes no event (sigprocmask, raise,
 * a raw system call a signal interrupted): their handlers run now. */
DET_HIDDEN void det_signals_at_call(void);
DET_HIDDEN void det_replay_signals_attached(struct det_thread *t);

/* Inside libc's fork, the child's at-fork handlers (fork.c). */
DET_HIDDEN int det_in_forked_child(const struct det_thread *t);

/* Enter the runtime from an interposed call: NULL means "pass through". */
static inline struct det_thread *det_enter(void)
{
	struct det_thread *t = &det_tls;
	if (det_unlikely(!t->active)) {
		if (det_mode || !det_hdr)
			det_init();
		if (!t->active)
			return NULL;
	}
	if (det_unlikely(t->depth | (uint32_t)t->fork_parent) && (t->depth || det_in_forked_child(t)))
		return NULL;
	t->depth = 1;
	if (det_unlikely(t->sigs_held))
		det_signals_enter(t);
	return t;
}

DET_HIDDEN void det_signals_due(struct det_thread *t);

/*
 * pthread_cancel acts at a cancellation point; when that is a libc call det
 * makes for the program (a condition wait, a join, a read, a sleep), the
 * thread unwinds out of det's frames. DET_ENTER's guard notices it (the
 * thread is still inside det as its frame unwinds: every return path leaves
 * first) and det_unwound logs where the thread ended, then leaves det, so
 * that the cleanup handlers' events are recorded. Needs -fexceptions, which
 * makes cleanups run as frames unwind. Wrappers that never reach a
 * cancellation point (locks) use det_enter() alone.
 */
struct det_guard {
	struct det_thread *t;
	uint64_t ra;
};
DET_HIDDEN void det_unwound(struct det_thread *t, uint64_t ra);
static inline void det_guard_check(struct det_guard *g)
{
	if (g->t && det_unlikely(g->t->depth != 0))
		det_unwound(g->t, g->ra);
}
#define DET_ENTER(t)                                                                               \
	struct det_thread *t = det_enter();                                                        \
	struct det_guard det_guard_ __attribute__((cleanup(det_guard_check), unused)) = {t, t ? DET_RA() : 0}
/* Load libgcc_s, the unwinder, and note its text: its own pthread_once
 * calls pass through (once.c). Before anything unwinds a thread. */
DET_HIDDEN void det_load_unwinder(void);
DET_HIDDEN void det_find_unwinder(void); /* the same if it is loaded already */
/* THREAD_CANCELED: t ends here (where: DET_AUX_THREAD_CANCELED_*). */
DET_HIDDEN void det_log_canceled(struct det_thread *t, uint32_t where, int64_t calls, uint64_t ra);

static inline void det_leave(struct det_thread *t)
{
	t->depth = 0;
	if (det_unlikely(det_logical) && t->holding)
		det_ops.logical_leave(t); /* a call into det is one turn */
	if (det_unlikely(t->sig_due))
		det_signals_due(t);
}

static inline int det_replaying(void)
{
	return det_mode == DET_MODE_REPLAY;
}

/* --- processes (process.c, fork.c, exec.c, wait.c) --- */
DET_HIDDEN extern uint32_t det_proc; /* this process's index in the region's process table */
/* Find out which of the program's processes this is and attach its thread;
 * returns 1 for the program's first process (the caller attaches T0). */
DET_HIDDEN int det_process_attach(void);
/* Process and thread ids (pids.c): the live id a program-visible
 * (recorded) id stands for in this run, and back; unchanged when recording
 * and for ids that are not the program's. */
DET_HIDDEN pid_t det_pid_to_real(pid_t pid);
DET_HIDDEN pid_t det_pid_to_rec(pid_t pid);
/* Is pid (live, or the recorded id replay maps to a live one) one of the
 * program's processes or threads, now or ever? The same answer recording
 * and replay, from the map's recorded ids. */
DET_HIDDEN int det_pid_of_program(pid_t pid);
/* ... of a pid argument that may be a negated process group (kill) */
DET_HIDDEN pid_t det_pid_arg_to_live(pid_t pid);
/* replay: getppid returned the recorded pid `rec` (machine.c) */
DET_HIDDEN void det_pid_note_parent(pid_t rec);
/* path with its /proc/PID and /proc/PID/task/TID ids made live (in buf, n
 * bytes), or path itself */
DET_HIDDEN const char *det_live_path(const char *path, char *buf, size_t n);
/* getsockopt's SO_PEERCRED, made live by the kernel: its pid made recorded
 * (a socket of the program's own, whose options are not inputs) */
DET_HIDDEN void det_peercred_to_rec(int level, int name, void *val, const socklen_t *len);
/* ev, or a copy of it in *copy naming the live thread (SIGEV_THREAD_ID) */
DET_HIDDEN const struct sigevent *det_live_sigevent(const struct sigevent *ev, struct sigevent *copy);
/* syscall(nr, a...) of a call that takes or returns ids: done with them
 * translated, its result in *result; 0 if nr is not one (or not replaying) */
DET_HIDDEN int det_pids_syscall(long nr, const long a[6], long *result);
/* ioctl requests whose answer is an input (readiness.c): FIONREAD, TIOCOUTQ,
 * TIOCGWINSZ; and that call, recorded or replayed */
DET_HIDDEN int det_ioctl_recorded(unsigned long req);
DET_HIDDEN int det_ioctl_input(int fd, unsigned long req, void *arg, uint64_t ra);
/* fcntl's lock commands (F_SETLK(W), F_OFD_SETLK(W)): events (file_locks.c) */
DET_HIDDEN int det_fcntl_lock_cmd(int cmd);
DET_HIDDEN long det_fcntl_lock(int fd, int cmd, long arg, uint64_t ra);
/* futex(a...) (futex.c): an event where one thread runs at a time, else the
 * kernel's call; the _call form returns -errno, the _syscall form sets errno */
DET_HIDDEN long det_futex_call(const long a[6], uint64_t ra);
DET_HIDDEN long det_futex_syscall(const long a[6], uint64_t ra);
/* Send a signal, the ids live ones (signals.c: one the program sends itself
 * is handled before the call returns, or, blocked, comes from the trace). */
DET_HIDDEN int det_kill_live(pid_t pid, int sig, uint64_t ra);
DET_HIDDEN int det_sigqueue_live(pid_t pid, int sig, union sigval value, uint64_t ra);
DET_HIDDEN int det_tgkill_live(pid_t tgid, pid_t tid, int sig, uint64_t ra);
DET_HIDDEN int det_tkill_live(pid_t tid, int sig, uint64_t ra);
/* call(arg), a call that stops another process of the program (pid, or
 * thread tid of it: live ids), made in its place in the order (a PROC_STOP
 * event, aux as events.def says); returns what it returned, -errno on
 * failure (in replay: what it returned then). Replay sends the stop at the
 * thread's next wait, ptrace or signal (det_stops_send). */
DET_HIDDEN long det_stop_in_order(uint32_t aux, pid_t pid, pid_t tid, uint64_t ra, long (*call)(void *), void *arg);
DET_HIDDEN void det_stops_send(struct det_thread *t);
DET_HIDDEN int det_sigqueueinfo_live(pid_t pid, pid_t tid, int sig, const siginfo_t *info, uint64_t ra);
DET_HIDDEN int det_pid_is_program(pid_t pid);
/* Replay: the thread is past its last recorded event, parked; the program
 * has made no event for `still` of its rounds (20 ms each). */
DET_HIDDEN void det_replay_thread_done(struct det_thread *t, unsigned still);
/* The pipe fd writes into or reads from when the program made both its ends,
 * else 0 (reads.c). A replayed writer publishes it in its slot's
 * pipe_writing while it may wait for room. */
DET_HIDDEN uint64_t det_own_pipe(int fd);
/* The top process: remember the stdin pipe det feeds (fds.c). */
DET_HIDDEN void det_note_stdin(void);
/* A task the program makes without pthread_create or fork: clone(), or
 * syscall(SYS_clone / SYS_clone3 / SYS_fork / SYS_vfork). Only a fork is
 * det's to follow (det_clone). */
struct det_clone_call {
	const char *call;    /* for messages: "clone()", "syscall(SYS_clone3)" */
	uint64_t flags;      /* CLONE_*, without the exit signal */
	uint64_t exit_signal;
	int plain;           /* nothing else asked of the kernel (a stack, TLS, ids...) */
	/* the call itself, made where det is not (a thread det does not know) */
	int (*fn)(void *);   /* clone(): its arguments... */
	void *stack, *arg, *tls;
	pid_t *ptid, *ctid;
	long nr;             /* ...else syscall()'s */
	const long *args;
};
/* A plain fork (exit signal SIGCHLD, no flag but CLONE_VFORK) is det's
 * fork: the pid, 0 in the child; anything else stops the program at the
 * call (ra), naming it. On the det stack (preload/stack.c). */
DET_HIDDEN long det_clone(const struct det_clone_call *c, uint64_t ra);
/* syscall(nr, a...) for those four numbers (rawsys.c's syscall(); fork.c). */
DET_HIDDEN long det_clone_syscall(long nr, const long a[6], const char *call, uint64_t ra);

/* --- objects (runtime.c) --- */
/* The object table's key: an address in this process (addresses repeat
 * across the program's processes). Applying it twice changes nothing. */
static inline uint64_t det_obj_key(const void *addr)
{
	/* process number + 1: a bare address is a process-shared object's key
	 * only (the first process's keys are not, or a child that reinitialises
	 * an inherited mutex would end the parent's object) */
	return (uint64_t)(uintptr_t)addr | ((uint64_t)(det_proc + 1) << 48);
}

/* Is the object process-shared (PTHREAD_PROCESS_SHARED, sem_init(.., 1, ..),
 * an atomic in shared memory)? Read from glibc's own fields (x86-64
 * layouts, checked by tests/unit/test_pshared), for an atomic from the
 * mapping: such objects live in shared memory at the same address in the
 * processes that share them (mapped before a fork), so their key is the
 * bare address and they are one object across processes. */
/* --- the process's mappings (maps.c) --- */
typedef void (*det_map_fn)(void *arg, uint64_t lo, uint64_t hi, const char *perms);
/* fn for each user-space mapping of /proc/self/maps, perms its "rwxp"
 * field; 0, or the errno of opening it. */
DET_HIDDEN int det_maps_each(det_map_fn fn, void *arg);
/* Is [lo, hi) inside det's region? */
DET_HIDDEN int det_in_region(uint64_t lo, uint64_t hi);
/* Is addr in writable memory mapped MAP_SHARED (det's region aside)? */
DET_HIDDEN int det_addr_shared(const void *addr);

static inline int det_pshared(const void *addr, enum det_objkind kind)
{
	switch (kind) {
	case DET_OBJ_MUTEX:
		return ((const pthread_mutex_t *)addr)->__data.__kind & 128;
	case DET_OBJ_COND:
		return ((const pthread_cond_t *)addr)->__data.__wrefs & 1;
	case DET_OBJ_RWLOCK:
		return ((const pthread_rwlock_t *)addr)->__data.__shared != 0;
	case DET_OBJ_BARRIER:
		return ((const int *)addr)[3] == 128;
	case DET_OBJ_SEM:
		return ((const int *)addr)[2] == 128;
	case DET_OBJ_ATOMIC: /* nothing says so but the mapping (nginx's counters, shared by its workers) */
	case DET_OBJ_FUTEX:
		return det_addr_shared(addr);
	case DET_OBJ_FLOCK: /* (a file's: one object in every process) */
		return 1;
	default:
		return 0;
	}
}

static inline uint64_t det_obj_key_of(const void *addr, enum det_objkind kind)
{
	return det_pshared(addr, kind) ? (uint64_t)(uintptr_t)addr : det_obj_key(addr);
}
/* Id of the object at addr, creating it (record) if new; 0 for NULL. */
DET_HIDDEN uint32_t det_obj(struct det_thread *t, const void *addr, enum det_objkind kind);
/* The key a process-shared object is known by in every process; else
 * det_obj_key(addr). */
DET_HIDDEN uint64_t det_obj_shared_key(const void *addr);
/* Id if known, else 0; never creates. */
DET_HIDDEN uint32_t det_obj_find(const void *addr);
/* Forget addr (destroyed, re-initialised or a finished thread). destroyed:
 * by an event of its own (DET_DESTROY), after which record gives its id to
 * the next new object of its kind; replay forgets before that event is
 * done, so the id's next event, the new object's, finds it unbound. */
DET_HIDDEN void det_obj_forget(const void *addr, int destroyed);
/* Bind addr to id, replacing any previous binding (thread handles). */
DET_HIDDEN void det_obj_bind(const void *addr, uint32_t id, enum det_objkind kind);
/* Replay: does addr name recorded object `want`? Binds it on first sight. */
DET_HIDDEN int det_obj_match(const void *addr, uint32_t want, enum det_objkind kind);

/*
 * The mode-independent pairs used by the wrappers.
 *
 * Release-like operations (unlock, signal, post, create...) take their place
 * in the order before the operation; acquire-like ones (lock, wait, join...)
 * after it returns, so an acquisition is always ordered after the release it
 * observed. Replay makes each wait for its turn before doing anything.
 */
static inline void det_op_resolve(struct det_op *op, const void *addr, enum det_objkind objkind)
{
	op->obj = op->id ? op->id : det_obj(op->t, addr, objkind);
	if (op->aux_addr)
		op->aux = det_obj(op->t, op->aux_addr, (enum det_objkind)op->auxkind);
}

/* Logical time: an operation is attempted in the thread's
 * turn, not only logged there (strict mode holds its turn all along). */
static inline void det_logical_turn(struct det_thread *t)
{
	if (det_unlikely(det_logical) && !t->holding && !t->exited)
		det_ops.logical_acquire(t);
}

static inline void det_release_begin(struct det_op *op, struct det_thread *t, uint16_t kind,
				     const void *addr, enum det_objkind objkind, uint64_t ra)
{
	op->t = t;
	op->kind = kind;
	op->ra = ra;
	if (det_replaying()) {
		op->rec = det_ops.replay_begin(op, addr, objkind);
		return;
	}
	det_logical_turn(t);
	det_op_resolve(op, addr, objkind);
	det_ops.rec_release_begin(op);
}

static inline void det_release_end(struct det_op *op, int64_t result)
{
	if (det_replaying())
		det_ops.replay_end(op, result);
	else
		det_ops.rec_end(op, result);
}

/* Acquire-like: begin returns nonzero in replay when the recorded result says
 * the operation failed (EBUSY, ETIMEDOUT...): the caller then returns
 * op->rec->result without performing it. */
static inline int det_acquire_begin(struct det_op *op, struct det_thread *t, uint16_t kind,
				    const void *addr, enum det_objkind objkind, uint64_t ra)
{
	op->t = t;
	op->kind = kind;
	op->ra = ra;
	if (det_replaying()) {
		op->rec = det_ops.replay_begin(op, addr, objkind);
		return op->rec->result != 0;
	}
	det_logical_turn(t);
	det_op_resolve(op, addr, objkind);
	return 0;
}

static inline void det_acquire_end(struct det_op *op, int64_t result)
{
	if (det_replaying())
		det_ops.replay_end(op, result);
	else
		det_ops.rec_acquire_end(op, result);
}

/*
 * Inputs (preload/inputs.h): record performs the call and logs its result
 * and data; in replay begin returns nonzero and the wrapper uses
 * op->rec->result and det_replay_data() instead of performing the call
 * (except for sources it re-reads and checks, like regular files).
 */
static inline int det_input_begin(struct det_op *op, struct det_thread *t, uint16_t kind, uint32_t aux,
				  uint64_t ra)
{
	op->t = t;
	op->kind = kind;
	op->aux = aux;
	op->ra = ra;
	if (det_replaying()) {
		op->rec = det_ops.replay_input(op);
		return 1;
	}
	det_logical_turn(t);
	return 0;
}

static inline void det_input_end(struct det_op *op, int64_t result, const void *data, uint32_t len)
{
	if (det_replaying()) {
		det_ops.replay_end(op, op->rec->result);
	} else {
		if (len)
			det_ops.rec_data(op->t, data, len);
		det_ops.rec_input(op, result, len);
	}
}

static inline const struct det_sched *det_sched_at(struct det_thread *t, uint64_t idx)
{
	if (det_unlikely(idx >= t->sched_known))
		det_ops.sched_wait(t, idx);
	return &t->sched[idx & t->sched_mask];
}

/* The same, or NULL if the feeder has not written it yet. */
static inline const struct det_sched *det_sched_peek(struct det_thread *t, uint64_t idx)
{
	if (det_unlikely(idx >= t->sched_known) && !det_ops.sched_known(t, idx))
		return NULL;
	return &t->sched[idx & t->sched_mask];
}

static inline const void *det_replay_data(const struct det_sched *e)
{
	return (const char *)det_hdr + e->data_off;
}

/* Record only: say what the thread is about to block in (deadlock reports).
 * Between the two, the thread waits in a libc call or system call (never in
 * det's own code), where a signal's handler may run as it would natively
 * (signals.c: det_sig_entry). */
static inline void det_block(struct det_op *op)
{
	if (!det_replaying()) {
		det_ops.rec_block(op->t, op->kind, op->obj, op->ra);
		__atomic_store_n(&op->t->wait_op, op, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	}
}

static inline void det_unblock(struct det_op *op)
{
	if (!det_replaying()) {
		__atomic_store_n(&op->t->wait_op, NULL, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		det_ops.rec_unblock(op->t);
	}
}

/* --- det's stack (stack.c) --- */
struct det_stack {
	uintptr_t lo, hi;  /* this thread's det stack, or 0 */
	uintptr_t sp;      /* where the next entry from the program's stack puts its frames */
	uintptr_t prog_sp; /* the program's stack pointer at the current entry, or 0 */
	uintptr_t ra;      /* the program's return address at the current entry, or 0 */
};
extern DET_HIDDEN __thread struct det_stack det_stk __attribute__((tls_model("initial-exec")));
/* An entry point's implementation (its stub, named in entries.def, is the
 * exported symbol). */
#define DET_IMPL __attribute__((visibility("hidden")))
/* Assembly, for a stub entering det from wherever the program is (r11 =
 * det_stk's TLS offset): jumps to `stay` when the thread is on its det
 * stack already or has none; else leaves in r10 the top to run on (the
 * stack's top for an outermost entry, which it makes the free top; the
 * free top below det's frames in use for one nested in a call back from
 * det). Numeric labels 1 and 2 are its own. */
#define DET_STACK_PICK(stay)                                                                       \
	"cmpq %fs:8(%r11), %rsp\n"                                                                 \
	"jae 1f\n"                                                                                 \
	"cmpq %fs:0(%r11), %rsp\n"                                                                 \
	"jae " stay "\n" /* on the det stack already: stay */                                     \
	"1:\n"                                                                                     \
	"cmpq $0, %fs:8(%r11)\n"                                                                   \
	"je " stay "\n" /* this thread has no det stack */                                        \
	"cmpq %fs:24(%r11), %rsp\n"                                                                \
	"jb 2f\n" /* below the last entry: called back from det, nested */                        \
	"movq %fs:8(%r11), %r10\n"                                                                 \
	"movq %r10, %fs:16(%r11)\n" /* an outermost entry: from the top */                        \
	"2:\n"                                                                                     \
	"movq %fs:16(%r11), %r10\n"
DET_HIDDEN void det_stack_attach(uint32_t num);
DET_HIDDEN void *det_stack_new(uint32_t num);
/* A function of a library the program may load after det started (libgomp,
 * libstdc++): the next definition after det's, else the one in soname if
 * a dlopen'ed library loaded it privately; fatal if neither. */
DET_HIDDEN void *det_real_late(const char *name, const char *soname);
/* The same, looked up once: cache is the caller's static. */
static inline void *det_real_late_once(void **cache, const char *name, const char *soname)
{
	if (!*cache)
		*cache = det_real_late(name, soname);
	return *cache;
}
DET_HIDDEN uint32_t det_stack_adopt(void *base);
DET_HIDDEN void det_stack_free(void *base);
DET_HIDDEN void *det_call_on_program_stack(void *(*fn)(void *), void *arg);
/* fn(arg) on the stack that ends at top (a handler's alternate stack) */
DET_HIDDEN void *det_call_on_stack(void *(*fn)(void *), void *arg, uintptr_t top);
/* fn() on det's boot stack, a static one that only det_init's one caller
 * uses (the thread's det stack is not mapped yet). */
DET_HIDDEN void det_call_on_boot_stack(void (*fn)(void));

/* Where the program called det: the return address its call pushed, which
 * the entry stub keeps (the implementation's own is the stub's). */
#define DET_RA() (det_stk.ra ? (uint64_t)det_stk.ra : (uint64_t)(uintptr_t)__builtin_return_address(0))
/* A place in the program's code, in a message for det_fatal: the supervisor
 * names its source line (store/det/symbols.py name_code_sites). */
#define DET_CODE_AT "{code:%#llx}"

/* A call that may block: marked for deadlock reports, and in strict mode
 * the thread gives up its turn meanwhile. errno survives. */
#define BLOCKING(op, call)                                                                         \
	({                                                                                         \
		det_block(op);                                                                     \
		__typeof__(call) r_ = (call);                                                      \
		int e_ = errno;                                                                    \
		det_unblock(op);                                                                   \
		errno = e_;                                                                        \
		r_;                                                                                \
	})


/* A libc call's result as a recorded one (-errno on failure), and back to
 * the C convention (-1 and errno): also a raw system call's, which is the
 * recorded form already. */
static inline int64_t res_of(long r)
{
	return r < 0 ? -(int64_t)errno : r;
}

static inline long ret_of(int64_t res)
{
	if (res < 0) {
		errno = (int)-res;
		return -1;
	}
	return (long)res;
}

/* A system call straight from libdet.so: never through libc's wrappers,
 * which det interposes itself. Returns -errno on failure. */
static inline long det_sys(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/*
 * A replayed write into a pipe or socket whose reader is gone. The recording's
 * write went in (its count stands), so the program must not die of the
 * SIGPIPE the kernel sends now: a reader whose reads replay from the trace (a
 * FIFO opened by path) does not wait for the bytes and may close first. The
 * thread blocks SIGPIPE around the writes and takes back one that they raised
 * (the kernel sends it to the writing thread). (sockets.c, stdio.c)
 */
struct det_sigpipe_hold {
	uint64_t mask;	 /* the thread's signal mask before */
	int had_pending; /* a SIGPIPE the program blocked was pending before */
};

static inline struct det_sigpipe_hold det_sigpipe_hold(void)
{
	uint64_t pipe = 1ull << (SIGPIPE - 1), pending = 0;
	struct det_sigpipe_hold h = {0, 0};
	det_sys(SYS_rt_sigprocmask, SIG_BLOCK, (long)&pipe, (long)&h.mask, 8, 0, 0);
	if (h.mask & pipe) /* the program blocks it: one pending is its own */
		h.had_pending = det_sys(SYS_rt_sigpending, (long)&pending, 8, 0, 0, 0, 0) == 0 && (pending & pipe);
	return h;
}

static inline void det_sigpipe_release(struct det_sigpipe_hold h, int broke)
{
	uint64_t pipe = 1ull << (SIGPIPE - 1), pending = 0;
	if (broke && !h.had_pending && det_sys(SYS_rt_sigpending, (long)&pending, 8, 0, 0, 0, 0) == 0 && (pending & pipe)) {
		struct timespec zero = {0, 0};
		det_sys(SYS_rt_sigtimedwait, (long)&pipe, 0, (long)&zero, 8, 0, 0);
	}
	det_sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&h.mask, 0, 8, 0, 0);
}

/* A lock of det's own for rare, short sections (tables a few calls share):
 * a waiter gives its CPU up rather than spin (the holder may need it). */
static inline void det_spin_lock(_Atomic int *l)
{
	while (atomic_exchange_explicit(l, 1, memory_order_acquire))
		det_sys(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
}

static inline void det_spin_unlock(_Atomic int *l)
{
	atomic_store_explicit(l, 0, memory_order_release);
}

#endif /* DET_RUNTIME_H */
