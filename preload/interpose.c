/*
 * preload/interpose.c - the pthread and stdio functions libdet.so replaces.
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
#include "runtime.h"
#include "locks.h"

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

static void det_exit_event(struct det_thread *t, uint64_t ra)
{
	struct det_op op = {.id = t->slot->obj};
	det_release_begin(&op, t, DET_EV_THREAD_EXIT, NULL, DET_OBJ_THREAD, ra);
	if (det_strict) { /* its joiners try again, and find it exiting */
		atomic_store(&t->slot->state, DET_TS_EXITING);
		det_ops.strict_signal((void *)t->slot->pthread, 1);
	}
	det_release_end(&op, 0);
	det_thread_exit(t);
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
	det_acquire_begin(&op, t, DET_EV_THREAD_START, NULL, DET_OBJ_THREAD, (uint64_t)(uintptr_t)st.fn);
	det_acquire_end(&op, 0);
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
			uint32_t n = (uint32_t)(atomic_load(&det_hdr->clock) >> DET_SEQ_BITS);
			for (uint32_t i = 1; i < n && i < det_hdr->max_threads && op.obj; i++)
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
		det_obj_forget((void *)th);
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
static int from_unwinder(uint64_t ra, uint64_t own_ra)
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
static void file_unlocked(struct det_thread *t, FILE *f)
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
	/* no longer blocked in the call (what a deadlock report shows) */
	atomic_store_explicit(&t->slot->blocked_kind, 0, memory_order_relaxed);
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

/* ------------------------------------------------------------------ */
/* lock-like acquisitions and releases */

/* Does the calling thread itself hold this lock? (A relock of an
 * error-checking mutex fails with EDEADLK at once: strict mode must not wait
 * for a release that cannot come.) Reads glibc's own owner fields. */
DET_IMPL int det_impl_pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
	det_init();
	DET_INIT(m, real.pthread_mutex_init(m, a));
}

DET_IMPL int det_impl_pthread_mutex_destroy(pthread_mutex_t *m)
{
	DET_DESTROY(DET_EV_MUTEX_DESTROY, DET_OBJ_MUTEX, m, real.pthread_mutex_destroy(m));
}

DET_IMPL int det_impl_pthread_mutex_lock(pthread_mutex_t *m)
{
	DET_LOCK_LIKE(DET_EV_MUTEX_LOCK, DET_OBJ_MUTEX, m, real.pthread_mutex_trylock(m),
		      real.pthread_mutex_lock(m), 1);
}

DET_IMPL int det_impl_pthread_mutex_trylock(pthread_mutex_t *m)
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.pthread_mutex_trylock(m);
	struct det_op op = {0};
	int r;
	if (det_acquire_begin(&op, t, DET_EV_MUTEX_TRYLOCK, m, DET_OBJ_MUTEX, DET_RA()))
		r = (int)op.rec->result;
	else
		r = real.pthread_mutex_trylock(m);
	det_acquire_end(&op, r);
	det_leave(t);
	return r;
}

DET_IMPL int det_impl_pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
	DET_LOCK_LIKE(DET_EV_MUTEX_TIMEDLOCK, DET_OBJ_MUTEX, m, real.pthread_mutex_trylock(m),
		      real.pthread_mutex_timedlock(m, abstime), 1);
}

DET_IMPL int det_impl_pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
	DET_LOCK_LIKE(DET_EV_MUTEX_CLOCKLOCK, DET_OBJ_MUTEX, m, real.pthread_mutex_trylock(m),
		      real.pthread_mutex_clocklock(m, clock, abstime), 1);
}

DET_IMPL int det_impl_pthread_mutex_unlock(pthread_mutex_t *m)
{
	DET_RELEASE_LIKE(DET_EV_MUTEX_UNLOCK, DET_OBJ_MUTEX, m, real.pthread_mutex_unlock(m));
}

/* ------------------------------------------------------------------ */
/* condition variables */

enum cond_how { COND_PLAIN, COND_TIMED, COND_CLOCK };

/* Strict mode's emulated wait: a cancellation point with the mutex held,
 * which det_unwound logs as the wait's wake-up (ECANCELED) if it acts. */
static void cond_cancel_point(struct det_thread *t, pthread_cond_t *c, pthread_mutex_t *m)
{
	t->cancel_cond = c;
	t->cancel_mutex = m;
	real.pthread_testcancel();
	t->cancel_cond = NULL;
}

/* A deadline or clock glibc's timed wait refuses at once (EINVAL), before
 * it touches the mutex. */
