/*
 * preload/fds.c - file descriptors: what each one is (its class, decided
 * once), the calls that make new ones (sockets, pipes, opens, message
 * queues, accepts; each an ordered event whose number replay restores),
 * and the calls that keep the class table right when numbers are reused
 * (close, dup, kernel objects, fopen/fclose).
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
#include <mqueue.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* what an fd is */

#define FD_LIMIT 65536
static _Atomic uint8_t fd_classes[FD_LIMIT];

/* The eventfds the program made (reads.c drains them in replay). */
static _Atomic uint64_t eventfds[FD_LIMIT / 64];

int det_fd_is_eventfd(int fd)
{
	return fd >= 0 && fd < FD_LIMIT && (atomic_load_explicit(&eventfds[fd / 64], memory_order_relaxed) >> (fd % 64)) & 1;
}

void fd_set_class(int fd, enum fd_class c)
{
	if (fd >= 0 && fd < FD_LIMIT) {
		atomic_store_explicit(&fd_classes[fd], (uint8_t)c, memory_order_relaxed);
		atomic_fetch_and_explicit(&eventfds[fd / 64], ~(1ull << (fd % 64)), memory_order_relaxed);
	}
}

/* Pipes and socket pairs the program made, by inode, in the region: a
 * child that inherits one (through fork, and exec, which forgets the
 * table above) still knows it as internal. */
uint64_t pipe_key(const struct stat *st)
{
	/* odd, so never 0 (an empty entry); the inode shifted, not or'ed with
	 * 1: pipes made one after another have inodes N and N + 1, and
	 * `key | 1` made them one (a multiprocessing pool's two queues; an
	 * outside stdout next to the program's first pipe passed for its own) */
	return ((uint64_t)st->st_dev << 44) ^ ((uint64_t)st->st_ino << 1) ^ 1;
}

static void remember_pipe(int fd)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return;
	_Atomic uint64_t *tab = (_Atomic uint64_t *)((char *)det_hdr + det_hdr->pipes_off);
	det_set_insert(tab, det_hdr->pipes_cap - 1, pipe_key(&st));
}

static int known_pipe(const struct stat *st)
{
	uint64_t key = pipe_key(st), mask = det_hdr->pipes_cap - 1;
	_Atomic uint64_t *tab = (_Atomic uint64_t *)((char *)det_hdr + det_hdr->pipes_off);
	for (uint64_t i = det_obj_hash(key) & mask, n = 0; n <= mask; i = (i + 1) & mask, n++) {
		uint64_t cur = atomic_load(&tab[i]);
		if (cur == key)
			return 1;
		if (!cur)
			return 0;
	}
	return 0;
}

/* The pipe (or, for a terminal, the pty) det fills with the recorded stdin
 * is read for real in replay, by whichever of the program's processes
 * reads it. */
void det_note_stdin(void)
{
	struct stat st;
	if ((det_hdr->flags & DET_F_STDIN_FED) && fstat(0, &st) == 0 &&
	    (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)))
		remember_pipe(0);
}

/* A file system whose files the kernel makes up as they are read (procfs,
 * sysfs, cgroups, debugfs...): what they say changes between runs, so they
 * are recorded like a device rather than re-read. */
static int live_fs(int fd, struct statfs *fs)
{
	if (det_sys(SYS_fstatfs, fd, (long)fs, 0, 0, 0, 0) != 0)
		return 0;
	switch ((unsigned long)fs->f_type) {
	case PROC_SUPER_MAGIC:
	case SYSFS_MAGIC:
	case CGROUP_SUPER_MAGIC:
	case CGROUP2_SUPER_MAGIC:
	case DEBUGFS_MAGIC:
	case TRACEFS_MAGIC:
	case SECURITYFS_MAGIC:
	case BPF_FS_MAGIC:
		return 1;
	default:
		return 0;
	}
}

enum fd_class fd_class(int fd)
{
	if (fd < 0 || fd >= FD_LIMIT)
		return FDC_EXTERNAL;
	uint8_t c = atomic_load_explicit(&fd_classes[fd], memory_order_relaxed);
	if (det_likely(c))
		return (enum fd_class)c;
	struct stat st;
	if (fstat(fd, &st) != 0)
		return FDC_OTHER; /* EBADF: the call will fail the same way in replay */
	struct statfs fs;
	if ((S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) && !live_fs(fd, &fs))
		c = FDC_FILE;
	else if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
		c = FDC_EXTERNAL; /* /proc/meminfo changes by the second */
	else if (S_ISDIR(st.st_mode))
		c = FDC_OTHER;
	else if ((S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode)) && known_pipe(&st))
		c = FDC_INTERNAL;
	else if (S_ISSOCK(st.st_mode))
		c = FDC_SOCKET;
	else
		c = FDC_EXTERNAL;
	fd_set_class(fd, (enum fd_class)c);
	return (enum fd_class)c;
}

