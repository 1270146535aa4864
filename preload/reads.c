/*
 * preload/reads.c - reading: read, pread, readv and fread's paths, by the
 * class of the fd (re-read and checked, or recorded and returned).
 *
 * Rules of this file:
 *  - Those of preload/inputs.c, which holds what every input wrapper shares
 *    (preload/inputs.h): this file is one source of inputs, split out of it.
 */
#include "inputs.h"
#include "process.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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
/* reading */

ssize_t perform_read(struct read_call *rc)
{
	return real.readv(rc->fd, rc->iov, rc->iovcnt);
}

static ssize_t perform_pread(struct read_call *rc)
{
	return real.preadv(rc->fd, rc->iov, rc->iovcnt, rc->off);
}

/* One real read into rc's iovecs from byte `from` on, of at most `len` bytes. */
static ssize_t read_from(struct read_call *rc, size_t from, size_t len)
{
	struct iovec local[64];
	int n = rc->iovcnt < 64 ? rc->iovcnt : 64, first = 0;
	while (first < n && from >= rc->iov[first].iov_len)
		from -= rc->iov[first++].iov_len;
	if (first == n)
		return 0;
	memcpy(local, rc->iov, (size_t)n * sizeof(*local));
	local[first].iov_base = (char *)rc->iov[first].iov_base + from;
	local[first].iov_len = rc->iov[first].iov_len - from;
	size_t room = 0;
	int last = first;
	for (; last < n && room < len; last++)
		room += local[last].iov_len;
	if (room > len)
		local[last - 1].iov_len -= room - len;
	return real.readv(rc->fd, &local[first], last - first);
}

/* Replay of an INTERNAL stream: read for real until the recorded count
 * (`got` bytes of it are already there). */