static int bad_deadline(enum cond_how how, clockid_t clock, const struct timespec *abstime)
{
	return how != COND_PLAIN && (abstime->tv_nsec < 0 || abstime->tv_nsec >= 1000000000 ||
				     (how == COND_CLOCK && clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC));
}

static int det_cond_wait(struct det_thread *t, uint16_t kind, pthread_cond_t *c, pthread_mutex_t *m,
			 enum cond_how how, clockid_t clock, const struct timespec *abstime, uint64_t ra)
{
	struct det_op wait = {.aux_addr = m, .auxkind = DET_OBJ_MUTEX};
	struct det_op wake = {.aux_addr = m, .auxkind = DET_OBJ_MUTEX};
	int r;

	det_release_begin(&wait, t, kind, c, DET_OBJ_COND, ra);
	if (det_replaying()) {
		/* The wait releases the mutex; the turn of the wake-up event is
		 * the recorded moment the wait returned. */
		int u = bad_deadline(how, clock, abstime) ? EINVAL : real.pthread_mutex_unlock(m);
		det_release_end(&wait, 0); /* (published before it ran) */
		det_acquire_begin(&wake, t, DET_EV_COND_WAKE, c, DET_OBJ_COND, ra);
		r = (int)wake.rec->result;
		if (u) { /* as glibc's wait, it fails at once (EINVAL, EPERM): so did the recorded one */
			if (r != u)
				det_ops.diverge(t, DET_DIV_RESULT, DET_EV_COND_WAKE, c, ra,
					    "a condition wait failed at once where the recorded one did not");
			det_acquire_end(&wake, r);
			return r;
		}
		if (real.pthread_mutex_trylock(m) != 0)
			det_ops.diverge(t, DET_DIV_RESULT, DET_EV_COND_WAKE, c, ra,
				    "the mutex of a condition wait was not free at its recorded turn");
		det_acquire_end(&wake, r);
		if (r == ECANCELED && det_ops.replay_cancel_next(t)) /* canceled in the wait, mutex held */
			det_ops.replay_cancel(t);
		return r;
	}
	/* Publish the wait before blocking in it. */
	det_release_end(&wait, 0);
	if (det_strict) {
		/* emulated: the mutex is released, the thread runs again when a
		 * signal picks it (or its deadline passes), then retakes it */
		cond_cancel_point(t, c, m); /* a request already made acts as the wait begins */
		/* as glibc's wait: a bad deadline or clock, or an error-checking
		 * mutex the caller does not hold, fails at once */
		if ((r = bad_deadline(how, clock, abstime) ? EINVAL : real.pthread_mutex_unlock(m))) {
			det_acquire_begin(&wake, t, DET_EV_COND_WAKE, c, DET_OBJ_COND, ra);
			det_acquire_end(&wake, r);
			return r;
		}
		det_ops.strict_signal(m, 1); /* those waiting for the mutex try again */
		clockid_t ck = how == COND_CLOCK ? clock
			       : (c->__data.__wrefs & 2) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
		atomic_store(&t->slot->strict_cancel_point, 1);
		int timedout = det_ops.strict_wait(t, c, how == COND_PLAIN ? NULL : abstime, ck);
		atomic_store(&t->slot->strict_cancel_point, 0);
		while ((r = real.pthread_mutex_trylock(m)) == EBUSY)
			det_ops.strict_wait_for(&wait, m);
		/* a pthread_cancel may have woken it: a cancellation point, with
		 * the mutex held again, as in glibc's wait */
		cond_cancel_point(t, c, m);
		r = timedout ? ETIMEDOUT : r;
		det_acquire_begin(&wake, t, DET_EV_COND_WAKE, c, DET_OBJ_COND, ra);
		det_acquire_end(&wake, r);
		return r;
	}
	det_block(&wait);
	t->cancel_cond = c; /* a cancellation takes the mutex back and unwinds */
	t->cancel_mutex = m;
	switch (how) {
	case COND_PLAIN:
		r = real.pthread_cond_wait(c, m);
		break;
	case COND_TIMED:
		r = real.pthread_cond_timedwait(c, m, abstime);
		break;
	default:
		r = real.pthread_cond_clockwait(c, m, clock, abstime);
		break;
	}
	t->cancel_cond = NULL;
	det_unblock(&wait);
	det_acquire_begin(&wake, t, DET_EV_COND_WAKE, c, DET_OBJ_COND, ra);
	det_acquire_end(&wake, r);
	return r;
}

DET_IMPL int det_impl_pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *a)
{
	det_init();
	DET_INIT(c, real.pthread_cond_init(c, a));
}

DET_IMPL int det_impl_pthread_cond_destroy(pthread_cond_t *c)
{
	DET_DESTROY(DET_EV_COND_DESTROY, DET_OBJ_COND, c, real.pthread_cond_destroy(c));
}

