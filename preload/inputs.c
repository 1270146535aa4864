/*
 * preload/inputs.c - what the program learns from the world: time,
 * randomness, data from files, pipes, sockets and devices, readiness,
 * process ids, sleeps.
 *
 * Rules of this file:
 *  - Every wrapper records the call's result and the bytes it produced, and
 *    in replay returns them without touching the world - except for sources
 *    that replay re-reads and checks instead (regular files, pipes whose both
 *    ends belong to the program, stdin fed by det): those are read for real
 *    and compared, so that writes into them still drain.
 *  - Which kind of source an fd is gets decided once per fd (fd_class) and
 *    the event kind records it; replay with another kind is a divergence.
 *  - Writes to stdout, stderr, files and pipes happen in replay; writes to
 *    sockets are checked against the recording, never sent.
 *  - Results are stored as -errno on failure; wrappers restore errno.
 *  - Wrappers enter with DET_ENTER (interpose.c): most of these calls are
 *    cancellation points, and for the others its guard is one compare.
 */
#include "runtime.h"
#include "../recorder/logfmt.h" /* det_crc32c_soft, the capture log's hash */

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

#define EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------ */
/* what an fd is */

enum fd_class {
	FDC_UNKNOWN = 0,
	FDC_FILE = 1,     /* regular file: re-read in replay, checked by hash */
	FDC_EXTERNAL = 2, /* socket, terminal, device, someone else's pipe: recorded */
	FDC_INTERNAL = 3, /* a pipe or socketpair the program made, or stdin fed by det: re-read */
	FDC_OTHER = 4,    /* directory, or a bad fd */
	FDC_SOCKET = 5,   /* an external socket: read like EXTERNAL, writes checked not sent */
};

#define FD_LIMIT 65536
static _Atomic uint8_t fd_classes[FD_LIMIT];

static void fd_set_class(int fd, enum fd_class c)
{
	if (fd >= 0 && fd < FD_LIMIT)
		atomic_store_explicit(&fd_classes[fd], (uint8_t)c, memory_order_relaxed);
}

/* Pipes and socket pairs the program made, by inode, in the region: a
 * child that inherits one (through fork, and exec, which forgets the
 * table above) still knows it as internal. */
static uint64_t pipe_key(const struct stat *st)
{
	return ((uint64_t)st->st_dev << 40) ^ (uint64_t)st->st_ino;
}

static void remember_pipe(int fd)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return;
	_Atomic uint64_t *tab = (_Atomic uint64_t *)((char *)det_hdr + det_hdr->pipes_off);
	det_set_insert(tab, det_hdr->pipes_cap - 1, pipe_key(&st) | 1);
}

static int known_pipe(const struct stat *st)
{
	uint64_t key = pipe_key(st) | 1, mask = det_hdr->pipes_cap - 1;
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

static enum fd_class fd_class(int fd)
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

/* ------------------------------------------------------------------ */
/* a 64-bit checksum of re-read or sent data (crc32c, two lanes), over the
 * first `len` bytes of an iovec array, without copying them */

struct hasher {
	uint64_t h1, h2, carry;
	unsigned ncarry;
};

__attribute__((target("sse4.2"))) static void hash_word_sse42(struct hasher *h, uint64_t w)
{
	h->h1 = __builtin_ia32_crc32di(h->h1, w);
	h->h2 = __builtin_ia32_crc32di(h->h2, w ^ 0x5bd1e9955bd1e995ull);
}

/* the same value without SSE4.2 (older CPUs, qemu's TCG) */
static void hash_word(struct hasher *h, uint64_t w)
{
	static int sse42 = -1;
	if (det_unlikely(sse42 < 0)) {
		__builtin_cpu_init();
		sse42 = __builtin_cpu_supports("sse4.2") != 0;
	}
	if (det_likely(sse42)) {
		hash_word_sse42(h, w);
	} else {
		h->h1 = det_crc32c_soft(h->h1, w);
		h->h2 = det_crc32c_soft(h->h2, w ^ 0x5bd1e9955bd1e995ull);
	}
}

static void hash_bytes(struct hasher *h, const uint8_t *b, size_t n)
{
	while (n && h->ncarry) {
		h->carry |= (uint64_t)*b++ << (8 * h->ncarry++);
		n--;
		if (h->ncarry == 8) {
			hash_word(h, h->carry);
			h->carry = 0;
			h->ncarry = 0;
		}
	}
	for (; n >= 8; n -= 8, b += 8) {
		uint64_t w;
		memcpy(&w, b, 8);
		hash_word(h, w);
	}
	for (; n; n--)
		h->carry |= (uint64_t)*b++ << (8 * h->ncarry++);
}

static uint64_t hash_iov(const struct iovec *iov, int n, size_t len)
{
	struct hasher h = {0x9E3779B9u, 0x85EBCA6Bu, 0, 0};
	for (int i = 0; i < n && len; i++) {
		size_t k = iov[i].iov_len < len ? iov[i].iov_len : len;
		hash_bytes(&h, iov[i].iov_base, k);
		len -= k;
	}
	if (h.ncarry)
		hash_word(&h, h.carry ^ ((uint64_t)h.ncarry << 56));
	return (h.h1 << 32) | (uint32_t)h.h2;
}

/* ------------------------------------------------------------------ */
/* helpers */

static int64_t res_of(long r)
{
	return r < 0 ? -(int64_t)errno : r;
}

/* Turn a recorded result back into the C convention. */
static long ret_of(int64_t res)
{
	if (res < 0) {
		errno = (int)-res;
		return -1;
	}
	return (long)res;
}

static void diverge_data(struct det_op *op, const char *what)
{
	det_ops.diverge(op->t, DET_DIV_RESULT, op->kind, NULL, op->ra, what);
}

/* A regular file read back in replay is not what was recorded: say which. */
static __attribute__((noreturn)) void diverge_file(struct det_op *op, int fd, const char *what)
{
	static __thread char msg[200];
	char link[32], path[128];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	long n = det_sys(SYS_readlink, (long)link, (long)path, sizeof(path) - 1, 0, 0, 0);
	path[n > 0 ? n : 0] = 0;
	snprintf(msg, sizeof(msg), "a file read returned %s: %s changed since recording", what,
		 n > 0 ? path : "the file");
	det_ops.diverge(op->t, DET_DIV_RESULT, op->kind, NULL, op->ra, msg);
}

/* Copy recorded bytes into an iovec array. */
static void scatter(const struct iovec *iov, int n, const uint8_t *data, size_t len)
{
	for (int i = 0; i < n && len; i++) {
		size_t k = iov[i].iov_len < len ? iov[i].iov_len : len;
		memcpy(iov[i].iov_base, data, k);
		data += k;
		len -= k;
	}
}

/* Record the first len bytes of an iovec array as the next event's data.
 * det never allocates in the program's heap: a malloc in one mode and not
 * the other would move the program's own memory between record and replay. */
static void record_iov(struct det_thread *t, const struct iovec *iov, int n, size_t len)
{
	for (int i = 0; i < n && len; i++) {
		size_t k = iov[i].iov_len < len ? iov[i].iov_len : len;
		det_ops.rec_data(t, iov[i].iov_base, (uint32_t)k);
		len -= k;
	}
}

/* Are the first len bytes of an iovec array these? */
static int same_iov(const struct iovec *iov, int n, const uint8_t *data, size_t len)
{
	for (int i = 0; i < n && len; i++) {
		size_t k = iov[i].iov_len < len ? iov[i].iov_len : len;
		if (memcmp(iov[i].iov_base, data, k))
			return 0;
		data += k;
		len -= k;
	}
	return len == 0;
}

/* ------------------------------------------------------------------ */
/* time */

static int64_t ns_of(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static void ts_of(int64_t ns, struct timespec *ts)
{
	ts->tv_sec = ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
}

DET_IMPL int det_impl_clock_gettime(clockid_t clk, struct timespec *ts)
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.clock_gettime(clk, ts);
	struct det_op op = {0};
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_CLOCK_GETTIME, (uint32_t)clk, DET_RA())) {
		res = op.rec->result;
	} else if (det_tsc_trapped) {
		/* the vDSO reads the TSC, which faults now: ask the kernel */
		long r = det_sys(SYS_clock_gettime, clk, (long)ts, 0, 0, 0, 0);
		res = r == 0 ? ns_of(ts) : r;
	} else {
		int r = real.clock_gettime(clk, ts);
		res = r == 0 ? ns_of(ts) : -(int64_t)errno;
	}
	det_input_end(&op, res, NULL, 0);
	det_leave(t);
	if (res < 0)
		return (int)ret_of(res);
	ts_of(res, ts);
	return 0;
}

