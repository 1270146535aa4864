/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * The ABI of /dev/detsched, det's kernel-module
 * replay scheduler (kmod/detsched.c). Included by the module, by libdet.so
 * (replayer/turns_kmod.c), by libdetsup.so (replayer/sup_turns.c) and by
 * the harness's fuzzer and kill test (kmod/harness/).
 *
 * Rules of this file:
 *  - Fixed-width types only, explicit padding (which must be zero), no
 *    pointers (user addresses travel as __u64); every struct's size is
 *    checked at compile time, so 32- and 64-bit callers agree.
 *  - Thread numbers are det's stable numbers (T0 = the first thread);
 *    fields that name a thread hold number + 1, with 0 meaning none, as in
 *    include/det/shm.h.
 *  - A change of any struct or command is a new command number; the old
 *    one is never given another meaning.
 *
 * The model: a schedule is, for each thread, the list of its recorded
 * events, each with up to two prerequisites (an event of another thread
 * that must be done first): ordered replay gives every event its
 * predecessor in the recorded order, relaxed replay its predecessors on
 * the objects it touches. The module keeps a done counter per thread; a
 * thread may do its event k once every prerequisite of k is done.
 *
 *   detreplay:  open, LOAD               -> schedule id and key; owns it
 *   each process of the program:  open, ATTACH(id, key), mmap the counters
 *   each thread:  REGISTER(number), then for each event: check the mapped
 *                 counters, WAIT if not yet due, DONE if another thread
 *                 waits for it (WAIT and DONE also mark earlier events done)
 *
 * The schedule dies when its owner closes it (detreplay ended or was
 * killed): every waiter wakes with EOWNERDEAD, and the memory goes when
 * the last file that refers to it is closed.
 */
#ifndef DET_DETSCHED_H
#define DET_DETSCHED_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define DETSCHED_DEVICE "/dev/detsched"

/* Hard limits; the module's parameters may lower them. */
#define DETSCHED_MAX_THREADS 65535u      /* numbers + 1 fit a __u16 */
#define DETSCHED_MAX_EVENTS  (1u << 26)  /* per schedule (16 bytes each in the kernel) */
#define DETSCHED_MAX_WAKE    2           /* threads waiting on one event */

/* One event of one thread, as LOAD reads it; 16 bytes. */
struct detsched_event {
	__u32 dep_idx[2];    /* ... that thread's event index */
	__u16 dep_thread[2]; /* number + 1 of a thread whose event must be done first; 0: none */
	__u32 reserved;      /* zero */
};

/* DETSCHED_IOC_LOAD: make this file the owner of a new schedule. */
struct detsched_load {
	__u32 nthreads;      /* 1..max_threads */
	__u32 flags;         /* zero */
	__u64 counts;        /* user address of __u32[nthreads]: events per thread */
	__u64 events;        /* user address of struct detsched_event[total], thread by thread */
	__u64 total;         /* sum of counts */
	__u64 id;            /* out: the schedule's id ... */
	__u64 key;           /* out: ... and the secret ATTACH needs */
};

/* DETSCHED_IOC_ATTACH: this file refers to an existing schedule. */
struct detsched_attach {
	__u64 id;
	__u64 key;
	__u32 nthreads;      /* out */
	__u32 reserved;      /* zero */
};

/* DETSCHED_IOC_REGISTER: the calling thread is `thread` (its number). */
struct detsched_register {
	__u32 thread;
	__u32 reserved;      /* zero */
};

/*
 * DETSCHED_IOC_WAIT: the calling thread (registered as `thread`) has done
 * every event before `idx` and waits until its event `idx` is due.
 * Returns 0 when it is, ETIMEDOUT after timeout_ns (0: do not sleep, just
 * say EAGAIN), EINTR on a signal, EOWNERDEAD when the schedule died,
 * EPERM when an earlier event was done out of turn.
 */
struct detsched_wait {
	__u32 thread;
	__u32 reserved;      /* zero */
	__u64 idx;
	__u64 timeout_ns;    /* at most DETSCHED_MAX_TIMEOUT_NS */
};

#define DETSCHED_MAX_TIMEOUT_NS (3600ull * 1000000000ull)

/*
 * DETSCHED_IOC_DONE: the calling thread has done its events up to and
 * including `idx`; wakes exactly the threads whose turn that makes it.
 * EPERM when one of them was not due (done out of turn), EINVAL when idx
 * is behind what the module already knows or past the thread's events.
 */
struct detsched_done {
	__u32 thread;
	__u32 reserved;      /* zero */
	__u64 idx;
};

/* DETSCHED_IOC_STATE: a snapshot, for debugging and gdb. */
struct detsched_thread_state {
	__u64 done;          /* events done, as far as the module knows */
	__u64 waiting_for;   /* the event index it waits for, if waiting */
	__u32 count;         /* events it has in the schedule */
	__s32 pid;           /* registered thread's id in the caller's pid namespace; 0: none */
	__u32 waiting;       /* 1 while asleep in WAIT */
	__u32 reserved;
};

#define DETSCHED_STATE_DEAD 0x1 /* the owner closed the schedule */

struct detsched_state {
	__u64 id;            /* out */
	__u64 total;         /* out: events in the schedule */
	__u32 nthreads;      /* out */
	__u32 flags;         /* out: DETSCHED_STATE_* */
	__u32 cap;           /* in: entries `threads` has room for */
	__u32 attached;      /* out: files that refer to the schedule */
	__u64 threads;       /* in: user address of struct detsched_thread_state[cap], or 0 */
};

#define DETSCHED_IOC_MAGIC 0xD7
#define DETSCHED_IOC_LOAD     _IOWR(DETSCHED_IOC_MAGIC, 1, struct detsched_load)
#define DETSCHED_IOC_ATTACH   _IOWR(DETSCHED_IOC_MAGIC, 2, struct detsched_attach)
#define DETSCHED_IOC_REGISTER _IOW(DETSCHED_IOC_MAGIC, 3, struct detsched_register)
#define DETSCHED_IOC_WAIT     _IOW(DETSCHED_IOC_MAGIC, 4, struct detsched_wait)
#define DETSCHED_IOC_DONE     _IOW(DETSCHED_IOC_MAGIC, 5, struct detsched_done)
#define DETSCHED_IOC_STATE    _IOWR(DETSCHED_IOC_MAGIC, 6, struct detsched_state)
#define DETSCHED_IOC_RESET    _IO(DETSCHED_IOC_MAGIC, 7)

/*
 * mmap of an attached (or owning) file, read-only, offset 0: the done
 * counters, __u64 per thread, which only the module writes. Readers use
 * an acquire load; a counter never goes down (except on RESET, which
 * requires that nobody waits).
 */

#define DETSCHED_SIZE_CHECK(type, size) \
	_Static_assert(sizeof(type) == (size), #type " changed size")
DETSCHED_SIZE_CHECK(struct detsched_event, 16);
DETSCHED_SIZE_CHECK(struct detsched_load, 48);
DETSCHED_SIZE_CHECK(struct detsched_attach, 24);
DETSCHED_SIZE_CHECK(struct detsched_register, 8);
DETSCHED_SIZE_CHECK(struct detsched_wait, 24);
DETSCHED_SIZE_CHECK(struct detsched_done, 16);
DETSCHED_SIZE_CHECK(struct detsched_thread_state, 32);
DETSCHED_SIZE_CHECK(struct detsched_state, 40);

#endif /* DET_DETSCHED_H */