DET_IMPL int det_impl_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	DET_ENTER(t);
	if (!t)
		return real.pthread_cond_wait(c, m);
	int r = det_cond_wait(t, DET_EV_COND_WAIT, c, m, COND_PLAIN, 0, NULL, DET_RA());
	det_leave(t);
	return r;
}

DET_IMPL int det_impl_pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime)
{
	DET_ENTER(t);
	if (!t)
		return real.pthread_cond_timedwait(c, m, abstime);
	int r = det_cond_wait(t, DET_EV_COND_TIMEDWAIT, c, m, COND_TIMED, 0, abstime, DET_RA());
	det_leave(t);
	return r;
}

DET_IMPL int det_impl_pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
				  const struct timespec *abstime)
{
	DET_ENTER(t);
	if (!t)
		return real.pthread_cond_clockwait(c, m, clock, abstime);
	int r = det_cond_wait(t, DET_EV_COND_CLOCKWAIT, c, m, COND_CLOCK, clock, abstime, DET_RA());
	det_leave(t);
	return r;
}

/* Replay still signals: a waiter outside det's control (a thread not
 * created through pthread_create) must not sleep for ever. */
static int det_cond_signal(pthread_cond_t *c, int all, uint64_t ra)
{
	struct det_thread *t = det_enter();
	if (!t)
		return all ? real.pthread_cond_broadcast(c) : real.pthread_cond_signal(c);
	struct det_op op = {0};
	det_release_begin(&op, t, all ? DET_EV_COND_BROADCAST : DET_EV_COND_SIGNAL, c, DET_OBJ_COND, ra);
	int r = all ? real.pthread_cond_broadcast(c) : real.pthread_cond_signal(c);
	if (det_strict)
		det_ops.strict_signal(c, all); /* the emulated waiters */
	det_release_end(&op, r);
	det_leave(t);
	return r;
}

DET_IMPL int det_impl_pthread_cond_signal(pthread_cond_t *c)
{
	return det_cond_signal(c, 0, DET_RA());
}

DET_IMPL int det_impl_pthread_cond_broadcast(pthread_cond_t *c)
{
	return det_cond_signal(c, 1, DET_RA());
}

/* ------------------------------------------------------------------ */
/* rwlocks */

DET_IMPL int det_impl_pthread_rwlock_init(pthread_rwlock_t *l, const pthread_rwlockattr_t *a)
{
	det_init();
	DET_INIT(l, real.pthread_rwlock_init(l, a));
}

DET_IMPL int det_impl_pthread_rwlock_destroy(pthread_rwlock_t *l)
{
	DET_DESTROY(DET_EV_RWLOCK_DESTROY, DET_OBJ_RWLOCK, l, real.pthread_rwlock_destroy(l));
}

DET_IMPL int det_impl_pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
	DET_LOCK_LIKE(DET_EV_RWLOCK_RDLOCK, DET_OBJ_RWLOCK, l, real.pthread_rwlock_tryrdlock(l),
		      real.pthread_rwlock_rdlock(l), 1);
}

DET_IMPL int det_impl_pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
	DET_LOCK_LIKE(DET_EV_RWLOCK_TRYRDLOCK, DET_OBJ_RWLOCK, l, real.pthread_rwlock_tryrdlock(l),
		      EBUSY, 0);
}

DET_IMPL int det_impl_pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *abstime)
{
	DET_LOCK_LIKE(DET_EV_RWLOCK_TIMEDRDLOCK, DET_OBJ_RWLOCK, l, real.pthread_rwlock_tryrdlock(l),
		      real.pthread_rwlock_timedrdlock(l, abstime), 1);
}

DET_IMPL int det_impl_pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t clock, const struct timespec *abstime)
{
	DET_LOCK_LIKE(DET_EV_RWLOCK_CLOCKRDLOCK, DET_OBJ_RWLOCK, l, real.pthread_rwlock_tryrdlock(l),
		      real.pthread_rwlock_clockrdlock(l, clock, abstime), 1);
}

DET_IMPL int det_impl_pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	DET_LOCK_LIKE(DET_EV_RWLOCK_WRLOCK, DET_OBJ_RWLOCK, l, real.pthread_rwlock_trywrlock(l),
		      real.pthread_rwlock_wrlock(l), 1);
}

DET_IMPL int det_impl_pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
	DET_LOCK_LIKE(DET_EV_RWLOCK_TRYWRLOCK, DET_OBJ_RWLOCK, l, real.pthread_rwlock_trywrlock(l),
		      EBUSY, 0);
}

