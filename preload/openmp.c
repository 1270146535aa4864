/*
 * preload/openmp.c - OpenMP programs built with GCC: the libgomp entry
 * points where threads meet or are handed work first come, first served.
 *
 * libgomp synchronizes with its own atomics and futex system calls, which
 * the pthread wrappers never see. What a program's result depends on is
 * visible at its entry points, which the compiler calls:
 *  - critical sections, the atomic region and omp_lock_t/omp_nest_lock_t:
 *    the order threads take them. det implements them itself, with a
 *    pthread mutex each, so they are ordered lock events (OMP_LOCK ...)
 *    like any mutex: deadlock reports, strict mode and replay treat them so.
 *  - dynamic, guided and runtime loop schedules, sections and single: which
 *    thread gets which chunk, section or single block. Each share a thread
 *    gets is an input (OMP_SHARE); replay hands the thread the recorded one.
 *
 * Rules of this file:
 *  - A lock is det's from its creation to its end: every entry point that
 *    touches it is here (start and end, init, set, unset, test, destroy),
 *    so libgomp never sees one and the layout inside omp_lock_t is det's.
 *  - A construct's setup (a *_start call) always runs in libgomp, in every
 *    mode: libgomp keeps its team's bookkeeping. Its result, and the result
 *    of every *_next call, is the recorded one in replay, where *_next does
 *    not call libgomp at all.
 *  - libgomp is found when first needed (a program may dlopen it); a
 *    program without it never calls these.
 *  - Entry points with arguments on the stack (7 or more) are thin front-ends
 *    that pack their arguments and call an entry (preload/stack.c's rule).
 *  - Not here, so not ordered: ordered loops and doacross, tasks (which thread
 *    runs a task), and inline atomics (reductions' combining step): built
 *    with det-cc, atomics are events (preload/atomics.c).
 */
#include "runtime.h"
#include "locks.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* aux of an OMP_SHARE event (include/det/events.def) */
enum omp_share { SHARE_CHUNK = 0, SHARE_CHUNK_ULL = 1, SHARE_SECTION = 2, SHARE_SINGLE = 3 };

/* ------------------------------------------------------------------ */
/* libgomp's own functions */

static void *gomp_sym(const char *name)
{
	return det_real_late(name, "libgomp.so.1");
}

/* ------------------------------------------------------------------ */
/* locks */

static pthread_mutex_t omp_critical = PTHREAD_MUTEX_INITIALIZER; /* the unnamed critical section */
static pthread_mutex_t omp_atomic = PTHREAD_MUTEX_INITIALIZER;   /* GOMP_atomic_start's region */

/* omp_lock_t is 4 bytes: it holds the index + 1 of its mutex in this table.
 * Chunks are never freed, so a reader needs no lock. */
#define LOCK_CHUNK 1024u
#define LOCK_CHUNKS 4096u
static pthread_mutex_t *lock_chunks[LOCK_CHUNKS];
static uint32_t locks_used;     /* entries handed out so far */
static uint32_t locks_free;     /* head of the free list (index + 1), threaded through the mutexes */
static pthread_mutex_t lock_table = PTHREAD_MUTEX_INITIALIZER;

static pthread_mutex_t *lock_at(uint32_t i)
{
	return &lock_chunks[i / LOCK_CHUNK][i % LOCK_CHUNK];
}

static uint32_t lock_new(int recursive)
{
	real.pthread_mutex_lock(&lock_table);
	uint32_t i;
	if (locks_free) {
		i = locks_free - 1;
		memcpy(&locks_free, lock_at(i), sizeof(locks_free));
	} else {
		i = locks_used;
		if (i / LOCK_CHUNK >= LOCK_CHUNKS)
			det_fatal("more than %u OpenMP locks", LOCK_CHUNK * LOCK_CHUNKS);
		if (!lock_chunks[i / LOCK_CHUNK]) {
			lock_chunks[i / LOCK_CHUNK] = calloc(LOCK_CHUNK, sizeof(pthread_mutex_t));
			if (!lock_chunks[i / LOCK_CHUNK])
				det_fatal("out of memory for OpenMP locks");
		}
		locks_used++;
	}
	real.pthread_mutex_unlock(&lock_table);
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	if (recursive)
		pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	real.pthread_mutex_init(lock_at(i), &a);
	pthread_mutexattr_destroy(&a);
	return i + 1;
}

static void lock_free(uint32_t id)
{
	real.pthread_mutex_lock(&lock_table);
	memcpy(lock_at(id - 1), &locks_free, sizeof(locks_free));
	locks_free = id;
	real.pthread_mutex_unlock(&lock_table);
}