/*
 * New file descriptors. The kernel gives the lowest free number, so threads
 * that open at the same time race for numbers: each open is an ordered
 * event, and replay checks (or, if it can, restores) the recorded number.
 */
int move_fd(int fd, int want)
{
	if (fd == want)
		return fd;
	/* Still held: its holder had closed it by this point of the recording,
	 * but a close is no event, so another thread's close between its
	 * events may come a little later in replay. Wait for it, a while (a
	 * holder that waits for a turn after this one never comes: diverged).
	 * EBUSY: another thread's call that makes a descriptor (a stand-in's
	 * socketpair, an input's open) has taken the number and not yet put
	 * its file there; it moves on at once, so wait for that too (memcached's
	 * relaxed replay failed an accept 1 in 8 under load). */
	int cloexec = fcntl(fd, F_GETFD) & FD_CLOEXEC;
	int r = -1;
	for (long nap = NAP_FIRST, waited = 0; waited <= 2000000000L; waited += nap, nap_longer(&nap))
		if (fcntl(want, F_GETFD) == -1 &&
		    ((r = real.dup3(fd, want, cloexec ? O_CLOEXEC : 0)) >= 0 || errno != EBUSY))
			break;
	real.close(fd);
	return r;
}

/* result: the fd, or for a pair fds[0] | fds[1] << 32; -errno on failure.
 * `waits` (NULL: none) marks a call that waits for another process (an open
 * of a FIFO waits for its other end). Strict recording gives up the turn in
 * it, as in a read. Replay performs it before its turn (after the hand-over
 * a strict recording made there), since the other process's open may come
 * after this one in the order and waits for this one in the kernel;
 * waits(ctx, fd) undoes it when the recording's call failed. (Opens are
 * ordered for the numbers the threads of one process race for; this one
 * takes its recorded number at its turn.) */
static int64_t fd_event(uint32_t aux, uint64_t ra, int64_t (*perform)(void *), void *ctx, int pair,
			enum fd_class cls, void (*waits)(void *ctx, int64_t fd))
{
	DET_ENTER(t);
	if (!t)
		return perform(ctx);
	struct det_op op = {.aux = aux};
	int performed = waits && det_replaying();
	int64_t res = 0;
	if (performed) {
		det_ops.replay_next_kind(t, DET_EV_FD_OPEN); /* (takes a strict BLOCK's turn) */
		res = perform(ctx);
	}
	det_acquire_begin(&op, t, DET_EV_FD_OPEN, NULL, DET_OBJ_NONE, ra);
	if (det_replaying() && op.rec->result < 0) {
		if (performed && res >= 0)
			waits(ctx, res);
		res = op.rec->result; /* it failed in the recording */
	} else {
		if (!performed)
			res = waits ? BLOCKING(&op, perform(ctx)) : perform(ctx);
		if (det_replaying() && res >= 0 && res != op.rec->result) {
			int64_t want = op.rec->result;
			int a = move_fd((int)(res & 0xffffffff), (int)(want & 0xffffffff));
			int b = pair ? move_fd((int)(res >> 32), (int)(want >> 32)) : 0;
			if (a < 0 || b < 0)
				diverge_data(&op, "a new file descriptor cannot get its recorded number");
			res = want;
		}
	}
	if (res >= 0) {
		fd_set_class((int)(res & 0xffffffff), cls);
		if (pair)
			fd_set_class((int)(res >> 32), cls);
		if (cls == FDC_INTERNAL)
			remember_pipe((int)(res & 0xffffffff));
	}
	det_acquire_end(&op, res);
	det_leave(t);
	return res;
}

struct fd_args {
	int a, b, c;
	int *fds;
	const char *path;
	int flags;
	mode_t mode;
	const void *set; /* signalfd's mask */
};

static int64_t do_socket(void *p)
{
	struct fd_args *a = p;
	return res_of(real.socket(a->a, a->b, a->c));
}

