/*
 * preload/locks.h - the shape of every lock-like wrapper: acquire, release,
 * destroy, (re)initialise. Shared by the pthread wrappers
 * (preload/sync.c) and OpenMP's (preload/openmp.c).
 *
 * Rules of this file:
 *  - The macros return from the wrapper they are used in; the wrapper
 *    passes straight through when det_enter() says the runtime is off.
 *  - Replay never blocks inside the lock: at its turn the try variant must
 *    succeed (the recorded order guarantees it); a recorded failure is
 *    returned without trying.
 */
#ifndef DET_LOCKS_H
#define DET_LOCKS_H

#include "runtime.h"

#include <errno.h>

static inline int held_by_me(struct det_thread *t, enum det_objkind kind, const void *obj)
{
	if (kind == DET_OBJ_MUTEX)
		return ((const pthread_mutex_t *)obj)->__data.__owner == t->slot->ktid;
	if (kind == DET_OBJ_RWLOCK)
		return ((const pthread_rwlock_t *)obj)->__data.__cur_writer == t->slot->ktid;
	return 0;
}

/*
 * Acquire an ordered lock. Record tries first, so that only a contended call
 * is marked as blocked (what a deadlock report shows). Replay takes the lock
 * with try_call at its turn; a recorded EOWNERDEAD (a robust mutex whose
 * owner died) took the lock, so replay takes it too. A timed lock in strict
 * mode gives up at its deadline (deadline NULL: none), as block_call would.
 */
#define DET_LOCK_LIKE(kind, objkind, obj, try_call, block_call, may_block)                         \
	DET_LOCK_UNTIL(kind, objkind, obj, try_call, block_call, may_block, NULL, CLOCK_REALTIME)

#define DET_LOCK_UNTIL(kind, objkind, obj, try_call, block_call, may_block, deadline, clock)       \
	do {                                                                      \
		struct det_thread *t = det_enter();                               \
		if (!t)                                                           \
			return block_call;                                        \
		struct det_op op = {0};                                           \
		int r;                                                            \
		if (det_acquire_begin(&op, t, kind, obj, objkind, DET_RA()) &&    \
		    op.rec->result != EOWNERDEAD) {                               \
			r = (int)op.rec->result;                                  \
		} else if ((r = try_call) == EBUSY && !det_replaying() && (may_block)) { \
			if (det_strict && !held_by_me(t, objkind, obj)) {         \
				/* wait, not runnable, until it is released */    \
				int late = 0;                                     \
				while (r == EBUSY && !late) {                     \
					late = det_ops.strict_wait_until(&op, obj, deadline, clock); \
					r = try_call;                             \
				}                                                 \
				if (r == EBUSY)                                   \
					r = ETIMEDOUT;                            \
			} else {                                                  \
				det_block(&op);                                   \
				r = block_call;                                   \
				det_unblock(&op);                                 \
			}                                                         \
		}                                                                 \
		det_acquire_end(&op, r);                                          \
		det_leave(t);                                                     \
		return r;                                                         \
	} while (0)

#define DET_RELEASE_LIKE(kind, objkind, obj, call)                                  \
	do {                                                                      \
		struct det_thread *t = det_enter();                               \
		if (!t)                                                           \
			return call;                                              \
		struct det_op op = {0};                                           \
		det_release_begin(&op, t, kind, obj, objkind, DET_RA());          \
		int r = call;                                                     \
		if (det_strict)                                                   \
			det_ops.strict_unlocked(t, obj);                              \
		det_release_end(&op, r);                                          \
		det_leave(t);                                                     \
		return r;                                                         \
	} while (0)

/* Destroying a known object is an event; an unknown one never took part. */
#define DET_DESTROY(kind, objkind, obj, call)                                       \
	do {                                                                      \
		struct det_thread *t = det_enter();                               \
		if (!t)                                                           \
			return call;                                              \
		if (!det_obj_find(obj)) {                                         \
			det_leave(t);                                             \
			return call;                                              \
		}                                                                 \
		struct det_op op = {0};                                           \
		det_release_begin(&op, t, kind, obj, objkind, DET_RA());          \
		int r = call;                                                     \
		det_obj_forget(obj, 1); /* (before the event is done) */          \
		det_release_end(&op, r);                                          \
		det_leave(t);                                                     \
		return r;                                                         \
	} while (0)

/* (Re-)initialising memory makes a new object, whatever was there before. */
#define DET_INIT(obj, call)                                                         \
	do {                                                                      \
		if (det_mode)                                                     \
			det_obj_forget(obj, 0);                                   \
		return call;                                                      \
	} while (0)

#endif /* DET_LOCKS_H */
