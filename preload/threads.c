/*
 * preload/threads.c - the pthread functions libdet.so replaces for threads:
 * create, join, detach, exit; the unwinder det loads and notes;
 * cancellation.
 *
 * Rules of this file:
 *  - One wrapper per libc entry point, with libc's exact signature; each
 *    passes straight through when det_enter() says the runtime is off.
 *    Wrappers whose libc call may act on a cancellation (a cancellation
 *    point, or pthread_cancel of the caller itself) enter with DET_ENTER,
 *    whose guard logs a cancellation that unwinds them (det_unwound); the
 *    rest (locks, signals and broadcasts, posts, thread bookkeeping, once)
 *    use det_enter().
 *  - Wrappers say what an operation is (its event kind, object, whether it
 *    releases or acquires) and leave the mode to runtime.h's begin/end pairs.
 *  - Replay never blocks inside libc on an ordered object: at its turn an
 *    acquisition must succeed with the non-blocking variant (the recorded
 *    order guarantees it), and waits that only exist to be woken (condition
 *    variables, barriers) are emulated by the turn itself, as POSIX allows
 *    spurious wake-ups.
 *  - Results that say an operation failed (EBUSY, ETIMEDOUT, ...) are part of
 *    the event; replay returns them without performing the operation.
 */
#include "threads.h"
#include "locks.h"
#include "process.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------ */
/* threads */

/* Replay: a thread ends for the kernel where the recording ended it, after
 * its process's other threads have done their events before its exit's
 * place. Its own events before that place may all be inputs (sigwait,
 * reads), which replay takes from the trace without waiting, and its exit
 * waits only for the events in the order: gone early, it was not there for
 * a call that named it (timer_create's SIGEV_THREAD_ID, tgkill,
 * sched_setaffinity: EINVAL or ESRCH where the recording's call worked). */
static void exit_in_place(struct det_thread *t)
{
	if (!det_replaying() || !det_ops.replay_free_running() || t->idx >= t->sched_count)
		return;
	const struct det_sched *e = det_sched_at(t, t->idx);
	if (e->kind == DET_EV_THREAD_EXIT)
		det_replay_wait_threads_of(det_proc, t->num, 0, e->seq);
}

static void det_exit_event(struct det_thread *t, uint64_t ra)
{
	struct det_op op = {.id = t->slot->obj};
	exit_in_place(t);
	det_release_begin(&op, t, DET_EV_THREAD_EXIT, NULL, DET_OBJ_THREAD, ra);
	if (det_strict) { /* its joiners try again, and find it exiting */
		atomic_store(&t->slot->state, DET_TS_EXITING);
		det_ops.strict_signal((void *)t->slot->pthread, 1);
	}
	det_release_end(&op, 0);
	det_thread_exit(t);
}

/* glibc's malloc gives a thread its heap (an arena: one mapped for it, or
 * one an exited thread left) at the thread's first allocation, which runs
 * freely between events: two threads' first allocations in another order
 * map their arenas at each other's addresses, and every pointer the program
 * allocates, prints, hashes or compares differs between runs. Done inside
 * the thread's start event, the choice follows the recorded order of starts.
 * (Not yet: the arena of a thread that exited goes back to glibc after its
 * exit event, as the kernel thread ends, so a thread that starts meanwhile
 * may or may not be given it.) glibc's own entry points: a malloc the
 * program interposes is its business (and may take locks det orders, which
 * must not happen inside a turn). */
extern void *__libc_malloc(size_t size);
extern void __libc_free(void *p);

static void det_attach_heap(void)
{
	__libc_free(__libc_malloc(1));
}

/* Where the kernel puts a mapping depends on the mappings made before it:
 * replay maps thread stacks (in creates) and heaps (in starts) inside their
 * events' turns, in the recorded order. A parallel recording takes events
 * without turns, so two of these could map in another order than their
 * places in the trace: they take this lock around their place and their
 * mappings. (Strict and logical-time recordings hold a turn there already;
 * a lock taken before a turn could wait for a thread that waits for it.) */
static _Atomic int mapping_in_order;

static int map_in_order(void)
{
	if (det_mode != DET_MODE_RECORD || det_strict || det_logical)
		return 0;
	det_spin_lock(&mapping_in_order);
	return 1;
}