static int64_t do_socketpair(void *p)
{
	struct fd_args *a = p;
	int r = real.socketpair(a->a, a->b, a->c, a->fds);
	return r ? -(int64_t)errno : (int64_t)a->fds[0] | (int64_t)a->fds[1] << 32;
}

static int64_t do_pipe2(void *p)
{
	struct fd_args *a = p;
	int r = real.pipe2(a->fds, a->flags);
	return r ? -(int64_t)errno : (int64_t)a->fds[0] | (int64_t)a->fds[1] << 32;
}

static int64_t do_dup(void *p)
{
	struct fd_args *a = p;
	return res_of(real.dup(a->a));
}

static int64_t do_openat(void *p)
{
	struct fd_args *a = p;
	char live[PATH_MAX]; /* /proc/PID paths name this run's ids (pids.c) */
	return res_of(real.openat(a->a, det_live_path(a->path, live, sizeof(live)), a->flags, a->mode));
}

/* Replay's open of a FIFO for writing, without waiting (O_NONBLOCK): with
 * no reader there now (ENXIO), /dev/null stands in. The reader was outside
 * the program, or is the program's own and reads from the trace: nothing
 * needs the bytes, and the writes' recorded counts stand. */
static int64_t do_openat_fifo_writer(void *p)
{
	struct fd_args *a = p;
	int64_t fd = do_openat(p);
	if (fd == -ENXIO)
		fd = res_of(real.openat(AT_FDCWD, "/dev/null", a->flags & (O_ACCMODE | O_CLOEXEC | O_NONBLOCK), 0));
	return fd;
}

static void split_pair(int64_t res, int fds[2])
{
	fds[0] = (int)(res & 0xffffffff);
	fds[1] = (int)(res >> 32);
}

DET_IMPL int det_impl_socket(int domain, int type, int protocol)
{
	det_init();
	struct fd_args a = {domain, type, protocol, NULL, NULL, 0, 0, NULL};
	return (int)ret_of(fd_event((uint32_t)-1, DET_RA(), do_socket, &a, 0, FDC_SOCKET, NULL));
}

DET_IMPL int det_impl_socketpair(int domain, int type, int protocol, int sv[2])
{
	det_init();
	struct fd_args a = {domain, type, protocol, sv, NULL, 0, 0, NULL};
	int64_t res = fd_event((uint32_t)-1, DET_RA(), do_socketpair, &a, 1, FDC_INTERNAL, NULL);
	if (res < 0)
		return (int)ret_of(res);
	split_pair(res, sv);
	return 0;
}

DET_IMPL int det_impl_pipe2(int fds[2], int flags)
{
	det_init();
	struct fd_args a = {0, 0, 0, fds, NULL, flags, 0, NULL};
	int64_t res = fd_event((uint32_t)-1, DET_RA(), do_pipe2, &a, 1, FDC_INTERNAL, NULL);
	if (res < 0)
		return (int)ret_of(res);
	split_pair(res, fds);
	return 0;
}

DET_IMPL int det_impl_pipe(int fds[2])
{
	det_init();
	struct fd_args a = {0, 0, 0, fds, NULL, 0, 0, NULL};
	int64_t res = fd_event((uint32_t)-1, DET_RA(), do_pipe2, &a, 1, FDC_INTERNAL, NULL);
	if (res < 0)
		return (int)ret_of(res);
	split_pair(res, fds);
	return 0;
}

/* Would this open wait for another process: a FIFO opened for reading or
 * writing only, and not O_NONBLOCK (asked in replay and strict recording). */
static int open_waits(int dirfd, const char *path, int flags)
{
	struct stat st;
	return (flags & O_ACCMODE) != O_RDWR && !(flags & (O_NONBLOCK | O_PATH)) && path &&
	       det_sys(SYS_newfstatat, dirfd, (long)path, (long)&st, 0, 0, 0) == 0 && S_ISFIFO(st.st_mode);
}

static void undo_open(void *p, int64_t fd)
{
	(void)p;
	det_sys(SYS_close, fd, 0, 0, 0, 0, 0);
}