static ssize_t reread_exact(struct read_call *rc, size_t got, size_t count)
{
	while (got < count) {
		ssize_t r = read_from(rc, got, count - got);
		if (r < 0 && errno == EINTR) /* a signal the recording took elsewhere */
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/* a non-blocking end: the recording read these bytes, and
			 * the writer, whose turn may be over before its write
			 * is (sockets.c det_write_stream), still brings them */
			struct pollfd p = {rc->fd, POLLIN, 0};
			det_sys(SYS_poll, (long)&p, 1, -1, 0, 0, 0);
			continue;
		}
		if (r <= 0)
			return got ? (ssize_t)got : r;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* A pipe as both its ends see it (0: not a pipe). */
static uint64_t pipe_id(int fd)
{
	struct stat st;
	if (det_sys(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) != 0 || !S_ISFIFO(st.st_mode))
		return 0;
	return pipe_key(&st);
}

/* The pipe `fd` writes into or reads from, when the program made both its
 * ends (0: another kind of file). */
DET_HIDDEN uint64_t det_own_pipe(int fd)
{
	return fd_class(fd) == FDC_INTERNAL ? pipe_id(fd) : 0;
}

/* Whether a thread of the replay (any process) may wait to write into the pipe. */
static int pipe_writer_stuck(uint64_t id)
{
	for (uint32_t i = 0; id && i < det_hdr->threads_recorded; i++)
		if (atomic_load_explicit(&det_shm_slot(det_hdr, i)->pipe_writing, memory_order_relaxed) == id)
			return 1;
	return 0;
}

/*
 * Bytes a replayed thread read ahead from a pipe for its later reads of it
 * (read_ahead). Per thread, one pipe at a time; its own mapping, since a
 * program's malloc may be what the thread is in the middle of.
 */
#define STASH_CAP (4u << 20)
__thread struct read_stash stash __attribute__((tls_model("initial-exec"))) = {-1, 0, 0, NULL};

/* Copies stashed bytes of rc's fd into its buffer from byte `from`, at most
 * `max`; returns how many. */
static size_t take_stash(struct read_call *rc, size_t from, size_t max)
{
	if (stash.fd != rc->fd || stash.off == stash.len)
		return 0;
	size_t n = stash.len - stash.off < max ? stash.len - stash.off : max, done = 0;
	for (int i = 0; i < rc->iovcnt && done < n; i++) {
		if (from >= rc->iov[i].iov_len) {
			from -= rc->iov[i].iov_len;
			continue;
		}
		size_t k = rc->iov[i].iov_len - from < n - done ? rc->iov[i].iov_len - from : n - done;
		memcpy((char *)rc->iov[i].iov_base + from, stash.buf + stash.off + done, k);
		done += k;
		from = 0;
	}
	stash.off += (uint32_t)done;
	return done;
}

/* Reads up to `max` bytes of the pipe into the stash; 0 when it cannot. */
static ssize_t fill_stash(int fd, size_t max)
{
	if (!stash.buf) {
		long m = det_sys(SYS_mmap, 0, STASH_CAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m < 0 && m > -4096)
			return 0;
		stash.buf = (char *)m;
	}
	if (stash.fd != fd || stash.off == stash.len)
		stash.off = stash.len = 0;
	stash.fd = fd;
	if (stash.off) {
		memmove(stash.buf, stash.buf + stash.off, stash.len - stash.off);
		stash.len -= stash.off;
		stash.off = 0;
	}
	if (max > STASH_CAP - stash.len)
		max = STASH_CAP - stash.len;
	long r = max ? det_sys(SYS_read, fd, (long)(stash.buf + stash.len), (long)max, 0, 0, 0) : 0;
	if (r > 0)
		stash.len += (uint32_t)r;
	return r;
}

/* The bytes t's coming reads of fd (after its next event) will take, less
 * what the stash holds: those before its next synchronization, as far as
 * its schedule window shows. After a synchronization (a lock released,
 * say), another reader of the pipe may read next (multiprocessing's
 * workers take turns on one pipe under a semaphore). */
static size_t stash_room(struct det_thread *t, int fd)
{
	size_t need = 0;
	for (uint64_t i = t->idx + 1; i < t->sched_count && i < t->idx + 256; i++) {
		const struct det_sched *e = det_sched_peek(t, i);
		if (e && (e->kind == DET_EV_BLOCK || e->kind == DET_EV_PREEMPT))
			continue; /* (strict mode's hand-overs: a blocking read's own, no synchronization) */
		if (!e || (det_kind_role(e->kind) != DET_ROLE_INPUT && det_kind_role(e->kind) != DET_ROLE_OUTPUT))
			break;
		if (e->kind == DET_EV_PIPE_READ && e->aux == (uint32_t)fd && e->result > 0)
			need += (size_t)e->result;
	}
	size_t held = stash.fd == fd ? stash.len - stash.off : 0;
	return need > held ? need - held : 0;
}

/*
 * An ordered replay keeps a pipe read in its place, which the recording gave
 * it only after the read returned: its bytes may have left the pipe well
 * before (the reader was preempted before it took its place), and a writer
 * blocked on the full pipe can be what the read's turn waits for (it must
 * reach its own next event first). So while the read waits for its turn and
 * its pipe is full, or a writer waits for room in it, it takes the recorded
 * count's bytes as they come, and then what its next reads of the pipe will
 * take (into the stash); the program sees them only in turn. Only a full
 * pipe is drained ahead: readers of a pipe that never fills (a jobserver's
 * tokens) keep their order. Returns the bytes already in the caller's buffer.
 */
static size_t read_ahead(struct det_thread *t, struct read_call *rc)
{
	const struct det_sched *e = det_ops.replay_pending(t, DET_EV_PIPE_READ, (uint32_t)rc->fd);
	long cap = e && e->result > 0 ? det_sys(SYS_fcntl, rc->fd, F_GETPIPE_SZ, 0, 0, 0, 0) : -1;
	if (cap <= 0) /* not waiting, nothing to read, or not a pipe */
		return 0;
	uint64_t id = pipe_id(rc->fd);
	size_t want = (size_t)e->result, got = take_stash(rc, 0, want);
	long nap = NAP_FIRST;
	while (!det_ops.replay_wait_due(t, e, 0)) {
		int avail = 0;
		/* Full by its bytes, or by its slots: odd-sized writes fill a
		 * pipe's page slots long before its bytes reach the capacity,
		 * so a writer stuck in it says so (pipe_writing). */
		if (det_sys(SYS_ioctl, rc->fd, FIONREAD, (long)&avail, 0, 0, 0) == 0 && avail > 0 &&
		    (avail >= cap - 2 * PIPE_BUF || pipe_writer_stuck(id))) {
			size_t room = got < want ? want - got : stash_room(t, rc->fd);
			ssize_t r = !room		 ? 0
				    : got < want ? read_from(rc, got, (size_t)avail < room ? (size_t)avail : room)
						 : fill_stash(rc->fd, (size_t)avail < room ? (size_t)avail : room);
			if (r > 0) {
				if (got < want)
					got += (size_t)r;
				nap = NAP_FIRST;
				continue;
			}
		}
		/* On the turnstile: the turn wakes it at once (a one-byte
		 * ping-pong through a pipe waited out a nap every read) */
		if (det_ops.replay_wait_due(t, e, nap))
			break;
		nap_grow(&nap);
	}
	return got;
}

/* A regular file's read keeps its bytes (FILE_READ_KEPT, whose replay moves
 * the file offset as the read did) when the file is small (a configuration, a
 * state file: saved anew by rename, edited by the user after the
 * recording) or open for writing too (the program itself may change it: a
 * database); by replay those bytes may be gone. Other reads are read back
 * in replay and checked against a hash (FILE_READ), so a big input costs
 * the trace 8 bytes a read; so do all of a process's reads once it kept
 * KEEP_BUDGET bytes (a program that reads one small file again and again
 * would otherwise grow its trace without end). The recording decides;
 * replay does what the trace says. */
#define KEEP_FILE_BYTES (1 << 20)
#define KEEP_BUDGET (256ull << 20)

static _Atomic uint64_t kept_bytes; /* (a forked child starts with its parent's count: the trace is one) */

static int keep_file_bytes(int fd)
{
	struct stat st;
	if (atomic_load_explicit(&kept_bytes, memory_order_relaxed) >= KEEP_BUDGET)
		return 0;
	return (det_sys(SYS_fcntl, fd, F_GETFL, 0, 0, 0, 0) & O_ACCMODE) == O_RDWR ||
	       (det_sys(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) == 0 && st.st_size <= KEEP_FILE_BYTES);
}

/*
 * A program's mapping of a regular file shows the file's bytes, which by
 * replay the program itself (TLPI's t_mmap writes through its mapping) or
 * the user may have changed. So every mapping of a regular file is an
 * event (FILE_MAPPED): a readable one of 1 MiB at most keeps the bytes it
 * showed (within the budget kept reads share), and replay, which maps the
 * file too, puts them in its mapping: written in place where it is
 * writable (a shared one: into the file, as replay's writes to files are
 * performed), else in a private copy mapped over it with the same
 * protection. Bigger mappings are mapped again unchecked, and so are
 * shared ones once the program has several processes: a file they share
 * (shm_open's) is how they talk, and bytes put there at one's mapping would
 * undo what another wrote since.
 */
static size_t mapped_bytes(int fd, size_t len, off_t off)
{
	struct stat st;
	if (det_sys(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) != 0 || st.st_size <= off)
		return 0;
	return (uint64_t)(st.st_size - off) < len ? (size_t)(st.st_size - off) : len;
}

static void put_mapped(void *p, size_t len, int prot, int flags, const void *bytes, size_t n)
{
	if (prot & PROT_WRITE) {
		memcpy(p, bytes, n);
		return;
	}
	if ((flags & MAP_TYPE) == MAP_PRIVATE &&
	    det_sys(SYS_mprotect, (long)p, (long)len, prot | PROT_WRITE, 0, 0, 0) == 0) {
		memcpy(p, bytes, n);
		det_sys(SYS_mprotect, (long)p, (long)len, prot, 0, 0, 0);
		return;
	}
	/* a read-only shared mapping of a file opened read-only: a private copy */
	long q = det_sys(SYS_mmap, (long)p, (long)len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
			 -1, 0);
	if (q == (long)p) {
		memcpy(p, bytes, n);
		det_sys(SYS_mprotect, (long)p, (long)len, prot, 0, 0, 0);
	}
}

DET_IMPL void *det_impl_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.mmap(addr, len, prot, flags, fd, off);
	if (fd < 0 || (flags & MAP_ANONYMOUS) || fd_class(fd) != FDC_FILE) {
		det_leave(t);
		return real.mmap(addr, len, prot, flags, fd, off);
	}
	struct det_op op = {0};
	void *p = real.mmap(addr, len, prot, flags, fd, off);
	int e = errno;
	if (det_input_begin(&op, t, DET_EV_FILE_MAPPED, (uint32_t)fd, DET_RA())) {
		int64_t res = op.rec->result;
		if (res < 0 && p != MAP_FAILED) { /* it failed in the recording */
			det_sys(SYS_munmap, (long)p, (long)len, 0, 0, 0, 0);
			p = MAP_FAILED;
			e = (int)-res;
		} else if (res >= 0 && p == MAP_FAILED) {
			det_ops.diverge(t, DET_DIV_RESULT, DET_EV_FILE_MAPPED, NULL, op.ra,
					"a file's mmap failed where the recording's succeeded");
		} else if (res > 0) {
			put_mapped(p, len, prot, flags, det_replay_data(op.rec), (size_t)res);
		}
		det_input_end(&op, res, NULL, 0);
	} else {
		size_t n = 0;
		if (p != MAP_FAILED && (prot & PROT_READ) && len <= KEEP_FILE_BYTES &&
		    ((flags & MAP_TYPE) == MAP_PRIVATE || nprocs() <= 1) &&
		    atomic_load_explicit(&kept_bytes, memory_order_relaxed) < KEEP_BUDGET) {
			n = mapped_bytes(fd, len, off);
			atomic_fetch_add_explicit(&kept_bytes, n, memory_order_relaxed);
		}
		det_input_end(&op, p == MAP_FAILED ? -(int64_t)e : (int64_t)n, p == MAP_FAILED ? NULL : p, (uint32_t)n);
	}
	det_leave(t);
	errno = e;
	return p;
}

