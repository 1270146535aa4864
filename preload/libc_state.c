/*
 * preload/libc_state.c - libc functions on state libc keeps for the whole
 * process behind a lock of its own: rand's and random's generator,
 * drand48's. Threads that draw from one generator get each other's
 * numbers in whatever order they took libc's lock, which det cannot see:
 * a replay drew them in another order (threads "picking random work" is
 * how many test programs are written).
 *
 * Rules of this file:
 *  - Once the process has made a thread (threads.h det_threads_made), each
 *    call takes a mutex of det's for its generator around libc's call:
 *    pthread_mutex_lock and _unlock events, with their recorded order in
 *    every mode. Before the first thread, calls pass through (nothing to
 *    order; a single-threaded program pays nothing).
 *  - The mutex is taken through det's own pthread_mutex_lock
 *    implementation, already on det's stack, so the events name the
 *    program's call site.
 *  - Functions that return a double (drand48) are front-ends, as printf's:
 *    det's entry stubs clear the floating-point registers on the way out.
 */
#include "threads.h"
#include "entries.h"

#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t rand_generator = PTHREAD_MUTEX_INITIALIZER;   /* rand, random, srand, ... */
static pthread_mutex_t drand48_generator = PTHREAD_MUTEX_INITIALIZER; /* drand48, lrand48, ... */

/* Whether the calls on a generator are ordered now (its mutex taken). */
static int ordered(void)
{
	struct det_thread *t = det_enter();
	if (!t)
		return 0;
	det_leave(t);
	return atomic_load_explicit(&det_threads_made, memory_order_relaxed);
}

#define DET_ON_GENERATOR(lock, call)                                              \
	do {                                                                      \
		if (!ordered())                                                   \
			return call;                                              \
		det_impl_pthread_mutex_lock(&(lock));                             \
		__typeof__(call) r_ = (call);                                     \
		det_impl_pthread_mutex_unlock(&(lock));                           \
		return r_;                                                        \
	} while (0)

#define DET_ON_GENERATOR_VOID(lock, call)                                         \
	do {                                                                      \
		if (!ordered()) {                                                 \
			call;                                                     \
			return;                                                   \
		}                                                                 \
		det_impl_pthread_mutex_lock(&(lock));                             \
		call;                                                             \
		det_impl_pthread_mutex_unlock(&(lock));                           \
	} while (0)

DET_IMPL int det_impl_rand(void)
{
	DET_ON_GENERATOR(rand_generator, real.rand());
}

DET_IMPL long det_impl_random(void)
{
	DET_ON_GENERATOR(rand_generator, real.random());
}

DET_IMPL void det_impl_srand(unsigned seed)
{
	DET_ON_GENERATOR_VOID(rand_generator, real.srand(seed));
}

DET_IMPL void det_impl_srandom(unsigned seed)
{
	DET_ON_GENERATOR_VOID(rand_generator, real.srandom(seed));
}

DET_IMPL char *det_impl_initstate(unsigned seed, char *state, size_t n)
{
	DET_ON_GENERATOR(rand_generator, real.initstate(seed, state, n));
}

DET_IMPL char *det_impl_setstate(char *state)
{
	DET_ON_GENERATOR(rand_generator, real.setstate(state));
}

DET_IMPL long det_impl_lrand48(void)
{
	DET_ON_GENERATOR(drand48_generator, real.lrand48());
}

DET_IMPL long det_impl_mrand48(void)
{
	DET_ON_GENERATOR(drand48_generator, real.mrand48());
}

DET_IMPL void det_impl_srand48(long seed)
{
	DET_ON_GENERATOR_VOID(drand48_generator, real.srand48(seed));
}

DET_IMPL unsigned short *det_impl_seed48(unsigned short seed[3])
{
	DET_ON_GENERATOR(drand48_generator, real.seed48(seed));
}

DET_IMPL void det_impl_lcong48(unsigned short param[7])
{
	DET_ON_GENERATOR_VOID(drand48_generator, real.lcong48(param));
}

DET_HIDDEN void det_drand48(double *value);

DET_IMPL void det_impl_det_drand48(double *value)
{
	DET_ON_GENERATOR_VOID(drand48_generator, *value = real.drand48());
}

EXPORT double drand48(void)
{
	double v;
	det_drand48(&v);
	return v;
}