DET_IMPL int det_impl_timespec_get(struct timespec *ts, int base)
{
	det_init();
	if (base != TIME_UTC)
		return real.timespec_get(ts, base);
	return clock_gettime(CLOCK_REALTIME, ts) == 0 ? base : 0;
}

/* glibc declares tv nonnull, yet callers pass NULL and the vDSO accepts it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnonnull-compare"
DET_IMPL int det_impl_gettimeofday(struct timeval *tv, void *tz)
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.gettimeofday(tv, tz);
	struct det_op op = {0};
	int64_t res;
	struct timeval mine;
	if (det_input_begin(&op, t, DET_EV_GETTIMEOFDAY, 0, DET_RA())) {
		res = op.rec->result;
	} else {
		long r = det_tsc_trapped ? det_sys(SYS_gettimeofday, (long)&mine, 0, 0, 0, 0, 0)
					 : real.gettimeofday(&mine, NULL) ? -errno : 0;
		res = r == 0 ? (int64_t)mine.tv_sec * 1000000 + mine.tv_usec : r;
	}
	det_input_end(&op, res, NULL, 0);
	det_leave(t);
	if (res < 0)
		return (int)ret_of(res);
	if (tv) {
		tv->tv_sec = res / 1000000;
		tv->tv_usec = res % 1000000;
	}
	if (tz) /* glibc has always filled the obsolete timezone with zeros */
		memset(tz, 0, 2 * sizeof(int));
	return 0;
}
#pragma GCC diagnostic pop

DET_IMPL time_t det_impl_time(time_t *out)
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.time(out);
	struct det_op op = {0};
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_TIME, 0, DET_RA()))
		res = op.rec->result;
	else
		res = det_tsc_trapped ? det_sys(SYS_time, 0, 0, 0, 0, 0, 0) : real.time(NULL);
	det_input_end(&op, res, NULL, 0);
	det_leave(t);
	if (out)
		*out = (time_t)res;
	return (time_t)res;
}

DET_IMPL clock_t det_impl_clock(void)
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.clock();
	struct det_op op = {0};
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_CLOCK, 0, DET_RA()))
		res = op.rec->result;
	else
		res = real.clock();
	det_input_end(&op, res, NULL, 0);
	det_leave(t);
	return (clock_t)res;
}

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

/* ------------------------------------------------------------------ */
/* reading */

/*
 * One read-like call on fd. `perform` does the real call into iov; `exact`
 * re-reads a stream in replay until it has the recorded count.
 */
struct read_call {
	int fd;
	const struct iovec *iov;
	int iovcnt;
	size_t want;
	ssize_t (*perform)(struct read_call *rc);
	off_t off;
	int flags;
};

static ssize_t perform_read(struct read_call *rc)
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
		if (r <= 0)
			return got ? (ssize_t)got : r;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* An early action waits for its thread's turn by napping (50 us growing
 * to 1 ms; the timer slack makes shorter pointless), not on the turnstile,
 * which wakes a thread only for its own event. */
#define NAP_FIRST 50000L
static void nap_longer(long *ns)
{
	struct timespec ts = {0, *ns};
	det_sys(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
	if (*ns < 1000000)
		*ns *= 2;
}

/* A pipe as both its ends see it (0: not a pipe). */
static uint64_t pipe_id(int fd)
{
	struct stat st;
	if (det_sys(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) != 0 || !S_ISFIFO(st.st_mode))
		return 0;
	return pipe_key(&st) | 1;
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
static __thread struct {
	int fd;
	uint32_t off, len;
	char *buf;
} stash = {-1, 0, 0, NULL};

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
	while (!det_ops.replay_due(e)) {
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
		nap_longer(&nap);
	}
	return got;
}

static ssize_t det_read(struct det_thread *t, struct read_call *rc, uint64_t ra)
{
	enum fd_class c = fd_class(rc->fd);
	uint16_t kind = c == FDC_FILE ? DET_EV_FILE_READ : c == FDC_INTERNAL ? DET_EV_PIPE_READ : DET_EV_READ;
	struct det_op op = {0};
	int64_t res;
	size_t early = kind == DET_EV_PIPE_READ && det_replaying() ? read_ahead(t, rc) : 0;
	if (!det_input_begin(&op, t, kind, (uint32_t)rc->fd, ra)) {
		res = res_of(kind == DET_EV_FILE_READ ? rc->perform(rc) : BLOCKING(&op, rc->perform(rc)));
		if (res > 0 && kind == DET_EV_FILE_READ) {
			uint64_t h = hash_iov(rc->iov, rc->iovcnt, (size_t)res);
			det_input_end(&op, res, &h, sizeof(h));
		} else if (res > 0) {
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
	if (kind == DET_EV_READ) {
		if (res > 0)
			scatter(rc->iov, rc->iovcnt, det_replay_data(e), (size_t)res < rc->want ? (size_t)res : rc->want);
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


/* ------------------------------------------------------------------ */
/* sockets */

/* Recorded as: socklen_t address length, the address, int msg flags, the bytes. */
static ssize_t det_recv(struct det_thread *t, int fd, struct msghdr *msg, int flags, uint64_t ra)
{
	struct det_op op = {0};
	if (fd_class(fd) == FDC_INTERNAL) {
		/* a socketpair of the program's own: re-read like a pipe */
		struct read_call rc = {fd, msg->msg_iov, (int)msg->msg_iovlen, 0, perform_read, 0, flags};
		for (size_t i = 0; i < msg->msg_iovlen; i++)
			rc.want += msg->msg_iov[i].iov_len;
		msg->msg_namelen = 0;
		msg->msg_controllen = 0;
		msg->msg_flags = 0;
		return det_read(t, &rc, ra);
	}
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_RECV, (uint32_t)fd, ra)) {
		res = op.rec->result;
		const uint8_t *d = det_replay_data(op.rec);
		size_t len = op.rec->data_len;
		socklen_t alen = 0;
		int mflags = 0;
		if (len >= sizeof(alen) + sizeof(mflags)) {
			memcpy(&alen, d, sizeof(alen));
			if (sizeof(alen) + alen + sizeof(mflags) <= len) {
				if (msg->msg_name && msg->msg_namelen)
					memcpy(msg->msg_name, d + sizeof(alen), alen < msg->msg_namelen ? alen : msg->msg_namelen);
				msg->msg_namelen = alen;
				memcpy(&mflags, d + sizeof(alen) + alen, sizeof(mflags));
				msg->msg_flags = mflags;
				d += sizeof(alen) + alen + sizeof(mflags);
				if (res > 0)
					scatter(msg->msg_iov, (int)msg->msg_iovlen, d, (size_t)res);
			}
		}
		msg->msg_controllen = 0;
		det_input_end(&op, res, NULL, 0);
		return ret_of(res);
	}
	res = res_of(BLOCKING(&op, real.recvmsg(fd, msg, flags)));
	size_t bytes = res > 0 ? (size_t)res : 0;
	socklen_t alen = msg->msg_name ? msg->msg_namelen : 0;
	int mflags = res >= 0 ? msg->msg_flags : 0;
	det_ops.rec_data(t, &alen, sizeof(alen));
	if (alen)
		det_ops.rec_data(t, msg->msg_name, alen);
	det_ops.rec_data(t, &mflags, sizeof(mflags));
	record_iov(t, msg->msg_iov, (int)msg->msg_iovlen, bytes);
	det_ops.rec_input(&op, res, (uint32_t)(sizeof(alen) + alen + sizeof(mflags) + bytes));
	return ret_of(res);
}

#define DET_RECV_CALL(fd, msg, flags, pass)                                                        \
	do {                                                                                       \
		DET_ENTER(t);                                                                      \
		if (!t)                                                                            \
			return pass;                                                               \
		ssize_t r = det_recv(t, fd, &msg, flags, DET_RA());                                \
		int e = errno;                                                                     \
		det_leave(t);                                                                      \
		errno = e;                                                                         \
		return r;                                                                          \
	} while (0)

DET_IMPL ssize_t det_impl_recvmsg(int fd, struct msghdr *msg, int flags)
{
	DET_RECV_CALL(fd, (*msg), flags, real.recvmsg(fd, msg, flags));
}

DET_IMPL ssize_t det_impl_recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr, socklen_t *alen)
{
	struct iovec iov = {buf, n};
	struct msghdr msg = {addr, addr && alen ? *alen : 0, &iov, 1, NULL, 0, 0};
	DET_ENTER(t);
	if (!t)
		return real.recvfrom(fd, buf, n, flags, addr, alen);
	ssize_t r = det_recv(t, fd, &msg, flags, DET_RA());
	int e = errno;
	det_leave(t);
	if (r >= 0 && addr && alen)
		*alen = msg.msg_namelen;
	errno = e;
	return r;
}

DET_IMPL ssize_t det_impl_recv(int fd, void *buf, size_t n, int flags)
{
	struct iovec iov = {buf, n};
	struct msghdr msg = {NULL, 0, &iov, 1, NULL, 0, 0};
	DET_RECV_CALL(fd, msg, flags, real.recv(fd, buf, n, flags));
}

DET_IMPL ssize_t det_impl___recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
	if (n > buflen)
		abort();
	return recv(fd, buf, n, flags);
}

DET_IMPL ssize_t det_impl___recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *addr,
			      socklen_t *alen)
{
	if (n > buflen)
		abort();
	return recvfrom(fd, buf, n, flags, addr, alen);
}