static void mapped_in_order(int taken)
{
	if (taken)
		det_spin_unlock(&mapping_in_order);
}

_Atomic int det_threads_made;

void det_threads_forked(void)
{
	atomic_store(&mapping_in_order, 0); /* (the thread that held it is not in this process) */
}

/* A created thread's first and last det work, on its det stack (stack.c). */
struct det_start {
	void *(*fn)(void *);
	void *arg;
};

DET_HIDDEN struct det_start det_thread_begin(uint32_t num);
DET_HIDDEN void det_thread_end(void *(*fn)(void *), int unwinding);

DET_IMPL struct det_start det_impl_det_thread_begin(uint32_t num)
{
	struct det_slot *s = det_shm_slot(det_hdr, num);
	struct det_start st = {(void *(*)(void *))(uintptr_t)s->start_routine, (void *)(uintptr_t)s->start_arg};
	struct det_thread *t = &det_tls;

	/* A thread often starts after the dlopen of the code it runs. Before it
	 * attaches: in strict mode it then holds no turn while it waits for the
	 * loader's lock (which a dlopen making events may hold). */
	if (det_mode == DET_MODE_RECORD)
		det_note_modules();
	/* Its own id names it from its first instruction on: a thread may
	 * detach itself before pthread_create has returned in its creator, and
	 * a detached thread's id, once it exited, is reused by a later one. */
	det_obj_bind((void *)pthread_self(), s->obj, DET_OBJ_THREAD);
	det_thread_attach(t, num);
	t->depth = 1;
	struct det_op op = {.id = s->obj};
	int in_order = map_in_order();
	det_acquire_begin(&op, t, DET_EV_THREAD_START, NULL, DET_OBJ_THREAD, (uint64_t)(uintptr_t)st.fn);
	det_attach_heap();
	det_acquire_end(&op, 0);
	mapped_in_order(in_order);
	det_leave(t);
	return st;
}

/* Its exit event: as its start routine returns, or (unwinding) as a
 * cancellation ends it. A cancellation that acted where det does not see
 * (a cancellation point inside libc) is logged here, late. */
DET_IMPL void det_impl_det_thread_end(void *(*fn)(void *), int unwinding)
{
	struct det_thread *t = det_enter();
	if (t == &det_tls) {
		if (unwinding && !t->canceled && !det_replaying())
			det_log_canceled(t, DET_AUX_THREAD_CANCELED_ELSEWHERE, 0, (uint64_t)(uintptr_t)fn);
		else if (unwinding && !t->canceled)
			det_ops.replay_canceled(t); /* a request sent for real (enforce.c cancel_at_large) */
		det_exit_event(t, (uint64_t)(uintptr_t)fn);
		det_leave(t);
	}
}

/* Unwinding past the start routine without an exit event: a cancellation
 * (pthread_exit logs the exit before it unwinds; a C++ exception that leaves
 * the start routine terminates the process before anything unwinds). */
static void thread_unwinds(struct det_start *st)
{
	if (st->fn && !det_tls.exited)
		det_thread_end(st->fn, 1);
}

/* The thread's start: everything that depends on det's mode happens on the
 * det stack, so the program's start routine finds the same stack here. */
static void *det_thread_main(void *arg)
{
	struct det_start st __attribute__((cleanup(thread_unwinds))) = det_thread_begin(det_stack_adopt(arg));
	void *ret = st.fn(st.arg);
	det_thread_end(st.fn, 0);
	st.fn = NULL;
	return ret;
}

