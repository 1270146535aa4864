/*
 * preload/file_locks.c - advisory file locks: flock, lockf, and fcntl's
 * record locks (F_SETLK, F_SETLKW) and open-file-description locks
 * (F_OFD_SETLK, F_OFD_SETLKW). Which process gets a file's lock first is an
 * order between them (a lock file, SQLite's database): taking one is an
 * acquire event, letting it go a release, on one object per file.
 *
 * Rules of this file:
 *  - A file's object is keyed by its device and inode, hashed into a range
 *    no user address has (bit 47), and is process-shared: every process of
 *    the program finds the same object (det_pshared).
 *  - Record: a blocking take waits in the kernel, marked blocked (strict
 *    mode gives the turn up meanwhile); a try that failed is an event with
 *    its error. Replay: a take that failed in the recording returns its
 *    error without trying; one that succeeded waits for its turn, then
 *    takes the lock for real, blocking (the holder lets go in its own time,
 *    by a later event or a close, which locks do not see).
 *  - Queries (F_GETLK, lockf F_TEST) are the kernel's (pids.c translates
 *    F_GETLK's holder). A descriptor that is no file (fstat fails) is the
 *    kernel's too.
 */
#include "runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* aux of FLOCK_TAKE and FLOCK_DROP: the call */
enum lock_call { LC_FLOCK = 0, LC_LOCKF = 1, LC_FCNTL = 2 };

struct lock_args {
	int fd;
	int cmd;  /* flock's operation, lockf's command, fcntl's command */
	long arg; /* lockf's length, fcntl's struct flock * */
	enum lock_call call;
};

static long perform(const struct lock_args *a)
{
	switch (a->call) {
	case LC_FLOCK:
		return det_sys(SYS_flock, a->fd, a->cmd, 0, 0, 0, 0);
	case LC_LOCKF: {
		/* (glibc's lockf is fcntl's F_SETLK(W) on [offset, offset + len)) */
		struct flock fl = {.l_type = (short)(a->cmd == F_ULOCK ? F_UNLCK : F_WRLCK), .l_whence = SEEK_CUR,
				   .l_len = (off_t)a->arg};
		long r = det_sys(SYS_fcntl, a->fd, a->cmd == F_LOCK ? F_SETLKW : F_SETLK, (long)&fl, 0, 0, 0);
		return r == -EAGAIN && a->cmd == F_TLOCK ? -EACCES : r;
	}
	default:
		return det_sys(SYS_fcntl, a->fd, a->cmd, a->arg, 0, 0, 0);
	}
}

/* The blocking form of a take (replay takes what the recording took). */
static struct lock_args blocking(const struct lock_args *a)
{
	struct lock_args b = *a;
	if (a->call == LC_FLOCK)
		b.cmd &= ~LOCK_NB;
	else if (a->call == LC_LOCKF)
		b.cmd = F_LOCK;
	else
		b.cmd = a->cmd == F_SETLK ? F_SETLKW : a->cmd == F_OFD_SETLK ? F_OFD_SETLKW : a->cmd;
	return b;
}

static const void *file_key(int fd)
{
	struct stat st;
	if (det_sys(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) != 0)
		return NULL;
	uint64_t h = (uint64_t)st.st_dev * 0x9E3779B97F4A7C15ull ^ (uint64_t)st.st_ino * 0xC2B2AE3D27D4EB4Full;
	return (const void *)(uintptr_t)(0x800000000000ull | (h & 0x7fffffffffffull));
}

static long lock_event(const struct lock_args *a, int take, int waits, uint64_t ra)
{
	struct det_thread *t = det_enter();
	const void *key = t ? file_key(a->fd) : NULL;
	if (!key) {
		if (t)
			det_leave(t);
		return perform(a);
	}
	struct det_op op = {.aux = (uint32_t)a->call};
	long r;
	if (!take) {
		det_release_begin(&op, t, DET_EV_FLOCK_DROP, key, DET_OBJ_FLOCK, ra);
		r = perform(a);
		if (det_replaying())
			r = op.rec->result;
		det_release_end(&op, r);
	} else {
		if (det_acquire_begin(&op, t, DET_EV_FLOCK_TAKE, key, DET_OBJ_FLOCK, ra)) {
			r = op.rec->result; /* (replay: it failed in the recording, untried) */
		} else if (det_replaying()) {
			struct lock_args b = blocking(a);
			do
				r = perform(&b);
			while (r == -EINTR);
		} else {
			r = waits ? BLOCKING(&op, perform(a)) : perform(a);
		}
		det_acquire_end(&op, r);
	}
	det_leave(t);
	return r;
}

DET_IMPL int det_impl_flock(int fd, int operation)
{
	det_init();
	if (!det_mode)
		return real.flock(fd, operation);
	struct lock_args a = {fd, operation, 0, LC_FLOCK};
	int take = !(operation & LOCK_UN);
	return (int)ret_of(lock_event(&a, take, take && !(operation & LOCK_NB), DET_RA()));
}

DET_IMPL int det_impl_lockf(int fd, int cmd, off_t len)
{
	det_init();
	if (!det_mode || (cmd != F_LOCK && cmd != F_TLOCK && cmd != F_ULOCK)) /* (F_TEST, or EINVAL) */
		return real.lockf(fd, cmd, len);
	struct lock_args a = {fd, cmd, (long)len, LC_LOCKF};
	return (int)ret_of(lock_event(&a, cmd != F_ULOCK, cmd == F_LOCK, DET_RA()));
}

int det_fcntl_lock_cmd(int cmd)
{
	return cmd == F_SETLK || cmd == F_SETLKW || cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW;
}

long det_fcntl_lock(int fd, int cmd, long arg, uint64_t ra)
{
	const struct flock *fl = (const struct flock *)arg;
	struct lock_args a = {fd, cmd, arg, LC_FCNTL};
	if (!fl)
		return perform(&a); /* (EFAULT) */
	int take = fl->l_type != F_UNLCK;
	return lock_event(&a, take, take && (cmd == F_SETLKW || cmd == F_OFD_SETLKW), ra);
}