/* open and openat: the mode argument exists only with O_CREAT or O_TMPFILE */
static int det_openat(int dirfd, const char *path, int flags, mode_t mode, uint64_t ra)
{
	struct fd_args a = {dirfd, 0, 0, NULL, path, flags, mode, NULL};
	int waits = (det_replaying() || det_strict) && open_waits(dirfd, path, flags);
	/* Replay: a FIFO's reader need not wait for its writer, which may have
	 * been outside the program: what it read is recorded (a named FIFO is
	 * no pipe of the program's own: fd_class); nor its writer for its
	 * reader (do_openat_fifo_writer). Opened without waiting, then made
	 * blocking again, as the program asked. */
	int no_wait = waits && det_replaying();
	if (no_wait)
		a.flags |= O_NONBLOCK;
	int64_t (*perform)(void *) = no_wait && (flags & O_ACCMODE) == O_WRONLY ? do_openat_fifo_writer : do_openat;
	int fd = (int)ret_of(fd_event((uint32_t)dirfd, ra, perform, &a, 0, FDC_UNKNOWN, waits ? undo_open : NULL));
	if (fd >= 0 && no_wait) {
		int e = errno;
		det_sys(SYS_fcntl, fd, F_SETFL, flags & ~O_ACCMODE & ~(O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC), 0, 0, 0);
		errno = e;
	}
	if (fd >= 0 && (flags & O_ACCMODE) != O_WRONLY) {
		int e = errno;
		det_note_file(dirfd, path, fd, DET_FILE_OPENED);
		errno = e;
	}
	return fd;
}

#define OPEN_MODE(flags, last)                                                                     \
	mode_t mode = 0;                                                                           \
	if ((flags) & (O_CREAT | __O_TMPFILE)) {                                                   \
		va_list ap;                                                                        \
		va_start(ap, last);                                                                \
		mode = va_arg(ap, mode_t);                                                         \
		va_end(ap);                                                                        \
	}

DET_IMPL int det_impl_open(const char *path, int flags, ...)
{
	det_init();
	OPEN_MODE(flags, flags);
	return det_openat(AT_FDCWD, path, flags, mode, DET_RA());
}


DET_IMPL int det_impl_openat(int dirfd, const char *path, int flags, ...)
{
	det_init();
	OPEN_MODE(flags, flags);
	return det_openat(dirfd, path, flags, mode, DET_RA());
}


DET_IMPL int det_impl___open_2(const char *path, int flags)
{
	det_init();
	return det_openat(AT_FDCWD, path, flags, 0, DET_RA());
}

/* POSIX message queues: a queue's descriptor is a number the threads race
 * for like any other (an FD_OPEN), but its name is the machine's. Its
 * receives replay from the trace and its sends are not sent again
 * (msgqueues.c), so replay needs no queue of that name, and must not make
 * one (the recording's unlink is not done again: named.c): it opens a
 * stand-in, a queue of its own unlinked at once, with the attributes asked
 * for. The queue the recording made may still be there, or have gone. */
struct mq_args {
	const char *name;
	int oflag;
	mode_t mode;
	struct mq_attr *attr;
};

static int64_t do_mq_open(void *p)
{
	struct mq_args *a = p;
	if (!det_replaying())
		return res_of(real.mq_open(a->name, a->oflag, a->mode, a->attr));
	char standin[64];
	for (unsigned n = 0;; n++) {
		snprintf(standin, sizeof(standin), "/det-standin-%ld-%u", det_sys(SYS_gettid, 0, 0, 0, 0, 0, 0), n);
		int flags = (a->oflag & (O_ACCMODE | O_NONBLOCK | O_CLOEXEC)) | O_CREAT | O_EXCL;
		int64_t fd = res_of(real.mq_open(standin, flags, 0600, a->oflag & O_CREAT ? a->attr : NULL));
		if (fd == -EEXIST)
			continue; /* (left by a replay that was killed here) */
		if (fd >= 0)
			real.mq_unlink(standin);
		return fd;
	}
}

static mqd_t det_mq_open(const char *name, int oflag, mode_t mode, struct mq_attr *attr, uint64_t ra)
{
	struct mq_args a = {name, oflag, mode, attr};
	return (mqd_t)ret_of(fd_event(0, ra, do_mq_open, &a, 0, FDC_UNKNOWN, NULL));
}

DET_IMPL mqd_t det_impl_mq_open(const char *name, int oflag, ...)
{
	det_init();
	mode_t mode = 0;
	struct mq_attr *attr = NULL;
	if (oflag & O_CREAT) {
		va_list ap;
		va_start(ap, oflag);
		mode = va_arg(ap, mode_t);
		attr = va_arg(ap, struct mq_attr *);
		va_end(ap);
	}
	return det_mq_open(name, oflag, mode, attr, DET_RA());
}

