/*
 * replayer/snapshot.c - libdet.so, replay under gdb: snapshots of the whole
 * multithreaded process, so that gdb goes back by resuming the nearest one
 * instead of replaying from the program's start (gdb-ext/det_gdb/snapshots.py).
 *
 * How: in a replay every thread but the one whose turn it is waits inside
 * det (a turnstile, park, the feeder's window), at a point det controls.
 * The thread holding the turn (the holder), before an event at or past
 * det_gdb_control.snap_at, asks each other thread to save its context where
 * it waits (det_snap_point: callee-saved registers, stack and instruction
 * pointers, its TLS, glibc's tid field, robust list and signal mask), copies
 * the shared region (MAP_SHARED: fork does not copy it) and forks. The child
 * is the snapshot: one thread that waits until gdb attaches to it and sets
 * snap_go. Then it puts its copy of the region back, has the feeder fill the
 * windows again, forks a replacement snapshot of itself (one resume does not
 * use the snapshot up), recreates the other threads with clone() on their
 * own stacks and TLS, which go on from their saved contexts, and lets
 * everyone go on.
 *
 * Rules of this file:
 *  - Nothing is taken unless every other kernel thread of the process
 *    reached a snapshot point in time (a thread computing, a thread that is
 *    not det's, more than one process, the kmod backend, strict mode's
 *    waits, which have no snapshot point): the snapshot is
 *    refused, det_gdb_control.snap_refused says why, and gdb goes back by
 *    re-execution as before.
 *  - fork is the raw system call: glibc's fork would tear down the other
 *    threads' bookkeeping (their stacks back in its cache, their
 *    thread-specific data cleared, one thread counted), which the recreated
 *    threads still use. So the child's glibc state is the parent's exactly,
 *    and every thread that held a lock there holds it again.
 *  - A recreated thread gets a new kernel thread id (the recording's ids
 *    are det's mapping, preload/pids.c): its slot's ktid and glibc's tid
 *    field are written again, as pthread_create would. Mutexes of kinds that
 *    check their owner by id (recursive, error-checking) held across a
 *    snapshot are rewritten to the new id.
 *  - The shared region is put back whole, but for what the supervisor keeps
 *    counting across runs (the feeder's generation and kick, the run count):
 *    a new generation makes the feeder refill every window from the trace's
 *    start, judged by the restored progress counters.
 *  - A snapshot process ends itself when detreplay (the region's owner) is
 *    gone; gdb kills the ones it evicts and all of them when it exits.
 */
#include "enforce.h"
#include "snapshot.h"
#include "det/gdb.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The other threads' acknowledgements: how long the holder waits (a parked
 * thread looks every 20 ms). */
#define ACK_WAIT_NS (60 * 1000 * 1000L)
/* How often a snapshot process looks at snap_go and at its supervisor. */
#define GO_POLL_NS (1000 * 1000L)
#define RSEQ_SIG 0x53053053
#define TEMP_STACK (64 * 1024)

/* glibc >= 2.35: where each thread's rseq area is (weak: older glibc has none) */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

struct det_snap_ctx {
	uint64_t rbx, rbp, r12, r13, r14, r15, rsp, rip;
	uint32_t mxcsr;
	uint16_t fpucw;
	uint16_t pad;
};

/* Returns 0 when it saved the context, 1 when det_ctx_resume came back to it. */
DET_HIDDEN int det_ctx_save(struct det_snap_ctx *c) __attribute__((returns_twice));
DET_HIDDEN __attribute__((noreturn)) void det_ctx_resume(const struct det_snap_ctx *c);

__asm__(".text\n"
	".globl det_ctx_save\n.hidden det_ctx_save\n.type det_ctx_save,@function\n"
	"det_ctx_save:\n"
	"	mov %rbx, 0(%rdi)\n	mov %rbp, 8(%rdi)\n	mov %r12, 16(%rdi)\n"
	"	mov %r13, 24(%rdi)\n	mov %r14, 32(%rdi)\n	mov %r15, 40(%rdi)\n"
	"	lea 8(%rsp), %rdx\n	mov %rdx, 48(%rdi)\n	mov (%rsp), %rdx\n	mov %rdx, 56(%rdi)\n"
	"	stmxcsr 64(%rdi)\n	fnstcw 68(%rdi)\n"
	"	xor %eax, %eax\n	ret\n"
	".size det_ctx_save, .-det_ctx_save\n"
	".globl det_ctx_resume\n.hidden det_ctx_resume\n.type det_ctx_resume,@function\n"
	"det_ctx_resume:\n"
	"	mov 0(%rdi), %rbx\n	mov 8(%rdi), %rbp\n	mov 16(%rdi), %r12\n"
	"	mov 24(%rdi), %r13\n	mov 32(%rdi), %r14\n	mov 40(%rdi), %r15\n"
	"	ldmxcsr 64(%rdi)\n	fldcw 68(%rdi)\n"
	"	mov 48(%rdi), %rsp\n	mov $1, %eax\n	jmp *56(%rdi)\n"
	".size det_ctx_resume, .-det_ctx_resume\n");

