/*
 * preload/once.c - one-time initialization: C++ function-local statics
 * (__cxa_guard_*) and pthread_once.
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

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

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
	return det_real_late_once(cache, name, "libstdc++.so.6");
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