/*
 * Sending on an external socket: recorded with a checksum; replay checks
 * the program sends the same bytes and does not send them (the peer may be
 * gone). Everything else (files, pipes, terminals) is written for real.
 */
static ssize_t det_send(struct det_thread *t, int fd, const struct iovec *iov, int iovcnt,
			ssize_t (*perform)(void *ctx), void *ctx, uint64_t ra)
{
	struct det_op op = {0};
	int64_t res;
	size_t want = 0;
	for (int i = 0; i < iovcnt; i++)
		want += iov[i].iov_len;
	if (det_input_begin(&op, t, DET_EV_SEND, (uint32_t)fd, ra)) {
		res = op.rec->result;
		if (res > 0) {
			uint64_t h = hash_iov(iov, iovcnt, (size_t)res);
			if ((size_t)res > want || op.rec->data_len != 8 || h != *(const uint64_t *)det_replay_data(op.rec))
				diverge_data(&op, "the program sends other bytes than it did when recorded");
		}
		det_input_end(&op, res, NULL, 0);
		return ret_of(res);
	}
	res = res_of(BLOCKING(&op, perform(ctx)));
	uint64_t h = res > 0 ? hash_iov(iov, iovcnt, (size_t)res) : 0;
	det_input_end(&op, res, &h, sizeof(h));
	return ret_of(res);
}

struct send_args {
	int fd;
	const void *buf;
	size_t n;
	int flags;
	const struct sockaddr *to;
	socklen_t tolen;
	const struct msghdr *msg;
	const struct iovec *iov;
	int iovcnt;
};

static ssize_t do_sendto(void *p)
{
	struct send_args *a = p;
	return real.sendto(a->fd, a->buf, a->n, a->flags, a->to, a->tolen);
}

static ssize_t do_sendmsg(void *p)
{
	struct send_args *a = p;
	return real.sendmsg(a->fd, a->msg, a->flags);
}

static ssize_t do_write(void *p)
{
	struct send_args *a = p;
	return real.write(a->fd, a->buf, a->n);
}

static ssize_t do_writev(void *p)
{
	struct send_args *a = p;
	return real.writev(a->fd, a->iov, a->iovcnt);
}

/*
 * A write to a pipe, terminal or device happens in replay too (the user sees
 * the output), but its result is an input: a non-blocking fd may take part
 * of it or none (EAGAIN), and the program acts on that. Replay writes
 * exactly the recorded count, waiting for room if it must, or returns the
 * recorded error without writing.
 */
static ssize_t det_write_stream(struct det_thread *t, int fd, const struct iovec *iov, int iovcnt,
				ssize_t (*perform)(void *ctx), void *ctx, uint64_t ra)
{
	struct det_op op = {0};
	if (!det_input_begin(&op, t, DET_EV_WRITE, (uint32_t)fd, ra)) {
		/* The write takes its place in the order before it runs, and
		 * in strict mode keeps the turn while it runs: threads that
		 * wrote while others held the turn would reach the kernel in
		 * an order nobody recorded. (A write that blocks for long,
		 * say on a pipe this program itself must drain, loses the
		 * turn to the watchdog.) */
		det_ops.rec_call_begin(&op);
		int64_t res = res_of(det_strict ? perform(ctx) : BLOCKING(&op, perform(ctx)));
		det_ops.rec_call_end(&op, res);
		return ret_of(res);
	}
	int64_t res = op.rec->result;
	if (res == DET_RESULT_PENDING) /* the writer died in it (a SIGPIPE, a kill) */
		det_ops.replay_vanish(&op);
	uint64_t pipe = res > 0 ? det_own_pipe(fd) : 0;
	size_t done = 0;
	for (int i = 0; i < iovcnt && done < (size_t)(res > 0 ? res : 0);) {
		size_t k = iov[i].iov_len < (size_t)res - done ? iov[i].iov_len : (size_t)res - done;
		size_t off = 0;
		while (off < k) {
			/* Into the program's own pipe, a write that may not fit
			 * (more than PIPE_BUF, or no free slot) says so while it
			 * runs: a reader due after it may drain the pipe meanwhile
			 * (read_ahead). Tokens written to a shared pipe (make's
			 * jobserver) fit, and are not read ahead. */
			struct pollfd p = {fd, POLLOUT, 0};
			int may_wait = pipe && (k - off > PIPE_BUF || det_sys(SYS_poll, (long)&p, 1, 0, 0, 0, 0) == 0);
			if (may_wait)
				atomic_store(&t->slot->pipe_writing, pipe);
			long n = det_sys(SYS_write, fd, (long)((const char *)iov[i].iov_base + off), (long)(k - off), 0, 0,
					 0);
			if (may_wait)
				atomic_store(&t->slot->pipe_writing, 0);
			if (n == -EAGAIN) {
				atomic_store(&t->slot->pipe_writing, pipe);
				det_sys(SYS_poll, (long)&p, 1, -1, 0, 0, 0);
				atomic_store(&t->slot->pipe_writing, 0);
			} else if (n == -EINTR) {
				continue;
			} else if (n <= 0) {
				done = (size_t)res; /* the reader is gone: the recording's count stands */
				break;
			} else {
				off += (size_t)n;
			}
		}
		done += off;
		i++;
	}
	det_input_end(&op, res, NULL, 0);
	return ret_of(res);
}

#define DET_SEND_CALL(fd, iov, iovcnt, perform, args, pass, streams)                               \
	do {                                                                                       \
		DET_ENTER(t);                                                                      \
		if (!t)                                                                            \
			return pass;                                                               \
		enum fd_class c = fd_class(fd);                                                    \
		ssize_t r;                                                                         \
		if (c == FDC_SOCKET)                                                               \
			r = det_send(t, fd, iov, iovcnt, perform, &args, DET_RA());               \
		else if (streams && (c == FDC_EXTERNAL || c == FDC_INTERNAL))                      \
			r = det_write_stream(t, fd, iov, iovcnt, perform, &args, DET_RA());       \
		else {                                                                             \
			det_leave(t);                                                              \
			return pass;                                                               \
		}                                                                                  \
		int e = errno;                                                                     \
		det_leave(t);                                                                      \
		errno = e;                                                                         \
		return r;                                                                          \
	} while (0)

DET_IMPL ssize_t det_impl_sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *to, socklen_t tolen)
{
	struct iovec iov = {(void *)buf, n};
	struct send_args a = {fd, buf, n, flags, to, tolen, NULL, NULL, 0};
	DET_SEND_CALL(fd, &iov, 1, do_sendto, a, real.sendto(fd, buf, n, flags, to, tolen), 0);
}