/* What a thread leaves for its recreation. */
struct snap_thread {
	struct det_snap_ctx ctx;
	uint64_t tls;         /* its fs base (its struct pthread) */
	uint64_t tid_addr;    /* glibc's tid field: the kernel clears it at exit, join waits on it */
	uint64_t robust_head;
	uint64_t robust_len;
	uint64_t sigmask;     /* the kernel's sigset */
	int32_t old_tid;
	uint32_t present;
	struct det_thread *t;
};

/* Process-private (copied by fork, not shared with the region). */
static _Atomic uint32_t snap_hold;  /* futex: 1 while the others must stay where they are */
static _Atomic uint32_t snap_epoch; /* which request a thread answered */
static _Atomic uint32_t snap_acks;
static _Atomic uint32_t snap_back;  /* recreated threads running again */
static struct snap_thread *snap_table;
static uint32_t snap_table_n;
static void *region_copy;

/* gdb breaks here after each snapshot (the extension keeps pid and seq). */
__attribute__((visibility("default"), noinline)) void det_gdb_snapshot(int32_t pid, uint64_t seq)
{
	__asm__ volatile("" ::"r"(pid), "r"(seq) : "memory");
}

static long futex_private(_Atomic uint32_t *addr, int op, uint32_t val, long ns)
{
	struct timespec ts = {0, ns};
	return det_sys(SYS_futex, (long)addr, op | FUTEX_PRIVATE_FLAG, val, ns ? (long)&ts : 0, 0, 0);
}