DET_IMPL int det_impl_pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *abstime)
{
	DET_LOCK_LIKE(DET_EV_RWLOCK_TIMEDWRLOCK, DET_OBJ_RWLOCK, l, real.pthread_rwlock_trywrlock(l),
		      real.pthread_rwlock_timedwrlock(l, abstime), 1);
}

DET_IMPL int det_impl_pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clock, const struct timespec *abstime)
{
	DET_LOCK_LIKE(DET_EV_RWLOCK_CLOCKWRLOCK, DET_OBJ_RWLOCK, l, real.pthread_rwlock_trywrlock(l),
		      real.pthread_rwlock_clockwrlock(l, clock, abstime), 1);
}

DET_IMPL int det_impl_pthread_rwlock_unlock(pthread_rwlock_t *l)
{
	DET_RELEASE_LIKE(DET_EV_RWLOCK_UNLOCK, DET_OBJ_RWLOCK, l, real.pthread_rwlock_unlock(l));
}

/* ------------------------------------------------------------------ */
/* barriers: arrival and departure are separate events; replay emulates the
 * wait, since every arrival of a round precedes its departures */

DET_IMPL int det_impl_pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *a, unsigned count)
{
	det_init();
	if (det_strict)
		det_ops.strict_barrier_init(b, count);
	DET_INIT(b, real.pthread_barrier_init(b, a, count));
}

DET_IMPL int det_impl_pthread_barrier_destroy(pthread_barrier_t *b)
{
	DET_DESTROY(DET_EV_BARRIER_DESTROY, DET_OBJ_BARRIER, b, real.pthread_barrier_destroy(b));
}

DET_IMPL int det_impl_pthread_barrier_wait(pthread_barrier_t *b)
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.pthread_barrier_wait(b);
	uint64_t ra = DET_RA();
	struct det_op arrive = {0}, depart = {0};
	int r = 0;
	det_release_begin(&arrive, t, DET_EV_BARRIER_ARRIVE, b, DET_OBJ_BARRIER, ra);
	det_release_end(&arrive, 0);
	if (det_strict) {
		r = det_ops.strict_barrier_wait(t, b);
	} else if (!det_replaying()) {
		det_block(&arrive);
		r = real.pthread_barrier_wait(b);
		det_unblock(&arrive);
	}
	if (det_acquire_begin(&depart, t, DET_EV_BARRIER_DEPART, b, DET_OBJ_BARRIER, ra))
		r = (int)depart.rec->result;
	det_acquire_end(&depart, r);
	det_leave(t);
	return r;
}

/* ------------------------------------------------------------------ */
/* semaphores: results are 0 or -errno */

#define DET_SEM_WAIT(kind, s, try_call, block_call, may_block)                                    \
	do {                                                                      \
		DET_ENTER(t);                                                     \
		if (!t)                                                           \
			return block_call;                                        \
		struct det_op op = {0};                                           \
		int r;                                                            \
		if (det_acquire_begin(&op, t, kind, s, DET_OBJ_SEM, DET_RA())) {  \
			r = -1;                                                   \
			errno = (int)-op.rec->result;                             \
		} else if ((r = try_call) != 0 && errno == EAGAIN && !det_replaying() && (may_block)) { \
			if (det_strict) {                                         \
				while (r != 0 && errno == EAGAIN) {               \
					det_ops.strict_wait_for_cancelable(&op, s);   \
					r = try_call;                             \
				}                                                 \
			} else {                                                  \
				det_block(&op);                                   \
				r = block_call;                                   \
				det_unblock(&op);                                 \
			}                                                         \
		}                                                                 \
		int saved = errno;                                                \
		det_acquire_end(&op, r ? -saved : 0);                             \
		det_leave(t);                                                     \
		errno = saved;                                                    \
		return r;                                                         \
	} while (0)

DET_IMPL int det_impl_sem_init(sem_t *s, int pshared, unsigned value)
{
	det_init();
	DET_INIT(s, real.sem_init(s, pshared, value));
}

DET_IMPL int det_impl_sem_destroy(sem_t *s)
{
	DET_DESTROY(DET_EV_SEM_DESTROY, DET_OBJ_SEM, s, real.sem_destroy(s));
}

DET_IMPL int det_impl_sem_wait(sem_t *s)
{
	DET_SEM_WAIT(DET_EV_SEM_WAIT, s, real.sem_trywait(s), real.sem_wait(s), 1);
}

DET_IMPL int det_impl_sem_trywait(sem_t *s)
{
	DET_SEM_WAIT(DET_EV_SEM_TRYWAIT, s, real.sem_trywait(s), -1, 0);
}