DET_IMPL mqd_t det_impl___mq_open_2(const char *name, int oflag)
{
	det_init();
	return det_mq_open(name, oflag, 0, NULL, DET_RA());
}


/* Replay: put a stand-in at the recorded fd number (one end of a
 * socketpair), so the program can poll, read, write and close it. The
 * other end is closed first: when a number below the wanted one is free
 * (the kernel took an accept's number when the call started waiting, and
 * a close that came before its return in the recorded order has freed a
 * lower one), the pair is that number and the wanted one. move_fd waits,
 * a while, for a holder whose close comes a little later in replay. */
int stand_in(int want)
{
	int sv[2];
	if (real.socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return -1;
	real.close(sv[1]);
	int fd = move_fd(sv[0], want);
	if (fd != want) {
		real.close(sv[0]); /* (move_fd failed and left it) */
		return -1;         /* held all along: the program diverged */
	}
	fcntl(fd, F_SETFD, 0); /* as the recorded call made it; callers set CLOEXEC */
	fd_set_class(fd, FDC_SOCKET);
	return fd;
}

static int det_accept(int fd, struct sockaddr *addr, socklen_t *alen, int flags, int four, uint64_t ra)
{
	DET_ENTER(t);
	if (!t)
		return four ? real.accept4(fd, addr, alen, flags) : real.accept(fd, addr, alen);
	struct det_op op = {0};
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_ACCEPT, (uint32_t)fd, ra)) {
		res = op.rec->result;
		if (res >= 0) {
			if (stand_in((int)res) != res)
				diverge_data(&op, "the recorded fd of an accepted connection is taken");
			if (four && (flags & SOCK_CLOEXEC))
				fcntl((int)res, F_SETFD, FD_CLOEXEC);
			socklen_t l = (socklen_t)op.rec->data_len;
			if (addr && alen) {
				memcpy(addr, det_replay_data(op.rec), l < *alen ? l : *alen);
				*alen = l;
			}
		}
		det_input_end(&op, res, NULL, 0);
	} else {
		struct sockaddr_storage ss;
		socklen_t l = sizeof(ss);
		res = res_of(four ? BLOCKING(&op, real.accept4(fd, (struct sockaddr *)&ss, &l, flags))
				  : BLOCKING(&op, real.accept(fd, (struct sockaddr *)&ss, &l)));
		if (res >= 0) {
			fd_set_class((int)res, FDC_SOCKET);
			if (addr && alen) {
				memcpy(addr, &ss, l < *alen ? l : *alen);
				*alen = l;
			}
		}
		det_input_end(&op, res, &ss, res >= 0 ? l : 0);
	}
	int e = errno;
	det_leave(t);
	errno = e;
	return (int)ret_of(res);
}

DET_IMPL int det_impl_accept(int fd, struct sockaddr *addr, socklen_t *alen)
{
	return det_accept(fd, addr, alen, 0, 0, DET_RA());
}

DET_IMPL int det_impl_accept4(int fd, struct sockaddr *addr, socklen_t *alen, int flags)
{
	return det_accept(fd, addr, alen, flags, 1, DET_RA());
}

DET_IMPL int det_impl_connect(int fd, const struct sockaddr *addr, socklen_t alen)
{
	DET_ENTER(t);
	if (!t)
		return real.connect(fd, addr, alen);
	struct det_op op = {0};
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_CONNECT, (uint32_t)fd, DET_RA()))
		res = op.rec->result; /* replay never connects: the peer may be gone */
	else
		res = res_of(BLOCKING(&op, real.connect(fd, addr, alen)));
	fd_set_class(fd, FDC_SOCKET);
	det_input_end(&op, res, NULL, 0);
	det_leave(t);
	return (int)ret_of(res);
}

/* ------------------------------------------------------------------ */
/* file descriptors: keep the class table right when numbers are reused */

/*
 * A close frees its number for the next descriptor, which threads race for,
 * so it is an ordered event like the calls that make one (libuv closes
 * /proc/meminfo in one thread while another opens a file). It takes its
 * place before it runs: what it causes (the end of file a pipe's reader
 * sees) comes after it. In replay it closes in its turn, so a pipe's read
 * end also closes only after the writes the recording made while it was
 * open (head cutting find short).
 */