/* Replay: an eventfd's read comes from the trace, but the program's writes
 * to it happen again; take what is there now, as the recording's read took
 * the count then, or the counter only grows and a write meets EAGAIN (or
 * blocks) where the recording's did not. */
static void drain_eventfd(int fd)
{
	struct pollfd p = {fd, POLLIN, 0};
	uint64_t v;
	if (det_sys(SYS_poll, (long)&p, 1, 0, 0, 0, 0) == 1 && (p.revents & POLLIN))
		det_sys(SYS_read, fd, (long)&v, sizeof(v), 0, 0, 0);
}

ssize_t det_read(struct det_thread *t, struct read_call *rc, uint64_t ra)
{
	enum fd_class c = fd_class(rc->fd);
	uint16_t kind = c == FDC_FILE ? (!det_replaying() && keep_file_bytes(rc->fd) ? DET_EV_FILE_READ_KEPT
										      : DET_EV_FILE_READ)
			: c == FDC_INTERNAL ? DET_EV_PIPE_READ
					    : DET_EV_READ;
	struct det_op op = {0};
	int64_t res;
	/* (a strict recording's BLOCK where the read began is taken first:
	 * the turns after it may be what lets the writer finish) */
	if (kind == DET_EV_PIPE_READ && det_replaying())
		det_ops.replay_next_kind(t, kind);
	size_t early = kind == DET_EV_PIPE_READ && det_replaying() ? read_ahead(t, rc) : 0;
	if (!det_input_begin(&op, t, kind, (uint32_t)rc->fd, ra)) {
		res = res_of(c == FDC_FILE ? rc->perform(rc) : BLOCKING(&op, rc->perform(rc)));
		if (res > 0 && kind == DET_EV_FILE_READ) {
			uint64_t h = hash_iov(rc->iov, rc->iovcnt, (size_t)res);
			det_input_end(&op, res, &h, sizeof(h));
		} else if (res > 0) {
			if (kind == DET_EV_FILE_READ_KEPT)
				atomic_fetch_add_explicit(&kept_bytes, (uint64_t)res, memory_order_relaxed);
			record_iov(t, rc->iov, rc->iovcnt, (size_t)res);
			det_ops.rec_input(&op, res, (uint32_t)res);
		} else {
			det_input_end(&op, res, NULL, 0);
		}
		return ret_of(res);
	}
	/* replay */
	const struct det_sched *e = op.rec;
	res = e->result;
	if (e->kind == DET_EV_READ || e->kind == DET_EV_FILE_READ_KEPT) {
		if (res > 0)
			scatter(rc->iov, rc->iovcnt, det_replay_data(e), (size_t)res < rc->want ? (size_t)res : rc->want);
		if (res > 0 && e->kind == DET_EV_FILE_READ_KEPT && rc->perform == perform_read)
			det_sys(SYS_lseek, rc->fd, res, SEEK_CUR, 0, 0, 0);
		if (res == 8 && det_fd_is_eventfd(rc->fd))
			drain_eventfd(rc->fd);
	} else if (res >= 0) {
		/* re-read, and check it is what the recording read */
		if (kind == DET_EV_PIPE_READ && early < (size_t)res)
			early += take_stash(rc, early, (size_t)res - early);
		ssize_t r = kind == DET_EV_FILE_READ ? rc->perform(rc) : reread_exact(rc, early, (size_t)res);
		if (r != res && kind == DET_EV_FILE_READ)
			diverge_file(&op, rc->fd, "another count");
		if (r != res)
			diverge_data(&op, "a pipe read returned another count than recorded");
		if (res > 0) {
			int same = kind == DET_EV_FILE_READ
					   ? e->data_len == 8 && hash_iov(rc->iov, rc->iovcnt, (size_t)res) ==
									 *(const uint64_t *)det_replay_data(e)
					   : e->data_len == (uint32_t)res &&
						     same_iov(rc->iov, rc->iovcnt, det_replay_data(e), (size_t)res);
			if (!same && kind == DET_EV_FILE_READ)
				diverge_file(&op, rc->fd, "other bytes");
			if (!same)
				diverge_data(&op, "a pipe read returned other bytes than recorded");
		}
	}
	det_input_end(&op, res, NULL, 0);
	return ret_of(res);
}