DET_IMPL ssize_t det_impl_send(int fd, const void *buf, size_t n, int flags)
{
	return sendto(fd, buf, n, flags, NULL, 0);
}

DET_IMPL ssize_t det_impl_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct send_args a = {fd, NULL, 0, flags, NULL, 0, msg, NULL, 0};
	DET_SEND_CALL(fd, msg->msg_iov, (int)msg->msg_iovlen, do_sendmsg, a, real.sendmsg(fd, msg, flags), 0);
}

DET_IMPL ssize_t det_impl_write(int fd, const void *buf, size_t n)
{
	struct iovec iov = {(void *)buf, n};
	struct send_args a = {fd, buf, n, 0, NULL, 0, NULL, NULL, 0};
	DET_SEND_CALL(fd, &iov, 1, do_write, a, real.write(fd, buf, n), 1);
}

DET_IMPL ssize_t det_impl_writev(int fd, const struct iovec *iov, int iovcnt)
{
	struct send_args a = {fd, NULL, 0, 0, NULL, 0, NULL, iov, iovcnt};
	DET_SEND_CALL(fd, iov, iovcnt, do_writev, a, real.writev(fd, iov, iovcnt), 1);
}

/*
 * New file descriptors. The kernel gives the lowest free number, so threads
 * that open at the same time race for numbers: each open is an ordered
 * event, and replay checks (or, if it can, restores) the recorded number.
 */
static int move_fd(int fd, int want)
{
	if (fd == want)
		return fd;
	/* Still held: its holder had closed it by this point of the recording,
	 * but a close is no event, so another thread's close between its
	 * events may come a little later in replay. Wait for it, a while (a
	 * holder that waits for a turn after this one never comes: diverged). */
	for (long nap = NAP_FIRST, waited = 0; fcntl(want, F_GETFD) != -1; waited += nap, nap_longer(&nap))
		if (waited > 2000000000L)
			return -1;
	int cloexec = fcntl(fd, F_GETFD) & FD_CLOEXEC;
	int r = real.dup3(fd, want, cloexec ? O_CLOEXEC : 0);
	real.close(fd);
	return r;
}