DET_IMPL int det_impl_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.pthread_create(th, attr, fn, arg);
	struct det_op op = {.t = t, .kind = DET_EV_THREAD_CREATE, .ra = DET_RA()};
	uint32_t child;
	int in_order = map_in_order();
	if (det_replaying()) {
		op.id = UINT32_MAX; /* the event makes its object */
		op.rec = det_ops.replay_begin(&op, NULL, DET_OBJ_THREAD);
		if (op.rec->result) { /* creation failed in the recording */
			int r = (int)op.rec->result;
			det_ops.replay_end(&op, r);
			det_leave(t);
			return r;
		}
		child = op.rec->aux;
	} else {
		child = det_ops.rec_new_thread(&op);
		if (child >= det_hdr->max_threads)
			det_fatal("too many threads: T%u (this run allows %u, detrec --max-threads raises it)",
				  child, det_hdr->max_threads);
		if (det_strict)
			det_ops.strict_created(child);
	}
	atomic_store_explicit(&det_threads_made, 1, memory_order_relaxed);
	struct det_slot *cs = det_shm_slot(det_hdr, child);
	cs->parent = t->num;
	cs->create_seq = op.seq;
	cs->start_routine = (uint64_t)(uintptr_t)fn;
	cs->start_arg = (uint64_t)(uintptr_t)arg;
	cs->obj = op.obj;
	atomic_store(&cs->state, DET_TS_STARTING);
	void *stack = det_stack_new(child); /* (here: det's mappings in the same order in every run) */
	int r = real.pthread_create(th, attr, det_thread_main, stack);
	if (r != 0)
		det_stack_free(stack);
	if (r == 0 && atomic_load(&cs->state) == DET_TS_STARTING)
		det_obj_bind((void *)*th, op.obj, DET_OBJ_THREAD); /* (a started child bound it itself) */
	det_release_end(&op, r);
	mapped_in_order(in_order);
	det_leave(t);
	return r;
}

/* Joins: replay performs a join only when the recording's succeeded, and by
 * then the thread has done its exit event, so the real join returns soon. */
static int det_join(struct det_thread *t, uint16_t kind, pthread_t th, void **ret, int (*attempt)(void *),
		    void *ctx, uint64_t ra)
{
	struct det_op op = {0};
	int r;
	if (det_acquire_begin(&op, t, kind, (void *)th, DET_OBJ_THREAD, ra)) {
		r = (int)op.rec->result;
	} else if (det_replaying()) {
		r = real.pthread_join(th, ret);
	} else {
		struct det_slot *target = NULL;
		if (det_strict && kind == DET_EV_THREAD_JOIN) {
			/* let the thread run until its exit event (decided under
			 * the token); its last steps out need no turn */
			for (uint32_t i = 1, n = det_threads_so_far(); i < n && op.obj; i++)
				if (det_shm_slot(det_hdr, i)->obj == op.obj) /* set by its creator */
					target = det_shm_slot(det_hdr, i);
			while (target && atomic_load(&target->state) != DET_TS_EXITING &&
			       atomic_load(&target->state) != DET_TS_FREE)
				det_ops.strict_wait_for_cancelable(&op, (void *)th);
		}
		if (det_strict && kind == DET_EV_THREAD_JOIN && target) {
			/* it has done its exit event: the rest of its way out needs
			 * no turn, so keep ours (giving it up here would make the
			 * schedule depend on how fast the kernel reaps threads) */
			r = attempt(ctx);
		} else {
			det_block(&op);
			r = attempt(ctx);
			det_unblock(&op);
		}
	}
	det_acquire_end(&op, r);
	if (r == 0)
		det_obj_forget((void *)th, 0);
	det_leave(t);
	return r;
}

struct join_args {
	pthread_t th;
	void **ret;
	clockid_t clock;
	const struct timespec *abstime;
};

static int join_plain(void *p)
{
	struct join_args *a = p;
	return real.pthread_join(a->th, a->ret);
}

static int join_try(void *p)
{
	struct join_args *a = p;
	return real.pthread_tryjoin_np(a->th, a->ret);
}

static int join_timed(void *p)
{
	struct join_args *a = p;
	return real.pthread_timedjoin_np(a->th, a->ret, a->abstime);
}

static int join_clock(void *p)
{
	struct join_args *a = p;
	return real.pthread_clockjoin_np(a->th, a->ret, a->clock, a->abstime);
}

DET_IMPL int det_impl_pthread_join(pthread_t th, void **ret)
{
	DET_ENTER(t);
	if (!t)
		return real.pthread_join(th, ret);
	struct join_args a = {th, ret, 0, NULL};
	return det_join(t, DET_EV_THREAD_JOIN, th, ret, join_plain, &a, DET_RA());
}

