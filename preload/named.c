/*
 * preload/named.c - POSIX named objects other processes share: named
 * semaphores (sem_open) and the unlink of any POSIX name (sem_unlink,
 * mq_unlink, shm_unlink). The recording takes, posts and removes them,
 * so by replay they hold other values or are gone.
 *
 * Rules of this file:
 *  - Those of preload/inputs.c, which holds what every input wrapper shares
 *    (preload/inputs.h): this file is one source of inputs, split out of it.
 *  - A named semaphore is ordered like any semaphore (preload/sync.c), but
 *    its waits and posts are not performed in replay: their recorded
 *    results return, as for a message queue's receives and sends
 *    (msgqueues.c). Replay's sem_open therefore hands out a stand-in of its
 *    own, one per name as glibc does, and sem_getvalue and sem_close on it
 *    never reach libc.
 *  - An unlink of a name is an input: its result is recorded, and replay
 *    removes nothing (the name is the outside world's by then).
 */
#include "inputs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>

/* The named semaphores this process has open: a few, looked up by every
 * semaphore call (none open: one load). */
#define NAMED_MAX 64
static struct named_sem {
	_Atomic(sem_t *) sem;
	uint64_t name_hash; /* replay: the stand-in for this name */
	int opens;          /* sem_open calls not yet closed (glibc counts them too) */
} named[NAMED_MAX];
static _Atomic int named_open;
static _Atomic int named_lock;

static void lock_named(void)
{
	det_spin_lock(&named_lock);
}

static void unlock_named(void)
{
	det_spin_unlock(&named_lock);
}

static struct named_sem *named_of(const sem_t *s)
{
	for (int i = 0; i < NAMED_MAX; i++)
		if (atomic_load_explicit(&named[i].sem, memory_order_acquire) == s)
			return &named[i];
	return NULL;
}

int det_sem_named(const sem_t *s)
{
	return atomic_load_explicit(&named_open, memory_order_relaxed) && s && named_of(s);
}

static uint64_t hash_name(const char *name)
{
	struct iovec iov = {(void *)name, strlen(name)};
	return hash_iov(&iov, 1, iov.iov_len);
}

/* Note one more open of s; in replay, the stand-in already open for that
 * name, if any. Returns s, or the stand-in to use instead. */
static sem_t *note_open(sem_t *s, uint64_t name_hash)
{
	lock_named();
	struct named_sem *free_slot = NULL;
	for (int i = 0; i < NAMED_MAX; i++) {
		sem_t *have = atomic_load(&named[i].sem);
		if (have && (have == s || (!s && named[i].name_hash == name_hash))) {
			named[i].opens++;
			unlock_named();
			return have;
		}
		if (!have && !free_slot)
			free_slot = &named[i];
	}
	if (!s) { /* replay: a page of its own, as glibc maps one per name */
		long p = det_sys(SYS_mmap, 0, sizeof(sem_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		s = p < 0 && p > -4096 ? NULL : (sem_t *)p;
		if (s) /* process-shared, as a named one is: one object across the processes (det_pshared) */
			real.sem_init(s, 1, 0);
	}
	if (s && free_slot) {
		free_slot->name_hash = name_hash;
		free_slot->opens = 1;
		atomic_store(&free_slot->sem, s);
		atomic_fetch_add(&named_open, 1);
	} else if (s) {
		det_fatal("more than %d named semaphores open at once", NAMED_MAX);
	}
	unlock_named();
	return s;
}

/* One close of s; 1 if it was the last and s is a replay stand-in to unmap. */
static int note_close(struct named_sem *n)
{
	lock_named();
	int last = --n->opens == 0;
	if (last) {
		atomic_store(&n->sem, NULL);
		atomic_fetch_sub(&named_open, 1);
	}
	unlock_named();
	return last;
}

DET_IMPL sem_t *det_impl_sem_open(const char *name, int oflag, ...)
{
	mode_t mode = 0;
	unsigned value = 0;
	if (oflag & O_CREAT) {
		va_list ap;
		va_start(ap, oflag);
		mode = va_arg(ap, mode_t);
		value = va_arg(ap, unsigned);
		va_end(ap);
	}
	struct det_thread *t = det_enter();
	if (!t)
		return real.sem_open(name, oflag, mode, value);
	struct det_op op = {0};
	sem_t *s;
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_SEM_OPEN, 0, DET_RA())) {
		res = op.rec->result;
		s = res == 0 ? note_open(NULL, hash_name(name)) : SEM_FAILED;
		if (!s)
			det_fatal("no memory for a stand-in of named semaphore %s", name);
	} else {
		s = real.sem_open(name, oflag, mode, value);
		res = s == SEM_FAILED ? -(int64_t)errno : 0;
		if (s != SEM_FAILED)
			note_open(s, hash_name(name));
	}
	det_input_end(&op, res, NULL, 0);
	det_leave(t);
	if (res < 0)
		errno = (int)-res;
	return s;
}

DET_IMPL int det_impl_sem_close(sem_t *s)
{
	struct named_sem *n = atomic_load(&named_open) ? named_of(s) : NULL;
	if (!n)
		return real.sem_close(s);
	if (det_hdr && det_mode == DET_MODE_REPLAY) {
		if (note_close(n))
			det_sys(SYS_munmap, (long)s, sizeof(sem_t), 0, 0, 0, 0);
		return 0;
	}
	int r = real.sem_close(s);
	if (r == 0)
		note_close(n);
	return r;
}

DET_IMPL int det_impl_sem_getvalue(sem_t *s, int *value)
{
	struct det_thread *t = det_sem_named(s) ? det_enter() : NULL;
	if (!t)
		return real.sem_getvalue(s, value);
	struct det_op op = {0};
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_SEM_VALUE, 0, DET_RA())) {
		res = op.rec->result;
	} else {
		int v = 0;
		res = real.sem_getvalue(s, &v) == 0 ? v : -(int64_t)errno;
	}
	det_input_end(&op, res, NULL, 0);
	det_leave(t);
	if (res >= 0)
		*value = (int)res;
	return (int)ret_of(res < 0 ? res : 0);
}

enum { NAME_SEM = 0, NAME_MQ = 1, NAME_SHM = 2 };

static int unlink_input(uint32_t aux, const char *name, int (*perform)(const char *), uint64_t ra)
{
	struct det_thread *t = det_enter();
	if (!t)
		return perform(name);
	struct det_op op = {0};
	int64_t res = det_input_begin(&op, t, DET_EV_NAME_UNLINK, aux, ra) ? op.rec->result : res_of(perform(name));
	det_input_end(&op, res, NULL, 0);
	det_leave(t);
	return (int)ret_of(res);
}

DET_IMPL int det_impl_sem_unlink(const char *name)
{
	return unlink_input(NAME_SEM, name, real.sem_unlink, DET_RA());
}

DET_IMPL int det_impl_mq_unlink(const char *name)
{
	return unlink_input(NAME_MQ, name, real.mq_unlink, DET_RA());
}

DET_IMPL int det_impl_shm_unlink(const char *name)
{
	return unlink_input(NAME_SHM, name, real.shm_unlink, DET_RA());
}