/* result: the fd, or for a pair fds[0] | fds[1] << 32; -errno on failure */
static int64_t fd_event(uint32_t aux, uint64_t ra, int64_t (*perform)(void *), void *ctx, int pair,
			enum fd_class cls)
{
	DET_ENTER(t);
	if (!t)
		return perform(ctx);
	struct det_op op = {.aux = aux};
	det_acquire_begin(&op, t, DET_EV_FD_OPEN, NULL, DET_OBJ_NONE, ra);
	int64_t res;
	if (det_replaying() && op.rec->result < 0) {
		res = op.rec->result; /* it failed in the recording */
	} else {
		res = perform(ctx);
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
	return res_of(real.openat(a->a, a->path, a->flags, a->mode));
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
	return (int)ret_of(fd_event((uint32_t)-1, DET_RA(), do_socket, &a, 0, FDC_SOCKET));
}

DET_IMPL int det_impl_socketpair(int domain, int type, int protocol, int sv[2])
{
	det_init();
	struct fd_args a = {domain, type, protocol, sv, NULL, 0, 0, NULL};
	int64_t res = fd_event((uint32_t)-1, DET_RA(), do_socketpair, &a, 1, FDC_INTERNAL);
	if (res < 0)
		return (int)ret_of(res);
	split_pair(res, sv);
	return 0;
}

DET_IMPL int det_impl_pipe2(int fds[2], int flags)
{
	det_init();
	struct fd_args a = {0, 0, 0, fds, NULL, flags, 0, NULL};
	int64_t res = fd_event((uint32_t)-1, DET_RA(), do_pipe2, &a, 1, FDC_INTERNAL);
	if (res < 0)
		return (int)ret_of(res);
	split_pair(res, fds);
	return 0;
}

DET_IMPL int det_impl_pipe(int fds[2])
{
	det_init();
	struct fd_args a = {0, 0, 0, fds, NULL, 0, 0, NULL};
	int64_t res = fd_event((uint32_t)-1, DET_RA(), do_pipe2, &a, 1, FDC_INTERNAL);
	if (res < 0)
		return (int)ret_of(res);
	split_pair(res, fds);
	return 0;
}

/* open and openat: the mode argument exists only with O_CREAT or O_TMPFILE */
static int det_openat(int dirfd, const char *path, int flags, mode_t mode, uint64_t ra)
{
	struct fd_args a = {dirfd, 0, 0, NULL, path, flags, mode, NULL};
	int fd = (int)ret_of(fd_event((uint32_t)dirfd, ra, do_openat, &a, 0, FDC_UNKNOWN));
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


/* Replay: put a stand-in at the recorded fd number (one end of a
 * socketpair), so the program can poll, read, write and close it. */
static int stand_in(int want)
{
	int sv[2];
	if (real.socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return -1;
	int fd = sv[0];
	if (fd != want) {
		if (fcntl(want, F_GETFD) != -1) { /* taken: the program diverged */
			real.close(sv[0]);
			real.close(sv[1]);
			return -1;
		}
		fd = real.dup3(sv[0], want, 0);
		real.close(sv[0]);
	}
	real.close(sv[1]);
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
	return (int)ret_of(fd_event((uint32_t)fd, DET_RA(), do_dup, &a, 0, c));
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
	return (int)ret_of(fd_event((uint32_t)-1, ra, do_kernel_fd, &a, 0, cls));
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
	a->f = real.fopen(a->fd.path, a->mode);
	return a->f ? fileno(a->f) : -(int64_t)errno;
}

DET_IMPL FILE *det_impl_fopen(const char *path, const char *mode)
{
	det_init();
	struct fopen_args a = {{AT_FDCWD, 0, 0, NULL, path, 0, 0, NULL}, mode, NULL};
	int64_t fd = fd_event((uint32_t)AT_FDCWD, DET_RA(), do_fopen, &a, 0, FDC_UNKNOWN);
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


/* ------------------------------------------------------------------ */
/* file metadata: an input like a read (make decides what to rebuild from
 * mtimes); replay returns what the recording saw, without looking */

struct stat_call {
	int which;
	int ver, fd, flags;
	unsigned mask;
	const char *path;
	void *buf;
};

enum { ST_STAT, ST_LSTAT, ST_FSTAT, ST_FSTATAT, ST_XSTAT, ST_LXSTAT, ST_FXSTAT, ST_FXSTATAT, ST_STATX };

static int perform_stat(struct stat_call *c)
{
	switch (c->which) {
	case ST_STAT: return real.stat(c->path, c->buf);
	case ST_LSTAT: return real.lstat(c->path, c->buf);
	case ST_FSTAT: return real.fstat(c->fd, c->buf);
	case ST_FSTATAT: return real.fstatat(c->fd, c->path, c->buf, c->flags);
	case ST_XSTAT: return real.__xstat(c->ver, c->path, c->buf);
	case ST_LXSTAT: return real.__lxstat(c->ver, c->path, c->buf);
	case ST_FXSTAT: return real.__fxstat(c->ver, c->fd, c->buf);
	case ST_FXSTATAT: return real.__fxstatat(c->ver, c->fd, c->path, c->buf, c->flags);
	default: return real.statx(c->fd, c->path, c->flags, c->mask, c->buf);
	}
}

/* aux of a metadata event: the fd, or a hash of what names the file (FNV-1a). */
static uint32_t name_aux(int dirfd, const char *path, int extra)
{
	uint32_t h = 2166136261u ^ (uint32_t)dirfd ^ ((uint32_t)extra << 16);
	for (const char *p = path ? path : ""; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	return h | 1u << 31;
}

/* The data of a metadata event: the struct the call filled (on success),
 * then the path it named, so that a replay that names another file says
 * which two. */
#define STAT_PATH_MAX 200

static __attribute__((noreturn)) void diverge_path(struct det_op *op, const char *call, const char *path,
						   const char *recorded)
{
	static __thread char msg[200];
	snprintf(msg, sizeof(msg), "%s(%.70s) where the recording had %s(%.70s)", call, path ? path : "", call,
		 recorded);
	det_ops.diverge(op->t, DET_DIV_RESULT, op->kind, NULL, op->ra, msg);
}

/* Replay: the recorded data holds n bytes of result, then the name the call
 * was asked about (plen bytes); a call about another name diverges. */
static void check_name(struct det_op *op, const char *call, const char *path, size_t plen, size_t n)
{
	const char *data = det_replay_data(op->rec);
	if (op->rec->data_len >= n && op->rec->data_len - n == plen && memcmp(data + n, path ? path : "", plen) == 0)
		return;
	char recorded[STAT_PATH_MAX + 1];
	size_t rl = op->rec->data_len > n ? op->rec->data_len - n : 0;
	memcpy(recorded, data + n, rl < STAT_PATH_MAX ? rl : STAT_PATH_MAX);
	recorded[rl < STAT_PATH_MAX ? rl : STAT_PATH_MAX] = 0;
	diverge_path(op, call, path, recorded);
}

static int det_stat(struct stat_call *c, uint32_t aux, size_t size, uint64_t ra)
{
	DET_ENTER(t);
	if (!t)
		return perform_stat(c);
	struct det_op op = {0};
	int64_t r;
	size_t plen = c->path ? strnlen(c->path, STAT_PATH_MAX) : 0;
	if (!det_input_begin(&op, t, DET_EV_STAT, c->path ? 0 : aux, ra)) {
		r = perform_stat(c) == 0 ? 0 : -errno;
		uint8_t buf[sizeof(struct statx) + STAT_PATH_MAX];
		size_t n = r == 0 ? size : 0;
		if (n)
			memcpy(buf, c->buf, n);
		memcpy(buf + n, c->path ? c->path : "", plen);
		det_input_end(&op, r, buf, (uint32_t)(n + plen));
	} else {
		r = op.rec->result;
		size_t n = r == 0 ? size : 0;
		const char *data = det_replay_data(op.rec);
		check_name(&op, "stat", c->path, plen, n);
		if (n)
			memcpy(c->buf, data, n);
		det_input_end(&op, r, NULL, 0);
	}
	det_leave(t);
	return (int)ret_of(r);
}

#define DET_STAT(aux, size, ...)                                                                  \
	do {                                                                                       \
		det_init();                                                                        \
		struct stat_call c = {__VA_ARGS__};                                                \
		return det_stat(&c, aux, size, DET_RA());                                          \
	} while (0)

DET_IMPL int det_impl_stat(const char *path, struct stat *st)
{
	DET_STAT(name_aux(AT_FDCWD, path, 0), sizeof(*st), .which = ST_STAT, .path = path, .buf = st);
}

DET_IMPL int det_impl_lstat(const char *path, struct stat *st)
{
	DET_STAT(name_aux(AT_FDCWD, path, 1), sizeof(*st), .which = ST_LSTAT, .path = path, .buf = st);
}

DET_IMPL int det_impl_fstat(int fd, struct stat *st)
{
	DET_STAT((uint32_t)fd & 0x7fffffff, sizeof(*st), .which = ST_FSTAT, .fd = fd, .buf = st);
}

DET_IMPL int det_impl_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	DET_STAT(name_aux(dirfd, path, flags), sizeof(*st), .which = ST_FSTATAT, .fd = dirfd, .path = path,
		 .buf = st, .flags = flags);
}

DET_IMPL int det_impl___xstat(int ver, const char *path, struct stat *st)
{
	DET_STAT(name_aux(AT_FDCWD, path, 0), sizeof(*st), .which = ST_XSTAT, .ver = ver, .path = path, .buf = st);
}

DET_IMPL int det_impl___lxstat(int ver, const char *path, struct stat *st)
{
	DET_STAT(name_aux(AT_FDCWD, path, 1), sizeof(*st), .which = ST_LXSTAT, .ver = ver, .path = path,
		 .buf = st);
}

DET_IMPL int det_impl___fxstat(int ver, int fd, struct stat *st)
{
	DET_STAT((uint32_t)fd & 0x7fffffff, sizeof(*st), .which = ST_FXSTAT, .ver = ver, .fd = fd, .buf = st);
}

DET_IMPL int det_impl___fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags)
{
	DET_STAT(name_aux(dirfd, path, flags), sizeof(*st), .which = ST_FXSTATAT, .ver = ver, .fd = dirfd,
		 .path = path, .buf = st, .flags = flags);
}

DET_IMPL int det_impl_statx(int dirfd, const char *path, int flags, unsigned int mask, struct statx *stx)
{
	DET_STAT(name_aux(dirfd, path, flags), sizeof(*stx), .which = ST_STATX, .fd = dirfd, .path = path,
		 .buf = stx, .flags = flags, .mask = mask);
}

static int64_t do_access(int dirfd, const char *path, int mode, int flags)
{
	int r = flags < 0 ? real.euidaccess(path, mode) : real.faccessat(dirfd, path, mode, flags);
	return r == 0 ? 0 : -errno;
}

static int det_access(int dirfd, const char *path, int mode, int flags, uint64_t ra)
{
	det_init();
	DET_ENTER(t);
	if (!t)
		return (int)ret_of(do_access(dirfd, path, mode, flags));
	struct det_op op = {0};
	int64_t r;
	if (!det_input_begin(&op, t, DET_EV_ACCESS, name_aux(dirfd, path, mode << 8 | (flags & 0xff)), ra)) {
		r = do_access(dirfd, path, mode, flags);
		det_input_end(&op, r, NULL, 0);
	} else {
		r = op.rec->result;
		det_input_end(&op, r, NULL, 0);
	}
	det_leave(t);
	return (int)ret_of(r);
}

DET_IMPL int det_impl_access(const char *path, int mode)
{
	return det_access(AT_FDCWD, path, mode, 0, DET_RA());
}

DET_IMPL int det_impl_faccessat(int dirfd, const char *path, int mode, int flags)
{
	return det_access(dirfd, path, mode, flags, DET_RA());
}

DET_IMPL int det_impl_euidaccess(const char *path, int mode)
{
	return det_access(AT_FDCWD, path, mode, -1, DET_RA());
}

/* ------------------------------------------------------------------ */
/* temporary names: libc draws them from randomness det cannot see (its
 * own internal calls); the name is recorded, and replay makes that file */

static int det_mktemp(char *tmpl, int suffixlen, int flags, int dir, uint64_t ra)
{
	det_init();
	DET_ENTER(t);
	if (!t)
		return dir ? (real.mkdtemp(tmpl) ? 0 : -1) : real.mkostemps(tmpl, suffixlen, flags);
	size_t len = strlen(tmpl);
	struct det_op op = {0};
	int64_t r;
	if (!det_input_begin(&op, t, DET_EV_TEMP_NAME, (uint32_t)len, ra)) {
		r = dir ? (real.mkdtemp(tmpl) ? 0 : -errno) : res_of(real.mkostemps(tmpl, suffixlen, flags));
		det_input_end(&op, r, r >= 0 ? tmpl : NULL, r >= 0 ? (uint32_t)len : 0);
	} else {
		r = op.rec->result;
		if (r >= 0) {
			if (op.rec->data_len != len)
				diverge_data(&op, "a temporary name of another length than recorded");
			memcpy(tmpl, det_replay_data(op.rec), len);
			long made = dir ? det_sys(SYS_mkdir, (long)tmpl, 0700, 0, 0, 0, 0)
					: det_sys(SYS_openat, AT_FDCWD, (long)tmpl,
						  O_RDWR | O_CREAT | O_EXCL | (flags & ~O_ACCMODE), 0600, 0, 0);
			if (made < 0)
				diverge_path(&op, dir ? "mkdtemp" : "mkstemp", tmpl, "a name that was free");
			if (!dir && move_fd((int)made, (int)r) != (int)r)
				diverge_data(&op, "a temporary file cannot get its recorded descriptor number");
		}
		det_input_end(&op, r, NULL, 0);
	}
	det_leave(t);
	return (int)ret_of(r);
}

DET_IMPL int det_impl_mkstemp(char *tmpl)
{
	return det_mktemp(tmpl, 0, 0, 0, DET_RA());
}

DET_IMPL int det_impl_mkostemp(char *tmpl, int flags)
{
	return det_mktemp(tmpl, 0, flags, 0, DET_RA());
}

DET_IMPL int det_impl_mkstemps(char *tmpl, int suffixlen)
{
	return det_mktemp(tmpl, suffixlen, 0, 0, DET_RA());
}

DET_IMPL int det_impl_mkostemps(char *tmpl, int suffixlen, int flags)
{
	return det_mktemp(tmpl, suffixlen, flags, 0, DET_RA());
}

DET_IMPL char *det_impl_mkdtemp(char *tmpl)
{
	return det_mktemp(tmpl, 0, 0, 1, DET_RA()) == 0 ? tmpl : NULL;
}

/* ------------------------------------------------------------------ */
/* directory listings: what a directory holds changes between runs (det's
 * own trace files beside the program, a .pyc the recorded run wrote), and a
 * program acts on it, so each entry readdir returns is recorded and replay
 * returns the recorded ones (the stream itself is not read). */

struct dir_entry_rec {
	uint64_t ino;
	int64_t off;
	uint8_t type;
	char name[256];
} __attribute__((packed));

/* Replayed entries live in a few per-thread buffers used in turn: an entry
 * stays valid while the thread reads a few other streams (POSIX: until the
 * next readdir of the same stream). */
#define DIRENT_BUFS 4
static __thread struct dirent replayed_dirents[DIRENT_BUFS];
static __thread unsigned replayed_next;

DET_IMPL struct dirent *det_impl_readdir(DIR *dir)
{
	det_init();
	DET_ENTER(t);
	if (!t)
		return real.readdir(dir);
	uint64_t ra = DET_RA();
	struct det_op op = {0};
	struct dirent *d;
	if (!det_input_begin(&op, t, DET_EV_DIR_READ, 0, ra)) {
		int saved = errno;
		errno = 0;
		d = real.readdir(dir);
		int e = errno;
		if (d) {
			struct dir_entry_rec r = {d->d_ino, d->d_off, d->d_type, {0}};
			size_t n = strnlen(d->d_name, sizeof(r.name) - 1);
			memcpy(r.name, d->d_name, n);
			det_input_end(&op, 1, &r, (uint32_t)(offsetof(struct dir_entry_rec, name) + n));
		} else {
			det_input_end(&op, e ? -e : 0, NULL, 0);
		}
		det_leave(t);
		errno = d || !e ? saved : e; /* the end leaves errno as it was */
		return d;
	}
	int64_t res = op.rec->result;
	d = NULL;
	uint32_t len = op.rec->data_len, head = offsetof(struct dir_entry_rec, name);
	if (res == 1) {
		if (len <= head || len > sizeof(struct dir_entry_rec))
			diverge_data(&op, "a directory entry of another size than det records");
		struct dir_entry_rec r;
		memcpy(&r, det_replay_data(op.rec), len);
		d = &replayed_dirents[replayed_next++ % DIRENT_BUFS];
		memset(d, 0, sizeof(*d));
		d->d_ino = r.ino;
		d->d_off = r.off;
		d->d_type = r.type;
		memcpy(d->d_name, r.name, len - head);
		d->d_reclen = (unsigned short)((offsetof(struct dirent, d_name) + len - head + 1 + 7) & ~7u);
	}
	det_input_end(&op, res, NULL, 0);
	det_leave(t);
	if (res < 0)
		errno = (int)-res;
	return d;
}

/* ------------------------------------------------------------------ */
/* resolved names: realpath and readlink ask the file system what a name
 * is (glibc's realpath reads links inside libc, past det), and programs act
 * on the answer: whether the file they are about to write exists yet
 * (ImageMagick resolves its output's name), where /proc/self/exe points. */

enum { PATH_REAL = 0, PATH_LINK = 1 };

/* Record: `out` holds the result's bytes (n of them, n = the result when
 * >= 0); they are logged, then the name asked about. Replay: the recorded
 * bytes are copied into `out` (at most cap) and the name checked. */
/* The call itself: the length of what it put in out, or -errno. */
static int64_t resolve(uint32_t which, int dirfd, const char *path, char *out, size_t cap)
{
	if (which == PATH_REAL)
		return real.realpath(path, out) ? (int64_t)strnlen(out, PATH_MAX - 1) : -errno;
	ssize_t r = real.readlinkat(dirfd, path, out, cap);
	return r >= 0 ? r : -errno;
}

static int64_t path_event(uint32_t which, int dirfd, const char *path, char *out, size_t cap, uint64_t ra)
{
	DET_ENTER(t);
	if (!t)
		return resolve(which, dirfd, path, out, cap);
	struct det_op op = {0};
	int64_t r;
	size_t plen = path ? strnlen(path, PATH_MAX) : 0;
	if (!det_input_begin(&op, t, DET_EV_PATH_RESOLVE, which, ra)) {
		r = resolve(which, dirfd, path, out, cap);
		size_t n = r > 0 ? (size_t)r : 0;
		char *buf = malloc(n + plen + 1);
		if (buf) {
			memcpy(buf, out, n);
			memcpy(buf + n, path ? path : "", plen);
		}
		det_input_end(&op, r, buf, buf ? (uint32_t)(n + plen) : 0);
		free(buf);
	} else {
		r = op.rec->result;
		size_t n = r > 0 ? (size_t)r : 0;
		check_name(&op, which == PATH_REAL ? "realpath" : "readlink", path, plen, n);
		if (n > cap)
			diverge_data(&op, "a resolved name longer than the buffer it goes in");
		memcpy(out, det_replay_data(op.rec), n);
		if (which == PATH_REAL && r >= 0)
			out[n] = 0;
		det_input_end(&op, r, NULL, 0);
	}
	det_leave(t);
	return r;
}

DET_IMPL char *det_impl_realpath(const char *path, char *resolved)
{
	det_init();
	char buf[PATH_MAX];
	int64_t r = path_event(PATH_REAL, AT_FDCWD, path, resolved ? resolved : buf, PATH_MAX - 1, DET_RA());
	if (r < 0) {
		errno = (int)-r;
		return NULL;
	}
	return resolved ? resolved : strdup(buf);
}

DET_IMPL char *det_impl___realpath_chk(const char *path, char *resolved, size_t resolvedlen)
{
	if (resolved && resolvedlen < PATH_MAX)
		abort(); /* what glibc's fortify check does */
	return realpath(path, resolved);
}

DET_IMPL char *det_impl_canonicalize_file_name(const char *path)
{
	return realpath(path, NULL);
}

DET_IMPL ssize_t det_impl_readlinkat(int dirfd, const char *path, char *buf, size_t n)
{
	det_init();
	return (ssize_t)ret_of(path_event(PATH_LINK, dirfd, path, buf, n, DET_RA()));
}

DET_IMPL ssize_t det_impl_readlink(const char *path, char *buf, size_t n)
{
	return readlinkat(AT_FDCWD, path, buf, n);
}

DET_IMPL ssize_t det_impl___readlink_chk(const char *path, char *buf, size_t n, size_t buflen)
{
	if (n > buflen)
		abort(); /* what glibc's fortify check does */
	return readlinkat(AT_FDCWD, path, buf, n);
}

DET_IMPL ssize_t det_impl___readlinkat_chk(int dirfd, const char *path, char *buf, size_t n, size_t buflen)
{
	if (n > buflen)
		abort(); /* what glibc's fortify check does */
	return readlinkat(dirfd, path, buf, n);
}

/* ------------------------------------------------------------------ */
/* readiness */

static int det_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout, const sigset_t *mask,
		     uint64_t ra)
{
	DET_ENTER(t);
	if (!t)
		return real.ppoll(fds, n, timeout, mask);
	struct det_op op = {0};
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_POLL, (uint32_t)n, ra)) {
		res = op.rec->result;
		const short *rev = det_replay_data(op.rec);
		for (nfds_t i = 0; i < n && (i + 1) * sizeof(short) <= op.rec->data_len; i++)
			fds[i].revents = rev[i];
		det_input_end(&op, res, NULL, 0);
	} else {
		res = res_of(BLOCKING(&op, real.ppoll(fds, n, timeout, mask)));
		if (res >= 0)
			for (nfds_t i = 0; i < n; i++)
				det_ops.rec_data(t, &fds[i].revents, sizeof(short));
		det_ops.rec_input(&op, res, res >= 0 ? (uint32_t)(n * sizeof(short)) : 0);
	}
	int e = errno;
	det_leave(t);
	errno = e;
	return (int)ret_of(res);
}