DET_IMPL int det_impl_sem_timedwait(sem_t *s, const struct timespec *abstime)
{
	DET_SEM_WAIT(DET_EV_SEM_TIMEDWAIT, s, real.sem_trywait(s), real.sem_timedwait(s, abstime), 1);
}

DET_IMPL int det_impl_sem_clockwait(sem_t *s, clockid_t clock, const struct timespec *abstime)
{
	DET_SEM_WAIT(DET_EV_SEM_CLOCKWAIT, s, real.sem_trywait(s), real.sem_clockwait(s, clock, abstime), 1);
}

DET_IMPL int det_impl_sem_post(sem_t *s)
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.sem_post(s);
	struct det_op op = {0};
	det_release_begin(&op, t, DET_EV_SEM_POST, s, DET_OBJ_SEM, DET_RA());
	int r = real.sem_post(s);
	int saved = errno;
	if (det_strict)
		det_ops.strict_unlocked(t, s);
	det_release_end(&op, r ? -saved : 0);
	det_leave(t);
	errno = saved;
	return r;
}

/* ------------------------------------------------------------------ */
/* spinlocks */

DET_IMPL int det_impl_pthread_spin_init(pthread_spinlock_t *l, int pshared)
{
	det_init();
	DET_INIT((void *)l, real.pthread_spin_init(l, pshared));
}

DET_IMPL int det_impl_pthread_spin_destroy(pthread_spinlock_t *l)
{
	DET_DESTROY(DET_EV_SPIN_DESTROY, DET_OBJ_SPIN, (void *)l, real.pthread_spin_destroy(l));
}

DET_IMPL int det_impl_pthread_spin_lock(pthread_spinlock_t *l)
{
	DET_LOCK_LIKE(DET_EV_SPIN_LOCK, DET_OBJ_SPIN, (void *)l, real.pthread_spin_trylock(l),
		      real.pthread_spin_lock(l), 1);
}

DET_IMPL int det_impl_pthread_spin_trylock(pthread_spinlock_t *l)
{
	DET_LOCK_LIKE(DET_EV_SPIN_TRYLOCK, DET_OBJ_SPIN, (void *)l, real.pthread_spin_trylock(l), EBUSY, 0);
}

DET_IMPL int det_impl_pthread_spin_unlock(pthread_spinlock_t *l)
{
	DET_RELEASE_LIKE(DET_EV_SPIN_UNLOCK, DET_OBJ_SPIN, (void *)l, real.pthread_spin_unlock(l));
}

/* ------------------------------------------------------------------ */
/* C++ function-local statics: the first thread to call __cxa_guard_acquire
 * runs the initializer while later ones wait (compiled code calls it only
 * while the guard's first byte says "not done"). Which thread initializes is
 * the event; a call that finds the static done, or waits for it, is one only
 * in strict mode: in parallel modes whether a thread calls at all depends on
 * timing. Replay lets the recorded initializer take the guard at its turn;
 * any other caller waits until the static is done, then finds it so. */

static void *guard_fn(const char *name, void **cache)
{
	if (!*cache)
		*cache = det_real_late(name, "libstdc++.so.6");
	return *cache;
}

static int guard_done(const uint64_t *g)
{
	return __atomic_load_n((const uint8_t *)g, __ATOMIC_ACQUIRE) != 0;
}

DET_IMPL int det_impl___cxa_guard_acquire(uint64_t *g)
{
	static void *fn;
	int (*acquire)(uint64_t *) = (int (*)(uint64_t *))guard_fn("__cxa_guard_acquire", &fn);
	struct det_thread *t = det_enter();
	if (!t)
		return acquire(g);
	int strict = (det_hdr->flags & DET_F_STRICT) != 0;
	uint64_t ra = DET_RA();
	struct det_op op = {0};
	int r;
	if (det_replaying()) {
		if (!strict && det_ops.replay_next_kind(t, DET_EV_GUARD_ACQUIRE) != DET_EV_GUARD_ACQUIRE) {
			/* not the recorded initializer: wait for it to finish */
			while (!guard_done(g)) {
				struct timespec nap = {0, 50000};
				det_sys(SYS_nanosleep, (long)&nap, 0, 0, 0, 0, 0);
			}
			r = acquire(g);
			det_leave(t);
			return r;
		}
		if (det_acquire_begin(&op, t, DET_EV_GUARD_ACQUIRE, g, DET_OBJ_ONCE, ra))
			r = 0; /* strict: it found the static done */
		else
			r = acquire(g);
		det_acquire_end(&op, r ? 0 : 1);
		det_leave(t);
		return r;
	}
	op.t = t;
	op.kind = DET_EV_GUARD_ACQUIRE;
	op.ra = ra;
	if (strict)
		det_block(&op); /* another thread may be initializing it: give up the turn */
	r = acquire(g);
	if (strict)
		det_unblock(&op);
	if (r || strict) {
		struct det_op ev = {0};
		det_acquire_begin(&ev, t, DET_EV_GUARD_ACQUIRE, g, DET_OBJ_ONCE, ra);
		det_acquire_end(&ev, r ? 0 : 1);
	}
	det_leave(t);
	return r;
}