static void nap(long ns)
{
	struct timespec ts = {0, ns};
	det_sys(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
}

static int32_t gettid_raw(void)
{
	return (int32_t)det_sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
}

/* What the kernel keeps per thread and a new thread must be given again. */
static void save_kernel_side(struct snap_thread *st)
{
	st->tls = (uint64_t)pthread_self();
	st->tid_addr = 0;
	det_sys(SYS_prctl, PR_GET_TID_ADDRESS, (long)&st->tid_addr, 0, 0, 0, 0);
	st->robust_head = st->robust_len = 0;
	det_sys(SYS_get_robust_list, 0, (long)&st->robust_head, (long)&st->robust_len, 0, 0, 0);
	det_sys(SYS_rt_sigprocmask, SIG_BLOCK, 0, (long)&st->sigmask, 8, 0, 0);
	st->old_tid = gettid_raw();
}

static void restore_kernel_side(const struct snap_thread *st, int32_t tid)
{
	if (st->robust_head)
		det_sys(SYS_set_robust_list, (long)st->robust_head, (long)st->robust_len, 0, 0, 0, 0);
	det_sys(SYS_rt_sigprocmask, SIG_SETMASK, (long)&st->sigmask, 0, 8, 0, 0);
	if (st->tid_addr)
		*(volatile int32_t *)st->tid_addr = tid;
}

static void release_others(void)
{
	atomic_store(&snap_hold, 0);
	futex_private(&snap_hold, FUTEX_WAKE, INT32_MAX, 0);
}

void det_snap_point(struct det_thread *t)
{
	if (det_likely(!atomic_load_explicit(&snap_hold, memory_order_acquire)))
		return;
	uint32_t epoch = atomic_load(&snap_epoch);
	if (t->snap_seen == epoch || !snap_table || t->num >= snap_table_n)
		return;
	t->snap_seen = epoch;
	struct snap_thread *st = &snap_table[t->num];
	save_kernel_side(st);
	st->t = t;
	if (det_ctx_save(&st->ctx) == 0) {
		st->present = 1;
		atomic_fetch_add(&snap_acks, 1);
	} else {
		/* resumed in a snapshot process: a new kernel thread */
		t->slot->ktid = gettid_raw();
		atomic_fetch_add(&snap_back, 1);
	}
	while (atomic_load(&snap_hold))
		futex_private(&snap_hold, FUTEX_WAIT, 1, 20 * 1000 * 1000L);
}

/* The kernel threads of this process, from /proc/self/status. */
static int kernel_threads(void)
{
	char buf[4096];
	long fd = det_sys(SYS_open, (long)"/proc/self/status", O_RDONLY | O_CLOEXEC, 0, 0, 0, 0);
	if (fd < 0)
		return -1;
	long n = det_sys(SYS_read, fd, (long)buf, sizeof(buf) - 1, 0, 0, 0);
	det_sys(SYS_close, fd, 0, 0, 0, 0, 0);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	const char *p = strstr(buf, "\nThreads:");
	if (!p)
		return -1;
	p += 9;
	while (*p == ' ' || *p == '\t')
		p++;
	int v = 0;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (*p++ - '0');
	return v;
}

static int other_processes(void)
{
	for (uint32_t i = 0; i < det_hdr->max_procs; i++) {
		uint32_t st = atomic_load(&det_shm_proc(det_hdr, i)->state);
		if (i != det_proc && st != DET_PS_FREE && st != DET_PS_GONE)
			return 1;
	}
	return 0;
}

static void *map_anon(size_t n)
{
	long p = det_sys(SYS_mmap, 0, (long)n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p < 0 && p > -4096 ? NULL : (void *)p;
}

/* Ask every other thread to save its context; 1 if all of them did. */
static int gather(struct det_thread *t)
{
	uint32_t n = det_hdr->threads_recorded;
	if (!snap_table || snap_table_n < n) {
		snap_table = map_anon((size_t)n * sizeof(*snap_table));
		if (!snap_table)
			return 0;
		snap_table_n = n;
	}
	memset(snap_table, 0, (size_t)n * sizeof(*snap_table));
	atomic_store(&snap_acks, 0);
	atomic_fetch_add(&snap_epoch, 1);
	t->snap_seen = atomic_load(&snap_epoch);
	atomic_store(&snap_hold, 1);
	for (long waited = 0;; waited += 50000) {
		for (uint32_t i = 0; i < n; i++) {
			struct det_slot *s = det_shm_slot(det_hdr, i);
			if (i != t->num && s->proc == det_proc && atomic_load(&s->state) != DET_TS_FREE)
				det_sys(SYS_futex, (long)&s->sleeping, FUTEX_WAKE, INT32_MAX, 0, 0, 0);
		}
		int others = kernel_threads() - 1;
		if (others >= 0 && atomic_load(&snap_acks) == (uint32_t)others)
			return 1;
		if (waited >= ACK_WAIT_NS)
			return 0;
		nap(50000);
	}
}

/* Mutexes that name their owner by thread id (recursive, error-checking),
 * held by a thread that now has another id. */
static void rewrite_owners(int32_t old_tid, int32_t new_tid)
{
	struct det_objent *tab = det_shm_objects(det_hdr);
	for (uint32_t i = 0; i < det_hdr->objects_cap; i++) {
		uint64_t a = atomic_load(&tab[i].addr);
		uint64_t proc = a >> 48; /* 0: process-shared (det_obj_key) */
		if (a <= DET_OBJ_DELETED || tab[i].kind != DET_OBJ_MUTEX || (proc && proc != det_proc + 1))
			continue;
		pthread_mutex_t *m = (pthread_mutex_t *)(uintptr_t)(a & ((1ULL << 48) - 1));
		if (m->__data.__owner == old_tid)
			m->__data.__owner = new_tid;
	}
}

static int thread_start(void *arg);

/* clone() for a thread that never returns here: on TEMP_STACK, it runs
 * thread_start(arg), which jumps into its saved context. */
static long clone_thread(void *stack_top, void *arg, uint64_t tid_addr, uint64_t tls)
{
	unsigned long flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
			      CLONE_SETTLS | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID;
	void **sp = (void **)stack_top;
	*--sp = arg;
	long ret;
	register long r10 __asm__("r10") = (long)tid_addr;
	register long r8 __asm__("r8") = (long)tls;
	__asm__ volatile("syscall\n"
			 "test %%rax, %%rax\n"
			 "jnz 1f\n"
			 "xor %%ebp, %%ebp\n"
			 "pop %%rdi\n"
			 "and $-16, %%rsp\n"
			 "call thread_start_entry\n"
			 "hlt\n"
			 "1:\n"
			 : "=a"(ret)
			 : "0"(SYS_clone), "D"(flags), "S"(sp), "d"(0L), "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	return ret;
}

__attribute__((used, noreturn)) DET_HIDDEN void thread_start_entry(void *arg);
void thread_start_entry(void *arg)
{
	thread_start(arg);
	__builtin_unreachable();
}

static int thread_start(void *arg)
{
	struct snap_thread *st = arg;
	int32_t tid = gettid_raw();
	restore_kernel_side(st, tid);
	if (&__rseq_size && __rseq_size)
		det_sys(SYS_rseq, (long)(st->tls + __rseq_offset), 32, 0, RSEQ_SIG, 0, 0);
	det_ctx_resume(&st->ctx);
}

/* A snapshot process, made by forking twice: the first child forks the
 * snapshot and exits at once, and this thread reaps it, so the snapshot is
 * nobody's child in the program (a wait(-1) of the program's cannot get it,
 * its end sends the program no SIGCHLD) and gdb, which follows the first
 * fork, detaches it with its breakpoints taken out before it forks again.
 * Returns the snapshot's pid here, 0 in the snapshot, < 0 on failure. */
static long spawn_snapshot(const struct snap_thread *self)
{
	_Atomic int32_t *box = (_Atomic int32_t *)det_sys(SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE,
							  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if ((long)box < 0 && (long)box > -4096)
		return -ENOMEM;
	atomic_store(box, 0);
	long c = det_sys(SYS_clone, SIGCHLD, 0, 0, 0, 0, 0);
	if (c == 0) {
		long g = det_sys(SYS_clone, SIGCHLD, 0, 0, 0, 0, 0);
		if (g != 0) {
			atomic_store(box, (int32_t)(g < 0 ? -1 : g));
			det_sys(SYS_exit_group, 0, 0, 0, 0, 0, 0);
		}
		det_sys(SYS_munmap, (long)box, 4096, 0, 0, 0, 0);
		int32_t tid = (int32_t)det_sys(SYS_set_tid_address, (long)self->tid_addr, 0, 0, 0, 0, 0);
		restore_kernel_side(self, tid);
		return 0;
	}
	long pid = c;
	if (c > 0) {
		while (det_sys(SYS_wait4, c, 0, __WALL, 0, 0, 0) == -EINTR)
			;
		pid = atomic_load(box) > 0 ? atomic_load(box) : -EAGAIN;
	}
	det_sys(SYS_munmap, (long)box, 4096, 0, 0, 0, 0);
	return pid;
}

/* Does the program handle SIGCHLD? The first child's end would call it. */
static int handles_sigchld(void)
{
	struct {
		uint64_t handler, flags, restorer, mask;
	} sa = {0};
	if (det_sys(SYS_rt_sigaction, SIGCHLD, 0, (long)&sa, 8, 0, 0) < 0)
		return 1;
	return sa.handler != (uint64_t)SIG_DFL && sa.handler != (uint64_t)SIG_IGN;
}

/* The snapshot process: wait to be chosen, then become the program again. */
static void wait_and_resume(struct det_thread *t, const struct snap_thread *self)
{
	const char *env = getenv(DET_SHM_ENV); /* "PID:FD": detreplay's pid */
	long sup = env ? strtol(env, NULL, 10) : 0;
	for (;;) {
		for (unsigned i = 0; !det_gdb_control.snap_go; i++) {
			if (i % 256 == 0 && sup > 0 && det_sys(SYS_kill, sup, 0, 0, 0, 0, 0) == -ESRCH)
				det_sys(SYS_exit_group, 0, 0, 0, 0, 0, 0);
			nap(GO_POLL_NS);
		}
		det_gdb_control.snap_go = 0;
		/* a replacement, so that this point can be come back to again */
		long pid = spawn_snapshot(self);
		if (pid == 0)
			continue;
		if (pid > 0)
			det_gdb_snapshot((int32_t)pid, det_gdb_control.seq);
		break;
	}
	struct det_shm_header *h = det_hdr;
	uint32_t gen = atomic_load(&h->sched_gen), runs = atomic_load(&h->replay_runs);
	uint32_t kick = atomic_load(&h->feed_kick);
	memcpy(h, region_copy, h->size);
	int32_t me = (int32_t)det_sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	atomic_store(&h->replay_runs, runs);
	atomic_store(&h->attached, (uint32_t)me);
	atomic_store(&det_shm_proc(h, det_proc)->pid, me);
	t->slot->ktid = gettid_raw();
	rewrite_owners(self->old_tid, t->slot->ktid);
	/* the feeder fills every window again, from the trace's start */
	atomic_store(&h->sched_gen, gen + 1);
	atomic_store(&h->feed_kick, kick + 1);
	det_sys(SYS_futex, (long)&h->feed_kick, FUTEX_WAKE, 1, 0, 0, 0);
	/* a thread whose next entry was written (it may hold a pointer to it:
	 * a waiter reads its prerequisites there) goes on once it is written
	 * again; the others wait for the feeder themselves (det_sched_wait) */
	for (uint32_t i = 0; i < h->threads_recorded; i++) {
		struct det_slot *s = det_shm_slot(h, i);
		uint64_t done = atomic_load(&s->done);
		uint64_t was = atomic_load(&s->sched_filled); /* (the snapshot's) */
		if (s->proc != det_proc || atomic_load(&s->state) == DET_TS_FREE || (was & DET_FILLED_MASK) <= done)
			continue;
		for (unsigned round = 0;; round++) {
			uint64_t f = atomic_load(&s->sched_filled);
			if ((uint32_t)(f >> DET_FILLED_BITS) == gen + 1 && (f & DET_FILLED_MASK) > done)
				break;
			if (atomic_load(&h->feed_failed))
				det_fatal("%s", h->error);
			if (round % 64 == 0) {
				atomic_fetch_add(&h->feed_kick, 1);
				det_sys(SYS_futex, (long)&h->feed_kick, FUTEX_WAKE, 1, 0, 0, 0);
			}
			nap(20000);
		}
	}
	uint32_t want = 0;
	atomic_store(&snap_back, 0);
	for (uint32_t i = 0; i < snap_table_n; i++) {
		struct snap_thread *st = &snap_table[i];
		if (!st->present)
			continue;
		char *stack = map_anon(TEMP_STACK);
		if (!stack)
			det_fatal("snapshot: no memory for a thread's start");
		long r = clone_thread(stack + TEMP_STACK, st, st->tid_addr, st->tls);
		if (r < 0)
			det_fatal("snapshot: cannot recreate T%u (clone: error %ld)", i, -r);
		rewrite_owners(st->old_tid, (int32_t)r);
		want++;
	}
	while (atomic_load(&snap_back) < want)
		nap(20000);
}

void det_snap_take(struct det_thread *t, uint64_t seq)
{
	struct det_gdb_control *c = &det_gdb_control;
	c->snap_refused = 0;
	/* the next one on the grid gdb set (snap_at + k * snap_every): the
	 * same points however the replay got here */
	uint64_t at = c->snap_at;
	while (c->snap_every && at <= seq)
		at += c->snap_every;
	c->snap_at = c->snap_every ? at : UINT64_MAX;
	if (det_hdr->flags & (DET_F_STRICT | DET_F_LOGICAL)) {
		c->snap_refused = DET_SNAP_STRICT; /* (at once: waiting for acks would cost every grid point) */
		return;
	}
	if (det_hdr->turns != DET_TURNS_futex) {
		c->snap_refused = DET_SNAP_BACKEND;
		return;
	}
	if (handles_sigchld()) {
		c->snap_refused = DET_SNAP_SIGCHLD;
		return;
	}
	if (other_processes()) {
		c->snap_refused = DET_SNAP_PROCESSES;
		return;
	}
	if (!gather(t)) {
		release_others();
		c->snap_refused = DET_SNAP_THREADS;
		return;
	}
	struct snap_thread self = {0};
	save_kernel_side(&self);
	region_copy = map_anon(det_hdr->size);
	if (!region_copy) {
		release_others();
		c->snap_refused = DET_SNAP_MEMORY;
		return;
	}
	memcpy(region_copy, det_hdr, det_hdr->size);
	c->seq = seq;
	long pid = spawn_snapshot(&self);
	if (pid == 0) {
		wait_and_resume(t, &self);
	} else {
		if (pid < 0)
			c->snap_refused = DET_SNAP_FORK;
		else
			det_gdb_snapshot((int32_t)pid, seq);
	}
	det_sys(SYS_munmap, (long)region_copy, (long)det_hdr->size, 0, 0, 0, 0);
	region_copy = NULL;
	release_others();
}