DET_IMPL int det_impl_pthread_tryjoin_np(pthread_t th, void **ret)
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.pthread_tryjoin_np(th, ret);
	struct join_args a = {th, ret, 0, NULL};
	return det_join(t, DET_EV_THREAD_TRYJOIN, th, ret, join_try, &a, DET_RA());
}

DET_IMPL int det_impl_pthread_timedjoin_np(pthread_t th, void **ret, const struct timespec *abstime)
{
	DET_ENTER(t);
	if (!t)
		return real.pthread_timedjoin_np(th, ret, abstime);
	struct join_args a = {th, ret, 0, abstime};
	return det_join(t, DET_EV_THREAD_TIMEDJOIN, th, ret, join_timed, &a, DET_RA());
}

DET_IMPL int det_impl_pthread_clockjoin_np(pthread_t th, void **ret, clockid_t clock, const struct timespec *abstime)
{
	DET_ENTER(t);
	if (!t)
		return real.pthread_clockjoin_np(th, ret, clock, abstime);
	struct join_args a = {th, ret, clock, abstime};
	return det_join(t, DET_EV_THREAD_TIMEDJOIN, th, ret, join_clock, &a, DET_RA());
}

DET_IMPL int det_impl_pthread_detach(pthread_t th)
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.pthread_detach(th);
	struct det_op op = {0};
	det_release_begin(&op, t, DET_EV_THREAD_DETACH, (void *)th, DET_OBJ_THREAD, DET_RA());
	int r = real.pthread_detach(th);
	det_release_end(&op, r);
	det_leave(t);
	return r;
}

DET_IMPL void det_impl_pthread_exit(void *ret)
{
	struct det_thread *t = det_enter();
	if (t) {
		det_load_unwinder();
		if (!t->exited)
			det_exit_event(t, DET_RA());
		det_leave(t);
	}
	real.pthread_exit(ret);
	__builtin_unreachable();
}

/* ------------------------------------------------------------------ */
/* The unwinder (libgcc_s, which glibc loads for cancellation and
 * pthread_exit) calls pthread_once for its own tables at every step it
 * begins; how many it makes depends on which frames are det's, which differ
 * between record and replay: those calls are not the program's, and pass
 * through (det_impl_pthread_once). Its text is found at start-up (a C++
 * program links it) and where unwinding may begin: in pthread_cancel,
 * pthread_exit and replay's cancellation. (A C program that loads it
 * otherwise, for backtrace(), has its calls recorded until then, in both
 * modes alike.) */

static uintptr_t unwinder_lo, unwinder_hi;

static int find_unwinder(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "libgcc_s.so"))
		return 0;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		lo = a < lo ? a : lo;
		hi = a + ph->p_memsz > hi ? a + ph->p_memsz : hi;
	}
	if (hi) {
		unwinder_hi = hi;
		unwinder_lo = lo;
	}
	return 1;
}

void det_find_unwinder(void)
{
	if (!unwinder_hi)
		dl_iterate_phdr(find_unwinder, NULL);
}

/* Load it as glibc would (it stays loaded), and find its text. */
void det_load_unwinder(void)
{
	if (unwinder_hi)
		return;
	if (!dlopen("libgcc_s.so.1", RTLD_NOW))
		return; /* (glibc's unwinding aborts the same way) */
	det_find_unwinder();
}

/* Called by the unwinder: its return address (DET_RA: from the program's
 * stack, the stub's return address; on the det stack, where the unwinder
 * runs when it unwinds det's frames, the stub jumps, and the caller's is
 * this function's own). */
int from_unwinder(uint64_t ra, uint64_t own_ra)
{
	return (ra >= unwinder_lo && ra < unwinder_hi) || (own_ra >= unwinder_lo && own_ra < unwinder_hi);
}

/* ------------------------------------------------------------------ */
/* cancellation: a request is an event (THREAD_CANCEL); where a thread acts
 * on it is another (THREAD_CANCELED), after which its cleanup handlers and
 * its exit are recorded as usual. Replay sends no request: each thread ends
 * where its THREAD_CANCELED says (enforce.c det_replay_cancel). Asynchronous
 * cancellation is not ordered. */