/* The initializer ended (release) or threw (abort): an event before it. */
static void guard_end(uint64_t *g, uint16_t kind, void (*end)(uint64_t *))
{
	struct det_thread *t = det_enter();
	if (!t) {
		end(g);
		return;
	}
	struct det_op op = {0};
	det_release_begin(&op, t, kind, g, DET_OBJ_ONCE, DET_RA());
	end(g);
	det_release_end(&op, 0);
	det_leave(t);
}

DET_IMPL void det_impl___cxa_guard_release(uint64_t *g)
{
	static void *fn;
	guard_end(g, DET_EV_GUARD_RELEASE, (void (*)(uint64_t *))guard_fn("__cxa_guard_release", &fn));
}

DET_IMPL void det_impl___cxa_guard_abort(uint64_t *g)
{
	static void *fn;
	guard_end(g, DET_EV_GUARD_ABORT, (void (*)(uint64_t *))guard_fn("__cxa_guard_abort", &fn));
}

/* ------------------------------------------------------------------ */
/* pthread_once: the thread that runs the init routine has a ONCE_INIT event
 * as the routine starts and its ONCE as the routine returns, before any
 * other caller can return; replay runs the routine in the thread whose next
 * event is the ONCE_INIT. */

static __thread void (*once_routine)(void) __attribute__((tls_model("initial-exec")));
static __thread pthread_once_t *once_control __attribute__((tls_model("initial-exec")));
static __thread uint64_t once_ra __attribute__((tls_model("initial-exec")));

/* A routine of the program, called on the program's stack (stack.c). */
static void *run_routine(void *fn)
{
	((void (*)(void))(uintptr_t)fn)();
	return NULL;
}

static void once_event(struct det_thread *t, uint16_t kind, pthread_once_t *o, int ran, uint64_t ra)
{
	struct det_op op = {0};
	det_acquire_begin(&op, t, kind, o, DET_OBJ_ONCE, ra);
	det_acquire_end(&op, ran);
}

static void once_trampoline(void)
{
	struct det_thread *t = &det_tls;
	if (det_strict)
		det_ops.strict_acquire(t);
	t->depth = 1;
	once_event(t, DET_EV_ONCE_INIT, once_control, 0, once_ra);
	t->depth = 0;
	det_call_on_program_stack(run_routine, (void *)(uintptr_t)once_routine);
	t->once_ran = 1;
	t->depth = 1;
	once_event(t, DET_EV_ONCE, once_control, 1, once_ra);
	t->depth = 0;
}

static void once_nothing(void)
{
}

DET_IMPL int det_impl_pthread_once(pthread_once_t *o, void (*fn)(void))
{
	struct det_thread *t = det_enter();
	uint64_t ra = t ? DET_RA() : 0;
	if (!t || from_unwinder(ra, (uint64_t)(uintptr_t)__builtin_return_address(0))) {
		if (t)
			det_leave(t);
		return real.pthread_once(o, fn);
	}
	if (det_replaying()) {
		int runs = det_ops.replay_next_kind(t, DET_EV_ONCE_INIT) == DET_EV_ONCE_INIT;
		if (runs) {
			once_event(t, DET_EV_ONCE_INIT, o, 0, ra);
			det_leave(t);
			det_call_on_program_stack(run_routine, (void *)(uintptr_t)fn);
			t->depth = 1;
			real.pthread_once(o, once_nothing); /* mark it done */
		}
		once_event(t, DET_EV_ONCE, o, runs, ra);
		det_leave(t);
		return 0;
	}
	void (*saved_routine)(void) = once_routine;
	pthread_once_t *saved_control = once_control;
	uint64_t saved_ra = once_ra;
	uint32_t saved_ran = t->once_ran;
	once_routine = fn;
	once_control = o;
	once_ra = ra;
	t->once_ran = 0;
	if (det_strict) /* another thread may be running the routine: wait without the turn */
		det_ops.strict_release(t);
	det_leave(t);
	int r = real.pthread_once(o, once_trampoline);
	t->depth = 1;
	if (det_strict)
		det_ops.strict_acquire(t);
	if (!t->once_ran)
		once_event(t, DET_EV_ONCE, o, 0, ra);
	once_routine = saved_routine;
	once_control = saved_control;
	once_ra = saved_ra;
	t->once_ran = saved_ran;
	det_leave(t);
	return r;
}