DET_IMPL int det_impl_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout, const sigset_t *mask)
{
	return det_ppoll(fds, n, timeout, mask, DET_RA());
}

DET_IMPL int det_impl_poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	struct timespec ts = {timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
	return det_ppoll(fds, n, timeout_ms < 0 ? NULL : &ts, NULL, DET_RA());
}

DET_IMPL int det_impl___poll_chk(struct pollfd *fds, nfds_t n, int timeout_ms, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n)
		abort();
	struct timespec ts = {timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
	return det_ppoll(fds, n, timeout_ms < 0 ? NULL : &ts, NULL, DET_RA());
}

DET_IMPL int det_impl_pselect(int nfds, fd_set *r, fd_set *w, fd_set *x, const struct timespec *timeout, const sigset_t *mask)
{
	DET_ENTER(t);
	if (!t)
		return real.pselect(nfds, r, w, x, timeout, mask);
	struct det_op op = {0};
	int64_t res;
	fd_set *sets[3] = {r, w, x};
	if (det_input_begin(&op, t, DET_EV_SELECT, (uint32_t)nfds, DET_RA())) {
		res = op.rec->result;
		if (res >= 0 && op.rec->data_len == 3 * sizeof(fd_set))
			for (int i = 0; i < 3; i++)
				if (sets[i])
					memcpy(sets[i], (const char *)det_replay_data(op.rec) + i * sizeof(fd_set),
					       sizeof(fd_set));
		det_input_end(&op, res, NULL, 0);
	} else {
		res = res_of(BLOCKING(&op, real.pselect(nfds, r, w, x, timeout, mask)));
		fd_set out[3];
		for (int i = 0; i < 3; i++) {
			if (sets[i])
				out[i] = *sets[i];
			else
				FD_ZERO(&out[i]);
		}
		det_input_end(&op, res, out, res >= 0 ? sizeof(out) : 0);
	}
	int e = errno;
	det_leave(t);
	errno = e;
	return (int)ret_of(res);
}