void det_log_canceled(struct det_thread *t, uint32_t where, int64_t calls, uint64_t ra)
{
	struct det_op op = {.id = t->slot->obj, .aux = where};
	t->canceled = 1;
	det_acquire_begin(&op, t, DET_EV_THREAD_CANCELED, NULL, DET_OBJ_THREAD, ra);
	det_acquire_end(&op, calls);
}

/* Record: unlock a FILE det locked for the program; strict mode's waiters
 * for it try again. */
void file_unlocked(struct det_thread *t, FILE *f)
{
	real.funlockfile(f);
	if (det_strict)
		det_ops.strict_unlocked(t, f);
}

/* The thread unwinds out of det with det's own libc call canceled (see
 * DET_ENTER; det runs program code only outside det). Record: what the call
 * leaves half done is finished (the FILE det locked is unlocked; a
 * condition wait's wake-up is logged, as glibc took the mutex back), then
 * THREAD_CANCELED. Then it leaves det: its cleanup handlers are recorded. */
void det_unwound(struct det_thread *t, uint64_t ra)
{
	/* no longer blocked in the call (what a deadlock report shows), nor
	 * waiting in it for a signal's handler (its op was on the frames gone) */
	atomic_store_explicit(&t->slot->blocked_kind, 0, memory_order_relaxed);
	t->wait_op = NULL;
	if (!det_replaying() && t->active && !t->exited && !t->canceled) {
		if (t->cancel_file) {
			FILE *f = t->cancel_file;
			t->cancel_file = NULL;
			file_unlocked(t, f);
		}
		if (t->cancel_cond) {
			struct det_op wake = {.aux_addr = t->cancel_mutex, .auxkind = DET_OBJ_MUTEX};
			const void *c = t->cancel_cond;
			t->cancel_cond = NULL;
			det_acquire_begin(&wake, t, DET_EV_COND_WAKE, c, DET_OBJ_COND, ra);
			det_acquire_end(&wake, ECANCELED);
		}
		if (t->in_testcancel)
			det_log_canceled(t, DET_AUX_THREAD_CANCELED_TESTCANCEL, t->testcancel_calls, ra);
		else
			det_log_canceled(t, DET_AUX_THREAD_CANCELED_IN_CALL, 0, ra);
	}
	t->in_testcancel = 0;
	det_leave(t);
}

DET_IMPL int det_impl_pthread_cancel(pthread_t th)
{
	DET_ENTER(t);
	if (!t)
		return real.pthread_cancel(th);
	struct det_op op = {0};
	det_release_begin(&op, t, DET_EV_THREAD_CANCEL, (void *)th, DET_OBJ_THREAD, DET_RA());
	int r;
	det_load_unwinder();
	if (det_replaying()) {
		r = (int)op.rec->result;
		if (r == 0)
			det_ops.replay_cancel_request(op.obj, th);
	} else {
		r = real.pthread_cancel(th);
		if (r == 0 && det_strict)
			det_ops.strict_canceled((uint64_t)th);
	}
	det_release_end(&op, r);
	det_leave(t);
	return r;
}

/* Not an event unless it acts: it counts its calls since the thread's last
 * event, and the THREAD_CANCELED of the one that acted says which it was, so
 * that replay ends the thread in the same call. */
DET_IMPL void det_impl_pthread_testcancel(void)
{
	DET_ENTER(t);
	if (!t) {
		real.pthread_testcancel();
		return;
	}
	if (t->testcancel_idx != t->idx + 1) {
		t->testcancel_idx = t->idx + 1;
		t->testcancel_calls = 0;
	}
	uint32_t calls = ++t->testcancel_calls;
	if (det_replaying()) {
		if (det_ops.replay_cancel_next(t)) {
			const struct det_sched *e = det_sched_at(t, t->idx);
			if (e->aux == DET_AUX_THREAD_CANCELED_TESTCANCEL && e->result == calls)
				det_ops.replay_cancel(t);
		}
		det_leave(t);
		return;
	}
	det_logical_turn(t); /* logical time: whether a request came is decided in turn order */
	t->in_testcancel = 1;
	real.pthread_testcancel(); /* (if it acts, det_unwound logs where) */
	t->in_testcancel = 0;
	det_leave(t);
}