static int64_t close_event(int fd, int64_t (*perform)(void *), void *ctx, uint64_t ra)
{
	DET_ENTER(t);
	if (!t)
		return perform(ctx);
	struct det_op op = {.aux = (uint32_t)fd};
	det_acquire_begin(&op, t, DET_EV_FD_CLOSE, NULL, DET_OBJ_NONE, ra);
	int replaying = det_replaying();
	if (!replaying)
		det_ops.rec_call_begin(&op);
	else if (op.rec->result == DET_RESULT_PENDING) /* it never returned: canceled or killed in it */
		det_ops.replay_vanish(&op);
	int64_t res = perform(ctx);
	if (replaying)
		det_ops.replay_end(&op, res);
	else
		det_ops.rec_call_end(&op, res);
	det_leave(t);
	return res;
}

static int64_t do_close(void *p)
{
	return res_of(real.close(*(int *)p));
}

DET_IMPL int det_impl_close(int fd)
{
	det_init();
	if (stash.fd == fd)
		stash.fd = -1;
	fd_set_class(fd, FDC_UNKNOWN);
	return (int)ret_of(close_event(fd, do_close, &fd, DET_RA()));
}

DET_IMPL int det_impl_dup(int fd)
{
	det_init();
	struct fd_args a = {fd, 0, 0, NULL, NULL, 0, 0, NULL};
	enum fd_class c = fd >= 0 && fd < FD_LIMIT ? (enum fd_class)atomic_load(&fd_classes[fd]) : FDC_UNKNOWN;
	return (int)ret_of(fd_event((uint32_t)fd, DET_RA(), do_dup, &a, 0, c, NULL));
}

DET_IMPL int det_impl_dup2(int fd, int to)
{
	det_init();
	int r = real.dup2(fd, to);
	if (r >= 0 && fd >= 0 && fd < FD_LIMIT)
		fd_set_class(r, (enum fd_class)atomic_load(&fd_classes[fd]));
	return r;
}

/* Descriptors for the kernel's own objects (libuv's eventfd and epoll,
 * timers, signals, memory files, inotify): threads race for the lowest
 * free number with them as with any other, so each is an ordered event. */
enum kernel_fd { KFD_EVENT, KFD_EPOLL, KFD_EPOLL1, KFD_TIMER, KFD_SIGNAL, KFD_MEMFD, KFD_INOTIFY, KFD_INOTIFY1 };

static int64_t do_kernel_fd(void *p)
{
	struct fd_args *a = p;
	switch (a->c) {
	case KFD_EVENT:
		return res_of(real.eventfd((unsigned)a->a, a->flags));
	case KFD_EPOLL:
		return res_of(real.epoll_create(a->a));
	case KFD_EPOLL1:
		return res_of(real.epoll_create1(a->flags));
	case KFD_TIMER:
		return res_of(real.timerfd_create(a->a, a->flags));
	case KFD_SIGNAL:
		return res_of(real.signalfd(-1, a->set, a->flags));
	case KFD_MEMFD:
		return res_of(real.memfd_create(a->path, (unsigned)a->flags));
	case KFD_INOTIFY:
		return res_of(real.inotify_init());
	default:
		return res_of(real.inotify_init1(a->flags));
	}
}

static int kernel_fd(enum kernel_fd call, int arg, int flags, const char *name, const void *set, uint64_t ra)
{
	det_init();
	struct fd_args a = {arg, 0, (int)call, NULL, name, flags, 0, set};
	/* a memfd is a file the program writes: re-read like one (its class is
	 * found when it is first read); the others are read like devices */
	enum fd_class cls = call == KFD_MEMFD ? FDC_UNKNOWN : FDC_EXTERNAL;
	int fd = (int)ret_of(fd_event((uint32_t)-1, ra, do_kernel_fd, &a, 0, cls, NULL));
	if (call == KFD_EVENT && fd >= 0 && fd < FD_LIMIT)
		atomic_fetch_or_explicit(&eventfds[fd / 64], 1ull << (fd % 64), memory_order_relaxed);
	return fd;
}

DET_IMPL int det_impl_eventfd(unsigned int count, int flags)
{
	return kernel_fd(KFD_EVENT, (int)count, flags, NULL, NULL, DET_RA());
}

DET_IMPL int det_impl_epoll_create(int size)
{
	return kernel_fd(KFD_EPOLL, size, 0, NULL, NULL, DET_RA());
}