#define DET_READ_CALL(rc, pass)                                                                    \
	do {                                                                                       \
		DET_ENTER(t);                                                                      \
		if (!t)                                                                            \
			return pass;                                                               \
		ssize_t r = det_read(t, &rc, DET_RA());                                            \
		int e = errno;                                                                     \
		det_leave(t);                                                                      \
		errno = e;                                                                         \
		return r;                                                                          \
	} while (0)

DET_IMPL ssize_t det_impl_read(int fd, void *buf, size_t n)
{
	struct iovec iov = {buf, n};
	struct read_call rc = {fd, &iov, 1, n, perform_read, 0, 0};
	DET_READ_CALL(rc, real.read(fd, buf, n));
}

DET_IMPL ssize_t det_impl___read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	if (n > buflen)
		abort(); /* what glibc's fortify check does */
	return read(fd, buf, n);
}

DET_IMPL ssize_t det_impl_readv(int fd, const struct iovec *iov, int iovcnt)
{
	size_t want = 0;
	for (int i = 0; i < iovcnt; i++)
		want += iov[i].iov_len;
	struct read_call rc = {fd, iov, iovcnt, want, perform_read, 0, 0};
	DET_READ_CALL(rc, real.readv(fd, iov, iovcnt));
}

DET_IMPL ssize_t det_impl_pread(int fd, void *buf, size_t n, off_t off)
{
	struct iovec iov = {buf, n};
	struct read_call rc = {fd, &iov, 1, n, perform_pread, off, 0};
	DET_READ_CALL(rc, real.pread(fd, buf, n, off));
}


DET_IMPL ssize_t det_impl___pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
	if (n > buflen)
		abort();
	return pread(fd, buf, n, off);
}


DET_IMPL ssize_t det_impl_preadv(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
	size_t want = 0;
	for (int i = 0; i < iovcnt; i++)
		want += iov[i].iov_len;
	struct read_call rc = {fd, iov, iovcnt, want, perform_pread, off, 0};
	DET_READ_CALL(rc, real.preadv(fd, iov, iovcnt, off));
}

/* Without flags, preadv, or readv at offset -1 (the file's position, or a
 * socket's stream); with flags (RWF_NOWAIT, RWF_HIPRI) the kernel's. */
DET_IMPL ssize_t det_impl_preadv2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)
{
	if (flags)
		return real.preadv2(fd, iov, iovcnt, off, flags);
	return off == -1 ? readv(fd, iov, iovcnt) : preadv(fd, iov, iovcnt, off);
}
