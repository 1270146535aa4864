/*
 * preload/sync.c - the pthread functions libdet.so replaces for
 * synchronization objects: mutexes, condition variables, rwlocks,
 * barriers, semaphores, spinlocks.
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
	DET_LOCK_UNTIL(DET_EV_MUTEX_TIMEDLOCK, DET_OBJ_MUTEX, m, real.pthread_mutex_trylock(m),
		       real.pthread_mutex_timedlock(m, abstime), 1, abstime, CLOCK_REALTIME);
}

DET_IMPL int det_impl_pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clock, const struct timespec *abstime)
{
	DET_LOCK_UNTIL(DET_EV_MUTEX_CLOCKLOCK, DET_OBJ_MUTEX, m, real.pthread_mutex_trylock(m),
		       real.pthread_mutex_clocklock(m, clock, abstime), 1, abstime, clock);
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

/*
 * det's emulated waits (replay, strict recording) release the mutex with
 * pthread_mutex_unlock and retake it with trylock. glibc's own wait leaves
 * the waiter counted among the mutex's users (__nusers), so that
 * pthread_mutex_destroy fails with EBUSY while a wait is in it (pbzip2
 * deletes its queue so): the emulation keeps that count as glibc's wait
 * would, one more as the wait releases the mutex, one less once it has it
 * again, both while holding it. Returns whether it counted the waiter.
 */
static int cond_release(struct det_thread *t, pthread_mutex_t *m, int *result)
{
	int counted = m->__data.__owner == t->slot->ktid;
	if (counted)
		m->__data.__nusers++;
	*result = real.pthread_mutex_unlock(m);
	if (*result && counted) {
		m->__data.__nusers--;
		counted = 0;
	}
	return counted;
}

static void cond_retaken(pthread_mutex_t *m, int counted)
{
	if (counted)
		m->__data.__nusers--;
}

static int real_cond_wait(pthread_cond_t *c, pthread_mutex_t *m, enum cond_how how, clockid_t clock,
			  const struct timespec *abstime)
{
	switch (how) {
	case COND_PLAIN:
		return real.pthread_cond_wait(c, m);
	case COND_TIMED:
		return real.pthread_cond_timedwait(c, m, abstime);
	default:
		return real.pthread_cond_clockwait(c, m, clock, abstime);
	}
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
		int u = EINVAL, counted = bad_deadline(how, clock, abstime) ? 0 : cond_release(t, m, &u);
		det_release_end(&wait, 0); /* (published before it ran) */
		if (det_unlikely(!t->active) && !u) {
			/* its last event: the program ended in this thread, inside
			 * this wait (it ran last: replayer/enforce.c run_last), which
			 * now runs as glibc's own, from the mutex held again */
			if (real.pthread_mutex_trylock(m) == 0)
				cond_retaken(m, counted);
			return real_cond_wait(c, m, how, clock, abstime);
		}
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
		cond_retaken(m, counted);
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
		int counted = 0;
		r = EINVAL;
		if (!bad_deadline(how, clock, abstime))
			counted = cond_release(t, m, &r);
		if (r) {
			det_acquire_begin(&wake, t, DET_EV_COND_WAKE, c, DET_OBJ_COND, ra);
			det_acquire_end(&wake, r);
			return r;
		}
		det_ops.strict_signal(m, 1); /* those waiting for the mutex try again */
		clockid_t ck = how == COND_CLOCK ? clock
			       : (c->__data.__wrefs & 2) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
		atomic_store(&t->slot->strict_cancel_point, 1);
		int timedout = det_ops.strict_wait(&wait, c, how == COND_PLAIN ? NULL : abstime, ck);
		atomic_store(&t->slot->strict_cancel_point, 0);
		while ((r = real.pthread_mutex_trylock(m)) == EBUSY)
			det_ops.strict_wait_for(&wait, m);
		if (!r)
			cond_retaken(m, counted);
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
	r = real_cond_wait(c, m, how, clock, abstime);
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

/* One thread at a time (strict, logical), a writer's wait is det's, not
 * glibc's, which then does not know a writer waits: a writer-preferring
 * rwlock (PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP) must still turn new
 * readers away while one does, as glibc would (tryrdlock EBUSY, rdlock
 * waits). */
static int writer_waits(pthread_rwlock_t *l)
{
	if (!det_strict || l->__data.__flags != PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP)
		return 0;
	uint64_t key = det_obj_shared_key(l);
	for (uint32_t i = 0, n = det_threads_so_far(); i < n; i++) {
		struct det_slot *s = det_shm_slot(det_hdr, i);
		uint32_t kind = atomic_load(&s->blocked_kind);
		if (atomic_load(&s->strict_cond) == key &&
		    (kind == DET_EV_RWLOCK_WRLOCK || kind == DET_EV_RWLOCK_TIMEDWRLOCK ||
		     kind == DET_EV_RWLOCK_CLOCKWRLOCK))
			return 1;
	}
	return 0;
}

static int try_read_lock(pthread_rwlock_t *l)
{
	return writer_waits(l) ? EBUSY : real.pthread_rwlock_tryrdlock(l);
}

DET_IMPL int det_impl_pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
	DET_LOCK_LIKE(DET_EV_RWLOCK_RDLOCK, DET_OBJ_RWLOCK, l, try_read_lock(l),
		      real.pthread_rwlock_rdlock(l), 1);
}

