/*
 * preload/fsmeta.c - file-system metadata: stat and access, temporary
 * names, directory listings, resolved names (realpath, readlink): inputs
 * like reads, returned in replay without looking.
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

/* Replay makes the recorded temporary name; the recorded run (or an
 * earlier replay) often left it behind: programs that crash, or never
 * unlink what mkstemp made. What is there is taken as that leftover when
 * it is this user's and holds nothing det would lose by making it again: a
 * regular file is replaced, an empty directory reused. Anything else stays,
 * and the replay stops naming it. */
static long make_temp_again(const char *name, int dir, int flags)
{
	long made = dir ? det_sys(SYS_mkdir, (long)name, 0700, 0, 0, 0, 0)
			: det_sys(SYS_openat, AT_FDCWD, (long)name, O_RDWR | O_CREAT | O_EXCL | (flags & ~O_ACCMODE),
				  0600, 0, 0);
	if (made != -EEXIST)
		return made;
	struct stat st;
	if (det_sys(SYS_newfstatat, AT_FDCWD, (long)name, (long)&st, AT_SYMLINK_NOFOLLOW, 0, 0) != 0 ||
	    st.st_uid != (uid_t)det_sys(SYS_geteuid, 0, 0, 0, 0, 0, 0))
		return made;
	if (dir)
		return S_ISDIR(st.st_mode) && det_sys(SYS_rmdir, (long)name, 0, 0, 0, 0, 0) == 0
			       ? det_sys(SYS_mkdir, (long)name, 0700, 0, 0, 0, 0)
			       : made;
	if (!S_ISREG(st.st_mode) || det_sys(SYS_unlink, (long)name, 0, 0, 0, 0, 0) != 0)
		return made;
	return det_sys(SYS_openat, AT_FDCWD, (long)name, O_RDWR | O_CREAT | O_EXCL | (flags & ~O_ACCMODE), 0600, 0,
		       0);
}

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
			long made = make_temp_again(tmpl, dir, flags);
			if (made < 0) {
				static __thread char msg[STAT_PATH_MAX + 160];
				snprintf(msg, sizeof(msg), "%s(%.*s): %s", dir ? "mkdtemp" : "mkstemp", STAT_PATH_MAX, tmpl,
					 made == -EEXIST ? "the recorded name is taken by what det does not remove (another "
							   "user's, or a directory with files in it)"
							 : strerror((int)-made));
				det_ops.diverge(op.t, DET_DIV_RESULT, op.kind, NULL, op.ra, msg);
			}
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
