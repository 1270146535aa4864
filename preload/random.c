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

/* The value fn gives for self (get calls it), as the recording's input:
 * a member of std::random_device (libstdc++, loaded with the program or
 * later: its values come from rdrand or rdseed where the CPU has them,
 * which no preload sees), or libc's arc4random family. */
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
	void *fn = det_real_late_once(cache, name, "libstdc++.so.6");
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
	void *fn = det_real_late_once(&cache, "arc4random", "libc.so.6");
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
	void *fn = det_real_late_once(&cache, "arc4random_uniform", "libc.so.6");
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
	void *fn = det_real_late_once(&cache, "arc4random_buf", "libc.so.6");
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

/* Temporary names (mktemp, tmpnam, tmpnam_r, tempnam): glibc draws them
 * from its internal randomness and checks them with its internal lstat.
 * The name is the input: make() writes it into buf (cap bytes) and says
 * its length, or -errno; replay gives the recorded one. */
static int64_t temp_name(struct det_thread *t, uint64_t ra, char *buf, size_t cap,
			 int64_t (*make)(void *ctx, char *buf, size_t cap), void *ctx)
{
	struct det_op op = {0};
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_GETRANDOM, DET_AUX_GETRANDOM_TEMP_NAME, ra)) {
		res = op.rec->result;
		if (res >= (int64_t)cap)
			det_ops.diverge(t, DET_DIV_RESULT, DET_EV_GETRANDOM, NULL, ra,
					"a temporary name longer than the buffer it goes to");
		if (res >= 0) {
			memcpy(buf, det_replay_data(op.rec), (size_t)res);
			buf[res] = 0;
		}
	} else {
		res = make(ctx, buf, cap);
	}
	det_input_end(&op, res, buf, res > 0 ? (uint32_t)res : 0);
	if (res < 0)
		errno = (int)-res;
	return res;
}

static int64_t make_mktemp(void *ctx, char *buf, size_t cap)
{
	(void)ctx;
	(void)cap;
	real.mktemp(buf);
	return buf[0] ? (int64_t)strlen(buf) : -(int64_t)errno;
}

DET_IMPL char *det_impl_mktemp(char *tpl)
{
	DET_ENTER(t);
	if (!t)
		return real.mktemp(tpl);
	if (temp_name(t, DET_RA(), tpl, strlen(tpl) + 1, make_mktemp, NULL) < 0)
		tpl[0] = 0;
	int e = errno;
	det_leave(t);
	errno = e;
	return tpl;
}

static int64_t make_tmpnam(void *ctx, char *buf, size_t cap)
{
	(void)cap;
	char *r = ctx ? real.tmpnam_r(buf) : real.tmpnam(buf);
	return r ? (int64_t)strlen(buf) : -(int64_t)errno;
}

static char *det_tmpnam(char *s, int reentrant, uint64_t ra)
{
	static char own[L_tmpnam]; /* tmpnam(NULL)'s buffer */
	DET_ENTER(t);
	if (!t)
		return reentrant ? real.tmpnam_r(s) : real.tmpnam(s);
	char *buf = s ? s : own;
	char *r = temp_name(t, ra, buf, L_tmpnam, make_tmpnam, reentrant ? buf : NULL) < 0 ? NULL : buf;
	int e = errno;
	det_leave(t);
	errno = e;
	return r;
}

DET_IMPL char *det_impl_tmpnam(char *s)
{
	return det_tmpnam(s, 0, DET_RA());
}

DET_IMPL char *det_impl_tmpnam_r(char *s)
{
	return s ? det_tmpnam(s, 1, DET_RA()) : NULL;
}

struct tempnam_args {
	const char *dir, *pfx;
};

static int64_t make_tempnam(void *ctx, char *buf, size_t cap)
{
	struct tempnam_args *a = ctx;
	char *r = real.tempnam(a->dir, a->pfx);
	if (!r)
		return -(int64_t)errno;
	size_t n = strlen(r);
	if (n >= cap) {
		free(r);
		return -ENAMETOOLONG;
	}
	memcpy(buf, r, n + 1);
	free(r);
	return (int64_t)n;
}

DET_IMPL char *det_impl_tempnam(const char *dir, const char *pfx)
{
	DET_ENTER(t);
	if (!t)
		return real.tempnam(dir, pfx);
	char buf[PATH_MAX];
	struct tempnam_args a = {dir, pfx};
	char *r = temp_name(t, DET_RA(), buf, sizeof(buf), make_tempnam, &a) < 0 ? NULL : strdup(buf);
	int e = errno;
	det_leave(t);
	errno = e;
	return r;
}

/* entropy() returns a double, in a register det's entry stubs clear on
 * the way out: a front-end, as printf's, calls an entry that stores it. */
DET_HIDDEN void det_device_entropy(const void *self, double *value, uint64_t ra);

DET_IMPL void det_impl_det_device_entropy(const void *self, double *value, uint64_t ra)
{
	static void *cache;
	void *fn = det_real_late_once(&cache, "_ZNKSt13random_device13_M_getentropyEv", "libstdc++.so.6");
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