DET_IMPL int det_impl_epoll_create1(int flags)
{
	return kernel_fd(KFD_EPOLL1, 0, flags, NULL, NULL, DET_RA());
}

DET_IMPL int det_impl_timerfd_create(int clock, int flags)
{
	return kernel_fd(KFD_TIMER, clock, flags, NULL, NULL, DET_RA());
}

DET_IMPL int det_impl_signalfd(int fd, const sigset_t *mask, int flags)
{
	if (fd != -1) { /* a new mask for an existing one: no new descriptor */
		det_init();
		return real.signalfd(fd, mask, flags);
	}
	return kernel_fd(KFD_SIGNAL, -1, flags, NULL, mask, DET_RA());
}

DET_IMPL int det_impl_memfd_create(const char *name, unsigned int flags)
{
	return kernel_fd(KFD_MEMFD, 0, (int)flags, name, NULL, DET_RA());
}

DET_IMPL int det_impl_inotify_init(void)
{
	return kernel_fd(KFD_INOTIFY, 0, 0, NULL, NULL, DET_RA());
}

DET_IMPL int det_impl_inotify_init1(int flags)
{
	return kernel_fd(KFD_INOTIFY1, 0, flags, NULL, NULL, DET_RA());
}

DET_IMPL int det_impl_dup3(int fd, int to, int flags)
{
	det_init();
	int r = real.dup3(fd, to, flags);
	if (r >= 0 && fd >= 0 && fd < FD_LIMIT)
		fd_set_class(r, (enum fd_class)atomic_load(&fd_classes[fd]));
	return r;
}

/* fclose and fopen take and free a descriptor's number too: ordered like
 * close and open (FD_CLOSE, FD_OPEN). */
static int64_t do_fclose(void *p)
{
	return real.fclose(p) ? -(int64_t)errno : 0;
}

DET_IMPL int det_impl_fclose(FILE *f)
{
	det_init();
	int fd = f ? fileno(f) : -1;
	if (fd < 0)
		return real.fclose(f);
	fd_set_class(fd, FDC_UNKNOWN);
	/* the FILE's object ends here: the next FILE malloc puts at its address
	 * (in one run and not the other, as threads' arenas go) is a new one.
	 * Forgotten before libc frees it, so no other thread's fopen can
	 * reuse the address while it is still bound. */
	det_obj_forget(f, 0);
	int64_t r = close_event(fd, do_fclose, f, DET_RA());
	if (r < 0) {
		errno = (int)-r;
		return EOF;
	}
	return 0;
}

struct fopen_args {
	struct fd_args fd; /* first: fd_event's perform gets it */
	const char *mode;
	FILE *f;
};

static int64_t do_fopen(void *p)
{
	struct fopen_args *a = p;
	char live[PATH_MAX]; /* /proc/PID paths name this run's ids (pids.c) */
	a->f = real.fopen(det_live_path(a->fd.path, live, sizeof(live)), a->mode);
	return a->f ? fileno(a->f) : -(int64_t)errno;
}

/* (det_impl_fopen closes it: a.f is still set) */
static void undo_fopen(void *p, int64_t fd)
{
	(void)p;
	(void)fd;
}

DET_IMPL FILE *det_impl_fopen(const char *path, const char *mode)
{
	det_init();
	struct fopen_args a = {{AT_FDCWD, 0, 0, NULL, path, 0, 0, NULL}, mode, NULL};
	int access = strchr(mode, '+') ? O_RDWR : mode[0] == 'r' ? O_RDONLY : O_WRONLY;
	int waits = (det_replaying() || det_strict) && open_waits(AT_FDCWD, path, access);
	int64_t fd = fd_event((uint32_t)AT_FDCWD, DET_RA(), do_fopen, &a, 0, FDC_UNKNOWN, waits ? undo_fopen : NULL);
	if (fd < 0) {
		if (a.f) /* opened in replay where the recording's failed */
			real.fclose(a.f);
		errno = (int)-fd;
		return NULL;
	}
	if (a.f->_fileno != (int)fd) /* replay moved it to the recorded number */
		a.f->_fileno = (int)fd;
	if (mode[0] == 'r' || strchr(mode, '+')) {
		int e = errno;
		det_note_file(AT_FDCWD, path, (int)fd, DET_FILE_OPENED);
		errno = e;
	}
	return a.f;
}