DET_IMPL int det_impl_select(int nfds, fd_set *r, fd_set *w, fd_set *x, struct timeval *tv)
{
	struct timespec ts, *tsp = NULL;
	if (tv) {
		ts.tv_sec = tv->tv_sec;
		ts.tv_nsec = tv->tv_usec * 1000;
		tsp = &ts;
	}
	int res = pselect(nfds, r, w, x, tsp, NULL);
	if (tv && res >= 0 && det_replaying()) /* Linux leaves the time not slept */
		tv->tv_sec = tv->tv_usec = 0;
	return res;
}

DET_IMPL int det_impl_epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *mask)
{
	DET_ENTER(t);
	if (!t)
		return real.epoll_pwait(epfd, ev, max, timeout, mask);
	struct det_op op = {0};
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_EPOLL_WAIT, (uint32_t)epfd, DET_RA())) {
		res = op.rec->result;
		if (res > 0)
			memcpy(ev, det_replay_data(op.rec),
			       op.rec->data_len < (uint32_t)max * sizeof(*ev) ? op.rec->data_len : max * sizeof(*ev));
		det_input_end(&op, res, NULL, 0);
	} else {
		res = res_of(BLOCKING(&op, real.epoll_pwait(epfd, ev, max, timeout, mask)));
		det_input_end(&op, res, ev, res > 0 ? (uint32_t)(res * sizeof(*ev)) : 0);
	}
	int e = errno;
	det_leave(t);
	errno = e;
	return (int)ret_of(res);
}

DET_IMPL int det_impl_epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	return epoll_pwait(epfd, ev, max, timeout, NULL);
}

/* ------------------------------------------------------------------ */
/* identity and machine */

static int64_t simple_input(uint16_t kind, uint32_t aux, int64_t (*get)(uint32_t), uint64_t ra, int *passed)
{
	DET_ENTER(t);
	if (!t) {
		*passed = 1;
		return 0;
	}
	*passed = 0;
	struct det_op op = {0};
	int64_t res = det_input_begin(&op, t, kind, aux, ra) ? op.rec->result : get(aux);
	det_input_end(&op, res, NULL, 0);
	det_leave(t);
	return res;
}

static int64_t get_pid(uint32_t a)
{
	(void)a;
	return real.getpid();
}

static int64_t get_ppid(uint32_t a)
{
	(void)a;
	return real.getppid();
}

static int64_t get_cpu(uint32_t a)
{
	(void)a;
	int r = real.sched_getcpu();
	return r < 0 ? -(int64_t)errno : r;
}

static int64_t get_tid(uint32_t a)
{
	(void)a;
	return real.gettid();
}

static int64_t get_sysconf(uint32_t a)
{
	return real.sysconf((int)a);
}

/* Names above any _SC_* value stand for the get_* functions. */
enum { NAME_NPROCS = 100000, NAME_NPROCS_CONF, NAME_PHYS_PAGES, NAME_AVPHYS_PAGES };

static int64_t get_nprocs_of(uint32_t a)
{
	switch (a) {
	case NAME_NPROCS:
		return real.get_nprocs();
	case NAME_NPROCS_CONF:
		return real.get_nprocs_conf();
	case NAME_PHYS_PAGES:
		return real.get_phys_pages();
	default:
		return real.get_avphys_pages();
	}
}

static int64_t do_yield(uint32_t a)
{
	(void)a;
	return real.sched_yield() ? -(int64_t)errno : 0;
}

DET_IMPL pid_t det_impl_getpid(void)
{
	int passed;
	int64_t r = simple_input(DET_EV_GETPID, 0, get_pid, DET_RA(), &passed);
	return passed ? real.getpid() : (pid_t)r;
}

DET_IMPL pid_t det_impl_getppid(void)
{
	int passed;
	int64_t r = simple_input(DET_EV_GETPPID, 0, get_ppid, DET_RA(), &passed);
	return passed ? real.getppid() : (pid_t)r;
}

DET_IMPL pid_t det_impl_gettid(void)
{
	int passed;
	int64_t r = simple_input(DET_EV_GETTID, 0, get_tid, DET_RA(), &passed);
	return passed ? real.gettid() : (pid_t)r;
}

/* Every name: most are constants, but some (free memory, processors
 * online) change from run to run and steer programs (sort's buffer size). */
DET_IMPL long det_impl_sysconf(int name)
{
	det_init();
	int passed;
	int64_t r = simple_input(DET_EV_SYSCONF, (uint32_t)name, get_sysconf, DET_RA(), &passed);
	return passed ? real.sysconf(name) : (long)r;
}

DET_IMPL int det_impl_get_nprocs(void)
{
	int passed;
	int64_t r = simple_input(DET_EV_SYSCONF, NAME_NPROCS, get_nprocs_of, DET_RA(), &passed);
	return passed ? real.get_nprocs() : (int)r;
}

DET_IMPL int det_impl_get_nprocs_conf(void)
{
	int passed;
	int64_t r = simple_input(DET_EV_SYSCONF, NAME_NPROCS_CONF, get_nprocs_of, DET_RA(), &passed);
	return passed ? real.get_nprocs_conf() : (int)r;
}

DET_IMPL long det_impl_get_phys_pages(void)
{
	int passed;
	int64_t r = simple_input(DET_EV_SYSCONF, NAME_PHYS_PAGES, get_nprocs_of, DET_RA(), &passed);
	return passed ? real.get_phys_pages() : (long)r;
}

DET_IMPL long det_impl_get_avphys_pages(void)
{
	int passed;
	int64_t r = simple_input(DET_EV_SYSCONF, NAME_AVPHYS_PAGES, get_nprocs_of, DET_RA(), &passed);
	return passed ? real.get_avphys_pages() : (long)r;
}