/* The mutex behind an omp_lock_t or omp_nest_lock_t (its first 4 bytes). */
static pthread_mutex_t *lock_of(void *lock)
{
	uint32_t id = __atomic_load_n((uint32_t *)lock, __ATOMIC_ACQUIRE);
	if (!id || id > __atomic_load_n(&locks_used, __ATOMIC_ACQUIRE))
		det_fatal("an OpenMP lock at %p was used before omp_init_lock", lock);
	return lock_at(id - 1);
}

/* A named critical section's pointer-sized slot holds its mutex. */
static pthread_mutex_t *named_lock(void **slot)
{
	pthread_mutex_t *m = __atomic_load_n((pthread_mutex_t **)slot, __ATOMIC_ACQUIRE);
	if (m)
		return m;
	pthread_mutex_t *fresh = calloc(1, sizeof(*fresh));
	if (!fresh)
		det_fatal("out of memory for an OpenMP critical section");
	real.pthread_mutex_init(fresh, NULL);
	if (__atomic_compare_exchange_n((pthread_mutex_t **)slot, &m, fresh, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		return fresh;
	real.pthread_mutex_destroy(fresh);
	free(fresh);
	return m;
}

/* Lock m, whose object (the address the program knows it by) is key. */
static int omp_acquire(uint16_t kind, void *key, pthread_mutex_t *m)
{
	int may_block = kind != DET_EV_OMP_TESTLOCK;
	DET_LOCK_LIKE(kind, DET_OBJ_OMP_LOCK, key, real.pthread_mutex_trylock(m),
		      may_block ? real.pthread_mutex_lock(m) : real.pthread_mutex_trylock(m), may_block);
}

static int omp_release(void *key, pthread_mutex_t *m)
{
	DET_RELEASE_LIKE(DET_EV_OMP_UNLOCK, DET_OBJ_OMP_LOCK, key, real.pthread_mutex_unlock(m));
}

static int omp_destroy(void *key, pthread_mutex_t *m)
{
	DET_DESTROY(DET_EV_OMP_LOCK_DESTROY, DET_OBJ_OMP_LOCK, key, real.pthread_mutex_destroy(m));
}

static int omp_init(void *key)
{
	DET_INIT(key, 0);
}

DET_IMPL void det_impl_GOMP_critical_start(void)
{
	omp_acquire(DET_EV_OMP_LOCK, &omp_critical, &omp_critical);
}

DET_IMPL void det_impl_GOMP_critical_end(void)
{
	omp_release(&omp_critical, &omp_critical);
}

DET_IMPL void det_impl_GOMP_critical_name_start(void **slot)
{
	omp_acquire(DET_EV_OMP_LOCK, slot, named_lock(slot));
}

DET_IMPL void det_impl_GOMP_critical_name_end(void **slot)
{
	omp_release(slot, named_lock(slot));
}

DET_IMPL void det_impl_GOMP_atomic_start(void)
{
	omp_acquire(DET_EV_OMP_LOCK, &omp_atomic, &omp_atomic);
}

DET_IMPL void det_impl_GOMP_atomic_end(void)
{
	omp_release(&omp_atomic, &omp_atomic);
}

static void lock_init(void *lock, int recursive)
{
	det_init();
	__atomic_store_n((uint32_t *)lock, lock_new(recursive), __ATOMIC_RELEASE);
	omp_init(lock);
}

DET_IMPL void det_impl_omp_init_lock(omp_lock_t *lock)
{
	lock_init(lock, 0);
}

DET_IMPL void det_impl_omp_init_lock_with_hint(omp_lock_t *lock, omp_sync_hint_t hint)
{
	(void)hint;
	det_impl_omp_init_lock(lock);
}

DET_IMPL void det_impl_omp_init_nest_lock(omp_nest_lock_t *lock)
{
	lock_init(lock, 1);
}

DET_IMPL void det_impl_omp_init_nest_lock_with_hint(omp_nest_lock_t *lock, omp_sync_hint_t hint)
{
	(void)hint;
	det_impl_omp_init_nest_lock(lock);
}

DET_IMPL void det_impl_omp_destroy_lock(omp_lock_t *lock)
{
	uint32_t id = *(uint32_t *)lock;
	omp_destroy(lock, lock_of(lock));
	*(uint32_t *)lock = 0;
	lock_free(id);
}

DET_IMPL void det_impl_omp_set_lock(omp_lock_t *lock)
{
	omp_acquire(DET_EV_OMP_LOCK, lock, lock_of(lock));
}

DET_IMPL void det_impl_omp_unset_lock(omp_lock_t *lock)
{
	omp_release(lock, lock_of(lock));
}

DET_IMPL int det_impl_omp_test_lock(omp_lock_t *lock)
{
	return omp_acquire(DET_EV_OMP_TESTLOCK, lock, lock_of(lock)) == 0;
}

/* A nest lock's test returns its new nesting count (0: not taken). */
DET_IMPL int det_impl_omp_test_nest_lock(omp_nest_lock_t *lock)
{
	pthread_mutex_t *m = lock_of(lock);
	return omp_acquire(DET_EV_OMP_TESTLOCK, lock, m) == 0 ? (int)m->__data.__count : 0;
}

/* ------------------------------------------------------------------ */
/* work sharing */

/*
 * A call that hands out a share. Loop calls get pointers to chunk[] in
 * place of the program's istart and iend (which may be long or unsigned
 * long long: 8 bytes either way); the share is copied out when there is one.
 * The front-ends below run on the program's stack and fill this in; the
 * work is det_omp_share's, on the det stack.
 */
struct share_call {
	long (*call)(struct share_call *); /* the libgomp call, with args */
	const char *name;     /* the libgomp function */
	void **real_fn;       /* where it is kept once found */
	long args[10];
	int64_t chunk[2];
	void *istart, *iend;  /* the program's, or NULL */
	int setup;            /* a *_start: libgomp runs it in replay too */
};

DET_HIDDEN long det_omp_share(struct share_call *c, enum omp_share what, uint64_t ra);

DET_IMPL long det_impl_det_omp_share(struct share_call *c, enum omp_share what, uint64_t ra)
{
	if (!*c->real_fn)
		*c->real_fn = gomp_sym(c->name);
	struct det_thread *t = det_enter();
	int chunk = (what == SHARE_CHUNK || what == SHARE_CHUNK_ULL) && c->istart;
	long r;
	if (!t) {
		r = c->call(c);
	} else {
		struct det_op op = {0};
		if (det_input_begin(&op, t, DET_EV_OMP_SHARE, what, ra)) {
			if (c->setup)
				c->call(c);
			r = (long)op.rec->result;
			if (chunk && r)
				memcpy(c->chunk, det_replay_data(op.rec), sizeof(c->chunk));
		} else {
			r = c->call(c);
		}
		det_input_end(&op, r, c->chunk, chunk && r ? sizeof(c->chunk) : 0);
		det_leave(t);
	}
	if (chunk && r) {
		memcpy(c->istart, &c->chunk[0], 8);
		memcpy(c->iend, &c->chunk[1], 8);
	}
	return r;
}

/* The calls, by shape: every argument is a long or a pointer. */
typedef long L;
typedef int64_t *P;
#define A(i) c->args[i]
#define FN(...) ((bool (*)(__VA_ARGS__))*c->real_fn)
#define IS (c->istart ? &c->chunk[0] : NULL)
#define IE (c->istart ? &c->chunk[1] : NULL)
static long call_next(struct share_call *c) { return FN(P, P)(IS, IE); }
static long call5(struct share_call *c) { return FN(L, L, L, P, P)(A(0), A(1), A(2), IS, IE); }
static long call6(struct share_call *c) { return FN(L, L, L, L, P, P)(A(0), A(1), A(2), A(3), IS, IE); }
static long call7(struct share_call *c) { return FN(L, L, L, L, L, P, P)(A(0), A(1), A(2), A(3), A(4), IS, IE); }
static long call9(struct share_call *c)
{
	return FN(L, L, L, L, L, P, P, L, L)(A(0), A(1), A(2), A(3), A(4), IS, IE, A(7), A(8));
}
static long call10(struct share_call *c)
{
	return FN(L, L, L, L, L, L, P, P, L, L)(A(0), A(1), A(2), A(3), A(4), A(5), IS, IE, A(8), A(9));
}
static long call_single(struct share_call *c) { return FN(void)(); }
static long call_sections(struct share_call *c) { return ((unsigned (*)(unsigned))*c->real_fn)((unsigned)A(0)); }
static long call_sections_next(struct share_call *c) { return ((unsigned (*)(void))*c->real_fn)(); }
static long call_sections2(struct share_call *c)
{
	return ((unsigned (*)(unsigned, L, L))*c->real_fn)((unsigned)A(0), A(1), A(2));
}
#undef A
#undef FN
#undef IS
#undef IE

#define SHARE(what, caller, fn, setup_, istart_, iend_, ...)                           \
	({                                                                        \
		static void *real_fn;                                             \
		struct share_call c_ = {caller, #fn, &real_fn, {__VA_ARGS__}, {0, 0}, istart_, iend_, setup_}; \
		det_omp_share(&c_, what, (uint64_t)(uintptr_t)__builtin_return_address(0)); \
	})

/* *_next: the next chunk of the loop in progress. */
#define OMP_NEXT(fn, what)                                                         \
	EXPORT bool fn(void *istart, void *iend)                                  \
	{                                                                         \
		return SHARE(what, call_next, fn, 0, istart, iend, 0) != 0;      \
	}
/* *_start of a loop with a chunk size: (start, end, incr, chunk, istart, iend) */
#define OMP_START6(fn)                                                             \
	EXPORT bool fn(long start, long end, long incr, long chunk, long *istart, long *iend) \
	{                                                                         \
		return SHARE(SHARE_CHUNK, call6, fn, 1, istart, iend, start, end, incr, chunk) != 0; \
	}
/* *_start of a runtime schedule: (start, end, incr, istart, iend) */
#define OMP_START5(fn)                                                             \
	EXPORT bool fn(long start, long end, long incr, long *istart, long *iend)  \
	{                                                                         \
		return SHARE(SHARE_CHUNK, call5, fn, 1, istart, iend, start, end, incr) != 0; \
	}
/* unsigned long long loops: (up, start, end, incr, chunk, istart, iend) */
#define OMP_START_ULL7(fn)                                                         \
	EXPORT bool fn(bool up, unsigned long long start, unsigned long long end, unsigned long long incr, \
		       unsigned long long chunk, unsigned long long *istart, unsigned long long *iend) \
	{                                                                         \
		return SHARE(SHARE_CHUNK_ULL, call7, fn, 1, istart, iend, up, (long)start, (long)end, \
			     (long)incr, (long)chunk) != 0;                        \
	}
/* ... with a runtime schedule: (up, start, end, incr, istart, iend) */
#define OMP_START_ULL6(fn)                                                         \
	EXPORT bool fn(bool up, unsigned long long start, unsigned long long end, unsigned long long incr, \
		       unsigned long long *istart, unsigned long long *iend)         \
	{                                                                         \
		return SHARE(SHARE_CHUNK_ULL, call6, fn, 1, istart, iend, up, (long)start, (long)end, \
			     (long)incr) != 0;                                    \
	}
#include "openmp.def"
#undef OMP_NEXT
#undef OMP_START6
#undef OMP_START5
#undef OMP_START_ULL7
#undef OMP_START_ULL6

/* GCC 9's loop entry: any schedule, with reductions; istart is NULL when
 * the thread needs no chunk (a static schedule's setup). */
EXPORT bool GOMP_loop_start(long start, long end, long incr, long sched, long chunk, long *istart, long *iend,
			    uintptr_t *reductions, void **mem)
{
	return SHARE(SHARE_CHUNK, call9, GOMP_loop_start, 1, istart, iend, start, end, incr, sched, chunk, 0, 0,
		     (long)reductions, (long)mem) != 0;
}

EXPORT bool GOMP_loop_ull_start(bool up, unsigned long long start, unsigned long long end,
				unsigned long long incr, long sched, unsigned long long chunk,
				unsigned long long *istart, unsigned long long *iend, uintptr_t *reductions,
				void **mem)
{
	return SHARE(SHARE_CHUNK_ULL, call10, GOMP_loop_ull_start, 1, istart, iend, up, (long)start, (long)end,
		     (long)incr, sched, (long)chunk, 0, 0, (long)reductions, (long)mem) != 0;
}

EXPORT unsigned GOMP_sections_start(unsigned count)
{
	return (unsigned)SHARE(SHARE_SECTION, call_sections, GOMP_sections_start, 1, NULL, NULL, count);
}

EXPORT unsigned GOMP_sections2_start(unsigned count, uintptr_t *reductions, void **mem)
{
	return (unsigned)SHARE(SHARE_SECTION, call_sections2, GOMP_sections2_start, 1, NULL, NULL, count,
			       (long)reductions, (long)mem);
}

EXPORT unsigned GOMP_sections_next(void)
{
	return (unsigned)SHARE(SHARE_SECTION, call_sections_next, GOMP_sections_next, 0, NULL, NULL, 0);
}

EXPORT bool GOMP_single_start(void)
{
	return SHARE(SHARE_SINGLE, call_single, GOMP_single_start, 1, NULL, NULL, 0) != 0;
}