/* ------------------------------------------------------------------ */
/* stdio output: each call is an event on its FILE, so threads that print
 * without their own locking produce the same output in replay. Record takes
 * the FILE's lock around the call, and its place in the order as the call
 * begins: what the call flushes may be read by another thread or process
 * before the call returns, and that read must come after it in the order.
 * (The result is logged when the call returns; "pending" if it never did.) */

static void stdio_begin(struct det_op *op, struct det_thread *t, FILE *f, uint64_t ra)
{
	det_acquire_begin(op, t, DET_EV_STDIO_WRITE, f, DET_OBJ_FILE, ra);
	if (det_replaying()) {
		if (op->rec->result == DET_RESULT_PENDING) /* it died in this call: a SIGPIPE, a kill */
			det_ops.replay_vanish(op);
		if (f && det_ops.replay_free_running()) {
			/* Its place in the order was taken before it ran, so the
			 * recording's next events did not wait for it to end: nor
			 * do the replay's. It may block on a pipe that one of them
			 * drains (a reader's read, placed when it returned). It
			 * holds its FILE meanwhile: the FILE's next users still
			 * write after it. (op->rec = NULL: done already.) */
			real.flockfile(f);
			det_acquire_end(op, op->rec->result);
			op->rec = NULL;
			/* a reader due after it may drain the pipe (read_ahead) */
			atomic_store(&t->slot->pipe_writing, det_own_pipe(fileno(f)));
		}
		return;
	}
	if (f && real.ftrylockfile(f) != 0) {
		if (det_strict) {
			while (real.ftrylockfile(f) != 0) /* its holder needs the turn */
				det_ops.strict_wait_for(op, f);
		} else {
			det_block(op);
			real.flockfile(f);
			det_unblock(op);
		}
	}
	t->cancel_file = f; /* its write may be canceled (det_unwound) */
	det_ops.rec_call_begin(op);
}

static int stdio_end(struct det_op *op, FILE *f, int r)
{
	if (det_replaying()) {
		if (op->rec) {
			det_acquire_end(op, op->rec->result);
		} else {
			atomic_store(&op->t->slot->pipe_writing, 0);
			real.funlockfile(f);
		}
	} else {
		det_ops.rec_call_end(op, r);
		op->t->cancel_file = NULL;
		if (f)
			file_unlocked(op->t, f);
	}
	det_leave(op->t);
	return r;
}

#define DET_STDIO(f, call)                                                          \
	do {                                                                      \
		DET_ENTER(t);                                                     \
		if (!t)                                                           \
			return call;                                              \
		struct det_op op = {0};                                           \
		stdio_begin(&op, t, f, DET_RA());                                 \
		return stdio_end(&op, f, call);                                   \
	} while (0)

DET_IMPL int det_impl_vprintf(const char *fmt, va_list ap)
{
	DET_STDIO(stdout, real.vprintf(fmt, ap));
}

DET_IMPL int det_impl_vfprintf(FILE *f, const char *fmt, va_list ap)
{
	DET_STDIO(f, real.vfprintf(f, fmt, ap));
}

DET_IMPL int det_impl___vprintf_chk(int flag, const char *fmt, va_list ap)
{
	DET_STDIO(stdout, real.__vprintf_chk(flag, fmt, ap));
}

DET_IMPL int det_impl___vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap)
{
	DET_STDIO(f, real.__vfprintf_chk(f, flag, fmt, ap));
}

/* The variadic entry points are front-ends (their arguments may be on the
 * caller's stack, which the det stack does not have): they pass a va_list
 * and their return address to det_stdio_va, an entry on the det stack. */
enum stdio_va { VA_PRINTF, VA_FPRINTF, VA_PRINTF_CHK, VA_FPRINTF_CHK };

DET_HIDDEN int det_stdio_va(enum stdio_va which, FILE *f, int flag, const char *fmt, va_list ap, uint64_t ra);

DET_IMPL int det_impl_det_stdio_va(enum stdio_va which, FILE *f, int flag, const char *fmt, va_list ap,
				   uint64_t ra)
{
#define VCALL (which == VA_PRINTF ? real.vprintf(fmt, ap) : which == VA_FPRINTF ? real.vfprintf(f, fmt, ap) \
	       : which == VA_PRINTF_CHK ? real.__vprintf_chk(flag, fmt, ap) : real.__vfprintf_chk(f, flag, fmt, ap))
	DET_ENTER(t);
	if (!t)
		return VCALL;
	struct det_op op = {0};
	stdio_begin(&op, t, f, ra);
	return stdio_end(&op, f, VCALL);