DET_IMPL int det_impl_pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
	DET_LOCK_LIKE(DET_EV_RWLOCK_TRYRDLOCK, DET_OBJ_RWLOCK, l, try_read_lock(l),
		      EBUSY, 0);
}

DET_IMPL int det_impl_pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *abstime)
{
	DET_LOCK_UNTIL(DET_EV_RWLOCK_TIMEDRDLOCK, DET_OBJ_RWLOCK, l, try_read_lock(l),
		       real.pthread_rwlock_timedrdlock(l, abstime), 1, abstime, CLOCK_REALTIME);
}

DET_IMPL int det_impl_pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t clock, const struct timespec *abstime)
{
	DET_LOCK_UNTIL(DET_EV_RWLOCK_CLOCKRDLOCK, DET_OBJ_RWLOCK, l, try_read_lock(l),
		       real.pthread_rwlock_clockrdlock(l, clock, abstime), 1, abstime, clock);
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
	DET_LOCK_UNTIL(DET_EV_RWLOCK_TIMEDWRLOCK, DET_OBJ_RWLOCK, l, real.pthread_rwlock_trywrlock(l),
		       real.pthread_rwlock_timedwrlock(l, abstime), 1, abstime, CLOCK_REALTIME);
}

DET_IMPL int det_impl_pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clock, const struct timespec *abstime)
{
	DET_LOCK_UNTIL(DET_EV_RWLOCK_CLOCKWRLOCK, DET_OBJ_RWLOCK, l, real.pthread_rwlock_trywrlock(l),
		       real.pthread_rwlock_clockwrlock(l, clock, abstime), 1, abstime, clock);
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
		r = det_ops.strict_barrier_wait(&arrive, b);
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
/* semaphores: results are 0 or -errno. A named one (preload/named.c) is
 * shared with other processes: replay does not take or post it (the
 * recorded result stands), and strict mode waits for it in the kernel, as
 * a post may come from outside the program. */

#define DET_SEM_WAIT(kind, s, try_call, block_call, may_block, deadline, clock)                  \
	do {                                                                      \
		DET_ENTER(t);                                                     \
		if (!t)                                                           \
			return block_call;                                        \
		struct det_op op = {0};                                           \
		int r;                                                            \
		int named = det_sem_named(s);                                     \
		if (det_acquire_begin(&op, t, kind, s, DET_OBJ_SEM, DET_RA())) {  \
			r = -1;                                                   \
			errno = (int)-op.rec->result;                             \
		} else if (named && det_replaying()) {                            \
			r = 0;                                                    \
		} else if ((r = try_call) != 0 && errno == EAGAIN && !det_replaying() && (may_block)) { \
			if (det_strict && !named) {                               \
				int why = 0;                                      \
				while (r != 0 && errno == EAGAIN && !why) {       \
					why = det_ops.strict_sem_wait(&op, s, deadline, clock); \
					r = try_call;                             \
				}                                                 \
				if (r != 0 && why)                                \
					errno = why; /* timed out, or a handler ran */ \
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
	DET_SEM_WAIT(DET_EV_SEM_WAIT, s, real.sem_trywait(s), real.sem_wait(s), 1, NULL, CLOCK_REALTIME);
}

DET_IMPL int det_impl_sem_trywait(sem_t *s)
{
	DET_SEM_WAIT(DET_EV_SEM_TRYWAIT, s, real.sem_trywait(s), -1, 0, NULL, CLOCK_REALTIME);
}

DET_IMPL int det_impl_sem_timedwait(sem_t *s, const struct timespec *abstime)
{
	DET_SEM_WAIT(DET_EV_SEM_TIMEDWAIT, s, real.sem_trywait(s), real.sem_timedwait(s, abstime), 1, abstime,
		     CLOCK_REALTIME);
}

DET_IMPL int det_impl_sem_clockwait(sem_t *s, clockid_t clock, const struct timespec *abstime)
{
	DET_SEM_WAIT(DET_EV_SEM_CLOCKWAIT, s, real.sem_trywait(s), real.sem_clockwait(s, clock, abstime), 1,
		     abstime, clock);
}

DET_IMPL int det_impl_sem_post(sem_t *s)
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.sem_post(s);
	struct det_op op = {0};
	det_release_begin(&op, t, DET_EV_SEM_POST, s, DET_OBJ_SEM, DET_RA());
	int r, saved;
	if (det_replaying() && det_sem_named(s)) {
		r = op.rec->result ? -1 : 0;
		saved = (int)-op.rec->result;
	} else {
		r = real.sem_post(s);
		saved = errno;
	}
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
