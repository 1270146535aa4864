/*
 * preload/random.c - randomness: getrandom and friends, recorded and
 * returned in replay.
 *
 * Rules of this file:
 *  - Those of preload/inputs.c, which holds what every input wrapper shares
 *    (preload/inputs.h): this file is one source of inputs, split out of it.
 */
#include "inputs.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <sys/signalfd.h>
#include <sys/inotify.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* randomness */

static ssize_t det_getrandom(struct det_thread *t, void *buf, size_t n, unsigned flags, int entropy, uint64_t ra)
{
	struct det_op op = {0};
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_GETRANDOM, (uint32_t)entropy, ra)) {
		res = op.rec->result;
		if (res > 0)
			memcpy(buf, det_replay_data(op.rec), (size_t)res < n ? (size_t)res : n);
	} else if (entropy) {
		res = real.getentropy(buf, n) == 0 ? (int64_t)n : -(int64_t)errno;
	} else {
		res = res_of(real.getrandom(buf, n, flags));
	}
	det_input_end(&op, res, buf, res > 0 ? (uint32_t)res : 0);
	return ret_of(res);
}

DET_IMPL ssize_t det_impl_getrandom(void *buf, size_t n, unsigned int flags)
{
	DET_ENTER(t);
	if (!t)
		return real.getrandom(buf, n, flags);
	ssize_t r = det_getrandom(t, buf, n, flags, 0, DET_RA());
	int e = errno;
	det_leave(t);
	errno = e;
	return r;
}

/* std::random_device (libstdc++, loaded with the program or later): its
 * values come from rdrand or rdseed where the CPU has them, which no
 * preload sees, so each value it hands out is an input of det's. */
static void *libstdcxx_fn(const char *name, void **cache)
{
	if (!*cache)
		*cache = det_real_late(name, "libstdc++.so.6");
	return *cache;
}

/* The value fn gives for self (get calls it): libstdc++'s member, or
 * libc's arc4random family, as the recording's input. */
static void random_value(struct det_thread *t, uint32_t aux, void *value, uint32_t size,
			 void (*get)(void *fn, void *self, void *value), void *fn, void *self, uint64_t ra)
{
	struct det_op op = {0};
	if (det_input_begin(&op, t, DET_EV_GETRANDOM, aux, ra)) {
		if (op.rec->result != size)
			det_ops.diverge(t, DET_DIV_RESULT, DET_EV_GETRANDOM, NULL, ra,
					"a random value of another size than recorded");
		memcpy(value, det_replay_data(op.rec), size);
	} else {
		get(fn, self, value);
	}
	det_input_end(&op, size, value, size);
}

static void get_unsigned(void *fn, void *self, void *value)
{
	*(unsigned *)value = ((unsigned (*)(void *))fn)(self);
}

static void get_double(void *fn, void *self, void *value)
{
	*(double *)value = ((double (*)(const void *))fn)(self);
}

static unsigned device_getval(void *self, const char *name, void **cache)
{
	void *fn = libstdcxx_fn(name, cache);
	DET_ENTER(t);
	unsigned v;
	if (!t)
		return ((unsigned (*)(void *))fn)(self);
	random_value(t, DET_AUX_GETRANDOM_RANDOM_DEVICE, &v, sizeof(v), get_unsigned, fn, self, DET_RA());
	det_leave(t);
	return v;
}

DET_IMPL unsigned det_impl__ZNSt13random_device9_M_getvalEv(void *self)
{
	static void *fn;
	return device_getval(self, "_ZNSt13random_device9_M_getvalEv", &fn);
}

DET_IMPL unsigned det_impl__ZNSt13random_device16_M_getval_pretr1Ev(void *self)
{
	static void *fn;
	return device_getval(self, "_ZNSt13random_device16_M_getval_pretr1Ev", &fn);
}

/* glibc's arc4random family (2.36) takes its bytes from the kernel with
 * libc's internal getrandom, which no preload sees. */
static void *libc_fn(const char *name, void **cache)
{
	if (!*cache)
		*cache = det_real_late(name, "libc.so.6");
	return *cache;
}

static void get_arc4random(void *fn, void *self, void *value)
{
	(void)self;
	*(uint32_t *)value = ((uint32_t (*)(void))fn)();
}

static void get_arc4random_uniform(void *fn, void *self, void *value)
{
	*(uint32_t *)value = ((uint32_t (*)(uint32_t))fn)((uint32_t)(uintptr_t)self);
}

static void get_arc4random_buf(void *fn, void *self, void *value)
{
	((void (*)(void *, size_t))fn)(value, (size_t)(uintptr_t)self);
}

DET_IMPL uint32_t det_impl_arc4random(void)
{
	static void *cache;
	void *fn = libc_fn("arc4random", &cache);
	DET_ENTER(t);
	uint32_t v;
	if (!t)
		return ((uint32_t (*)(void))fn)();
	random_value(t, DET_AUX_GETRANDOM_ARC4RANDOM, &v, sizeof(v), get_arc4random, fn, NULL, DET_RA());
	det_leave(t);
	return v;
}

DET_IMPL uint32_t det_impl_arc4random_uniform(uint32_t upper)
{
	static void *cache;
	void *fn = libc_fn("arc4random_uniform", &cache);
	DET_ENTER(t);
	uint32_t v;
	if (!t)
		return ((uint32_t (*)(uint32_t))fn)(upper);
	random_value(t, DET_AUX_GETRANDOM_ARC4RANDOM, &v, sizeof(v), get_arc4random_uniform, fn,
		     (void *)(uintptr_t)upper, DET_RA());
	det_leave(t);
	return v;
}

DET_IMPL void det_impl_arc4random_buf(void *buf, size_t n)
{
	static void *cache;
	void *fn = libc_fn("arc4random_buf", &cache);
	DET_ENTER(t);
	if (!t || n > UINT32_MAX) { /* (a record's data holds 4 GiB at most) */
		((void (*)(void *, size_t))fn)(buf, n);
		if (t)
			det_leave(t);
		return;
	}
	random_value(t, DET_AUX_GETRANDOM_ARC4RANDOM, buf, (uint32_t)n, get_arc4random_buf, fn, (void *)(uintptr_t)n,
		     DET_RA());
	det_leave(t);
}

/* entropy() returns a double, in a register det's entry stubs clear on
 * the way out: a front-end, as printf's, calls an entry that stores it. */
DET_HIDDEN void det_device_entropy(const void *self, double *value, uint64_t ra);

DET_IMPL void det_impl_det_device_entropy(const void *self, double *value, uint64_t ra)
{
	static void *cache;
	void *fn = libstdcxx_fn("_ZNKSt13random_device13_M_getentropyEv", &cache);
	DET_ENTER(t);
	if (!t) {
		get_double(fn, (void *)(uintptr_t)self, value);
		return;
	}
	random_value(t, DET_AUX_GETRANDOM_DEVICE_ENTROPY, value, sizeof(*value), get_double, fn,
		     (void *)(uintptr_t)self, ra);
	det_leave(t);
}

__attribute__((visibility("default"))) double _ZNKSt13random_device13_M_getentropyEv(const void *self)
{
	double v;
	det_device_entropy(self, &v, (uint64_t)(uintptr_t)__builtin_return_address(0));
	return v;
}

DET_IMPL int det_impl_getentropy(void *buf, size_t n)
{
	DET_ENTER(t);
	if (!t)
		return real.getentropy(buf, n);
	ssize_t r = det_getrandom(t, buf, n, 0, 1, DET_RA());
	int e = errno;
	det_leave(t);
	errno = e;
	return r < 0 ? -1 : 0;
}