#undef VCALL
}

#define DET_STDIO_VA(which, f, flag, last)                                                 \
	do {                                                                               \
		va_list ap;                                                                \
		va_start(ap, last);                                                        \
		int r = det_stdio_va(which, f, flag, last, ap, DET_RA());                  \
		va_end(ap);                                                                \
		return r;                                                                  \
	} while (0)

EXPORT int printf(const char *fmt, ...)
{
	DET_STDIO_VA(VA_PRINTF, stdout, 0, fmt);
}

EXPORT int fprintf(FILE *f, const char *fmt, ...)
{
	DET_STDIO_VA(VA_FPRINTF, f, 0, fmt);
}

EXPORT int __printf_chk(int flag, const char *fmt, ...)
{
	DET_STDIO_VA(VA_PRINTF_CHK, stdout, flag, fmt);
}

EXPORT int __fprintf_chk(FILE *f, int flag, const char *fmt, ...)
{
	DET_STDIO_VA(VA_FPRINTF_CHK, f, flag, fmt);
}

DET_IMPL int det_impl_puts(const char *s)
{
	DET_STDIO(stdout, real.puts(s));
}

DET_IMPL int det_impl_fputs(const char *s, FILE *f)
{
	DET_STDIO(f, real.fputs(s, f));
}

DET_IMPL int det_impl_fputc(int c, FILE *f)
{
	DET_STDIO(f, real.fputc(c, f));
}

#undef putc
DET_IMPL int det_impl_putc(int c, FILE *f)
{
	DET_STDIO(f, real.putc(c, f));
}

#undef putchar
DET_IMPL int det_impl_putchar(int c)
{
	DET_STDIO(stdout, real.putchar(c));
}

DET_IMPL size_t det_impl_fwrite(const void *p, size_t size, size_t n, FILE *f)
{
	DET_ENTER(t);
	if (!t)
		return real.fwrite(p, size, n, f);
	struct det_op op = {0};
	stdio_begin(&op, t, f, DET_RA());
	size_t r = real.fwrite(p, size, n, f);
	stdio_end(&op, f, (int)(r > INT32_MAX ? INT32_MAX : r));
	return r;
}

DET_IMPL int det_impl_fflush(FILE *f)
{
	DET_STDIO(f, real.fflush(f));
}

DET_IMPL void det_impl_perror(const char *s)
{
	DET_ENTER(t);
	if (!t) {
		real.perror(s);
		return;
	}
	int saved = errno;
	struct det_op op = {0};
	stdio_begin(&op, t, stderr, DET_RA());
	errno = saved;
	real.perror(s);
	stdio_end(&op, stderr, 0);
}

DET_IMPL void det_impl_flockfile(FILE *f)
{
	struct det_thread *t = det_enter();
	if (!t) {
		real.flockfile(f);
		return;
	}
	struct det_op op = {0};
	if (!det_acquire_begin(&op, t, DET_EV_FILE_LOCK, f, DET_OBJ_FILE, DET_RA()) && real.ftrylockfile(f) != 0) {
		if (det_strict) {
			while (real.ftrylockfile(f) != 0)
				det_ops.strict_wait_for(&op, f);
		} else {
			det_block(&op);
			real.flockfile(f);
			det_unblock(&op);
		}
	}
	det_acquire_end(&op, 0);
	det_leave(t);
}

DET_IMPL int det_impl_ftrylockfile(FILE *f)
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.ftrylockfile(f);
	struct det_op op = {0};
	int r;
	if (det_acquire_begin(&op, t, DET_EV_FILE_LOCK, f, DET_OBJ_FILE, DET_RA())) {
		r = (int)op.rec->result;
	} else {
		r = real.ftrylockfile(f);
		if (r && det_replaying()) /* free at its turn in the recording */
			det_ops.diverge(t, DET_DIV_RESULT, DET_EV_FILE_LOCK, f, op.ra,
				    "ftrylockfile failed where the recording's succeeded");
	}
	det_acquire_end(&op, r);
	det_leave(t);
	return r;
}

DET_IMPL void det_impl_funlockfile(FILE *f)
{
	struct det_thread *t = det_enter();
	if (!t) {
		real.funlockfile(f);
		return;
	}
	struct det_op op = {0};
	det_release_begin(&op, t, DET_EV_FILE_UNLOCK, f, DET_OBJ_FILE, DET_RA());
	file_unlocked(t, f);
	det_release_end(&op, 0);
	det_leave(t);
}