/* A call that fills one struct: its result and the struct are the input. */
#define STRUCT_INPUT(kind, aux, ptr, call, ok)                                       \
	do {                                                                      \
		DET_ENTER(t);                                                     \
		if (!t)                                                           \
			return call;                                              \
		struct det_op op = {0};                                           \
		int64_t res;                                                      \
		if (det_input_begin(&op, t, kind, aux, DET_RA())) {               \
			res = op.rec->result;                                     \
			if (ok && op.rec->data_len == sizeof(*ptr))               \
				memcpy(ptr, det_replay_data(op.rec), sizeof(*ptr)); \
			det_input_end(&op, res, NULL, 0);                         \
		} else {                                                          \
			res = call;                                               \
			res = res == -1 ? -(int64_t)errno : res;                  \
			det_input_end(&op, res, ptr, ok ? sizeof(*ptr) : 0);      \
		}                                                                 \
		det_leave(t);                                                     \
		return ret_of(res);                                               \
	} while (0)

DET_IMPL int det_impl_sysinfo(struct sysinfo *info)
{
	STRUCT_INPUT(DET_EV_SYSINFO, 0, info, real.sysinfo(info), res == 0);
}

DET_IMPL int det_impl_sched_getcpu(void)
{
	int passed;
	int64_t r = simple_input(DET_EV_GETCPU, 0, get_cpu, DET_RA(), &passed);
	return passed ? real.sched_getcpu() : (int)ret_of(r);
}

DET_IMPL int det_impl_getrusage(int who, struct rusage *usage)
{
	STRUCT_INPUT(DET_EV_RUSAGE, (uint32_t)who, usage, real.getrusage(who, usage), res == 0 && usage);
}

DET_IMPL clock_t det_impl_times(struct tms *buf)
{
	STRUCT_INPUT(DET_EV_TIMES, 0, buf, real.times(buf), res >= 0 && buf);
}

DET_IMPL int det_impl_sched_yield(void)
{
	struct det_thread *t = det_replaying() ? det_enter() : NULL;
	if (t) {
		int event = det_ops.replay_yield(t);
		det_leave(t);
		if (!event)
			return real.sched_yield();
	}
	int passed;
	int64_t r = simple_input(DET_EV_SCHED_YIELD, 0, do_yield, DET_RA(), &passed);
	return passed ? real.sched_yield() : (int)ret_of(r);
}

/* ------------------------------------------------------------------ */
/* sleeping: recorded, and skipped in replay */

static int det_sleep(struct timespec *rem, int (*perform)(void *), void *ctx, uint64_t ra, int *passed)
{
	DET_ENTER(t);
	if (!t) {
		*passed = 1;
		return 0;
	}
	*passed = 0;
	struct det_op op = {0};
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_SLEEP, 0, ra)) {
		res = op.rec->result;
		if (rem && op.rec->data_len == sizeof(*rem))
			memcpy(rem, det_replay_data(op.rec), sizeof(*rem));
		det_input_end(&op, res, NULL, 0);
	} else {
		res = BLOCKING(&op, perform(ctx));
		det_input_end(&op, res, rem, res == -EINTR && rem ? sizeof(*rem) : 0);
	}
	det_leave(t);
	return (int)res;
}

struct sleep_args {
	clockid_t clock;
	int flags;
	const struct timespec *req;
	struct timespec *rem;
};

static int do_nanosleep(void *p)
{
	struct sleep_args *a = p;
	return real.nanosleep(a->req, a->rem) ? -errno : 0;
}

static int do_clock_nanosleep(void *p)
{
	struct sleep_args *a = p;
	int r = real.clock_nanosleep(a->clock, a->flags, a->req, a->rem);
	return r ? -r : 0; /* clock_nanosleep returns the error number */
}

DET_IMPL int det_impl_nanosleep(const struct timespec *req, struct timespec *rem)
{
	struct sleep_args a = {0, 0, req, rem};
	int passed;
	int r = det_sleep(rem, do_nanosleep, &a, DET_RA(), &passed);
	if (passed)
		return real.nanosleep(req, rem);
	return (int)ret_of(r);
}

DET_IMPL int det_impl_clock_nanosleep(clockid_t clock, int flags, const struct timespec *req, struct timespec *rem)
{
	struct sleep_args a = {clock, flags, req, rem};
	int passed;
	int r = det_sleep(rem, do_clock_nanosleep, &a, DET_RA(), &passed);
	if (passed)
		return real.clock_nanosleep(clock, flags, req, rem);
	return -r;
}

DET_IMPL int det_impl_usleep(useconds_t us)
{
	struct timespec req = {us / 1000000, (long)(us % 1000000) * 1000};
	return nanosleep(&req, NULL);
}

DET_IMPL unsigned int det_impl_sleep(unsigned int s)
{
	struct timespec req = {s, 0}, rem = {0, 0};
	if (nanosleep(&req, &rem) == 0)
		return 0;
	return (unsigned int)rem.tv_sec + (rem.tv_nsec > 0);
}

/* ------------------------------------------------------------------ */
/* syscall(): the same calls by number; inputs det cannot replay stop here */

static const char *syscall_name(long nr)
{
	switch (nr) {
#define NAME(x)                                                                                    \
	case SYS_##x:                                                                              \
		return "SYS_" #x;
		NAME(recvmmsg) NAME(io_uring_setup) NAME(io_uring_enter) NAME(io_submit) NAME(io_getevents)
		NAME(epoll_wait) NAME(epoll_pwait) NAME(ppoll) NAME(pselect6) NAME(select) NAME(preadv)
		NAME(preadv2) NAME(accept) NAME(accept4) NAME(fork) NAME(vfork) NAME(clone) NAME(clone3)
		NAME(execve) NAME(execveat) NAME(rt_sigaction)
#undef NAME
	}
	return "?";
}

EXPORT long syscall(long nr, ...)
{
	va_list ap;
	long a[6];
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	det_init();
	if (!det_mode)
		return real.syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	switch (nr) {
	case SYS_gettid:
		return gettid();
	case SYS_getpid:
		return getpid();
	case SYS_getppid:
		return getppid();
	case SYS_getrandom:
		return getrandom((void *)a[0], (size_t)a[1], (unsigned)a[2]);
	case SYS_clock_gettime:
		return clock_gettime((clockid_t)a[0], (struct timespec *)a[1]);
	case SYS_gettimeofday:
		return gettimeofday((struct timeval *)a[0], (void *)a[1]);
	case SYS_time:
		return time((time_t *)a[0]);
	case SYS_read:
		return read((int)a[0], (void *)a[1], (size_t)a[2]);
	case SYS_pread64:
		return pread((int)a[0], (void *)a[1], (size_t)a[2], (off_t)a[3]);
	case SYS_readv:
		return readv((int)a[0], (const struct iovec *)a[1], (int)a[2]);
	case SYS_recvfrom:
		return recvfrom((int)a[0], (void *)a[1], (size_t)a[2], (int)a[3], (struct sockaddr *)a[4],
				(socklen_t *)a[5]);
	case SYS_recvmsg:
		return recvmsg((int)a[0], (struct msghdr *)a[1], (int)a[2]);
	case SYS_poll:
		return poll((struct pollfd *)a[0], (nfds_t)a[1], (int)a[2]);
	case SYS_sched_yield:
		return sched_yield();
	case SYS_nanosleep:
		return nanosleep((const struct timespec *)a[0], (struct timespec *)a[1]);
	case SYS_close:
		return close((int)a[0]);
	case SYS_fork:
	case SYS_vfork:
	case SYS_clone:
	case SYS_clone3: {
		char call[40];
		snprintf(call, sizeof(call), "syscall(%s)", syscall_name(nr));
		return det_clone_syscall(nr, a, call, DET_RA());
	}
	case SYS_recvmmsg:
	case SYS_io_uring_setup:
	case SYS_io_uring_enter:
	case SYS_io_submit:
	case SYS_io_getevents:
	case SYS_epoll_wait:
	case SYS_epoll_pwait:
	case SYS_ppoll:
	case SYS_pselect6:
	case SYS_select:
	case SYS_preadv:
	case SYS_preadv2:
	case SYS_accept:
	case SYS_accept4:
	case SYS_execve:
	case SYS_execveat:
	case SYS_rt_sigaction:
		if (det_enter())
			det_fatal("syscall(%s) is not supported by det: its result would not replay (use the libc "
				  "function, which det records)",
				  syscall_name(nr));
		break;
	}
	return real.syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
