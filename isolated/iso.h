/*
 * isolated/iso.h - detrun --isolated: threads as processes with private
 * memory, committed at synchronization in a fixed order (the isolated/ sources,
 * built into build/libdetiso.so, which detrun --isolated preloads instead
 * of libdet.so).
 *
 * Rules of this file:
 *  - Shared between the files of isolated/ only; nothing outside includes it.
 *    isolated/ uses include/det only (trace.c: the event kinds).
 *  - iso_ctl lives in a MAP_SHARED mapping every thread-process inherits:
 *    it is the only memory the processes really share, besides the memfds
 *    behind the isolated regions (globals, heap), which they write only
 *    when they commit, one at a time, in token order.
 */
#ifndef DET_ISO_H
#define DET_ISO_H

#include <stdatomic.h>
#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

#define ISO_HIDDEN __attribute__((visibility("hidden")))
#define ISO_PAGE 4096UL
#define ISO_MAX_THREADS 64
#define ISO_MAX_OBJS 4096
#define ISO_MAX_REPORTS 256
/* heap: one arena per thread slot, at a fixed place (deterministic
 * addresses whatever the interleaving) */
#define ISO_ARENA_SIZE (1UL << 30)
#define ISO_HEAP_SIZE (ISO_ARENA_SIZE * ISO_MAX_THREADS)
#define ISO_STACK_SIZE (8UL << 20) /* each thread's stack (the main one's room to grow) */

enum iso_state { T_FREE, T_RUNNING, T_ARRIVED, T_BLOCKED, T_READY, T_EXITED };
enum iso_wait { W_NONE, W_MUTEX, W_COND, W_BARRIER, W_JOIN, W_SEM, W_ONCE };
enum iso_kind { O_NONE, O_MUTEX, O_COND, O_BARRIER, O_SEM, O_ONCE };

struct iso_thread {
	int state;
	int pid;
	int tnum;             /* det's thread number (creation order), in traces */
	int ev_kind;          /* traced: the event its call's return is (0: none) */
	uintptr_t ev_obj;
	int64_t ev_aux;
	int wait_kind;
	uintptr_t wait_obj;
	uintptr_t cond_mutex; /* a condition waiter's mutex, retaken on wake */
	uint64_t wait_seq;    /* FIFO among waiters of one object */
	int timed;            /* a timed wait: may time out when all are blocked */
	int result;           /* what the blocking call returns (0, ETIMEDOUT, serial) */
	int detached, joined;
	void *retval;
};

struct iso_obj {
	uintptr_t addr;
	int kind;
	int owner;          /* mutex: slot + 1, 0 when free */
	unsigned depth;     /* recursive mutex */
	unsigned need, got; /* barrier; a semaphore's count is need; once: 0, 1 running, 2 done */
};

struct iso_ctl {
	_Atomic uint32_t lock;
	_Atomic uint32_t seq; /* futex word: bumped at every change of turn */
	int token;            /* slot in its turn in the serial phase, -1: none */
	int active;           /* isolation started (a second thread exists) */
	uint64_t round;
	uint64_t wait_counter;
	int main_pid;
	int created; /* threads created: the last one's number */
	int nwoken, woken[ISO_MAX_THREADS]; /* traced: slots the turn's call woke, in order */
	int exit_code;
	int fatal_signal;
	_Atomic int hinted; /* the spin hint was said */
	unsigned nreported;
	uint64_t conflicts;
	_Atomic uint64_t twins; /* pages twinned (write faults), all threads */
	struct { uintptr_t start, end; } reported[ISO_MAX_REPORTS]; /* variables reported */
	struct iso_thread th[ISO_MAX_THREADS];
	struct iso_obj objs[ISO_MAX_OBJS];
};

/* One isolated range: a private view at base over a memfd, a shared view
 * of the same memfd at shared, the twins of dirty pages at twin. */
struct iso_region {
	uintptr_t base, size;
	int fd;
	unsigned char *shared;
	unsigned char *twin;
	uint64_t *last;    /* per page: round << 8 | slot of its last committer (shared) */
	uintptr_t *last_pc; /* per page: where its last committer first wrote it (shared) */
	uintptr_t *first_pc; /* per dirty page: where this thread first wrote it */
	uint32_t *dirty;   /* page indices written since the last update */
	uint8_t *is_dirty; /* per page */
	size_t ndirty;
	/* a file mapping adopted without copying (memory.c, iso_adopt_mapping):
	 * the private view reads the file until a commit materializes a page
	 * in the memfd; then each thread maps that page of the memfd instead */
	int file_fd; /* -1: none (the memfd holds every page) */
	off_t file_off;
	size_t readable;       /* bytes of the file behind the view */
	uint8_t *materialized; /* per page (shared): the memfd holds it */
	struct iso_mat { size_t n; uint32_t pages[]; } *mat; /* (shared) materialized, in order */
	uint8_t *on_memfd;     /* per page: this process's view maps the memfd */
	size_t mat_seen;       /* of mat->pages, those this process has mapped */
};

ISO_HIDDEN extern struct iso_ctl *iso_ctl;
ISO_HIDDEN extern int iso_me; /* this process's thread slot */
ISO_HIDDEN extern struct iso_region iso_heap_region;

#include <sys/types.h>
/* mmap for det's own maps (the program's mmap is refused once isolated) */
ISO_HIDDEN void *iso_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
ISO_HIDDEN void iso_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
ISO_HIDDEN void iso_heap_init(void);
ISO_HIDDEN void iso_heap_reset_arena(int slot);
/* memory.c */
ISO_HIDDEN void iso_memory_start(void);
ISO_HIDDEN void iso_commit(void);
/* keep_written: 0 drops every private page but the thread's stack (a new thread's first update) */
ISO_HIDDEN void iso_update(int keep_written);
ISO_HIDDEN int iso_region_fault(uintptr_t addr, uintptr_t pc);
ISO_HIDDEN void iso_make_region(struct iso_region *r, uintptr_t base, uintptr_t size, int fd, int remap);
ISO_HIDDEN void *iso_stack_top(int slot);
ISO_HIDDEN void iso_adopt_mapping(uintptr_t start, size_t len, size_t readable, int file_fd, off_t file_off);
ISO_HIDDEN int iso_forget_mapping(uintptr_t start, size_t len);
ISO_HIDDEN void iso_name(uintptr_t addr, char *buf, size_t len, uintptr_t *start, uintptr_t *end);
ISO_HIDDEN void iso_code_name(uintptr_t pc, char *buf, size_t len);
/* trace.c (detrec --isolated, detreplay) */
enum { ISO_RECORD = 1, ISO_REPLAY };
ISO_HIDDEN extern int iso_tracing;
ISO_HIDDEN extern const char *iso_who; /* the command in messages */
ISO_HIDDEN void iso_trace_thread(int tnum);
ISO_HIDDEN void iso_log_event(int slot, int kind, uintptr_t obj, int64_t aux, int64_t result);
/* read-like input calls: call(ctx) performs it (not in replay, but for a regular file) */
ISO_HIDDEN long iso_traced_read(int kind, int fd, void *buf, size_t len, long (*call)(void *ctx), void *ctx);

#endif /* DET_ISO_H */
