/*
 * preload/dirs.c - the directory readers glibc builds on its own internal
 * readdir (readdir_r, scandir, nftw, ftw), which det never sees: remade
 * here on the readdir, stat and lstat entries, whose results are recorded
 * (fsmeta.c), so a directory that changed between the recording and a
 * replay is listed as it was.
 *
 * Rules of this file:
 *  - Front-ends, not entries: they run on the program's stack, where they
 *    call the program's own callbacks (a filter, a comparison, nftw's
 *    function) directly, and reach det only through exported entries.
 *  - Nothing here depends on det's mode: the same code runs recording and
 *    replaying, so what it leaves on the program's stack is the same.
 *  - glibc's behaviour is kept where a program can see it: scandir's
 *    order and errors, readdir_r's result and its errno convention.
 */
#include "runtime.h"

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* an entry's size, its name included (d_reclen is the stream's, not ours) */
static size_t dirent_size(const struct dirent *d)
{
	return offsetof(struct dirent, d_name) + strlen(d->d_name) + 1;
}

static int read_entry(DIR *dir, struct dirent *entry, struct dirent **result)
{
	int saved = errno;
	errno = 0;
	struct dirent *d = readdir(dir);
	int e = errno;
	errno = saved;
	if (!d) {
		*result = NULL;
		return e;
	}
	memcpy(entry, d, dirent_size(d));
	*result = entry;
	return 0;
}

EXPORT int readdir_r(DIR *dir, struct dirent *entry, struct dirent **result)
{
	return read_entry(dir, entry, result);
}

EXPORT int readdir64_r(DIR *dir, struct dirent64 *entry, struct dirent64 **result)
{
	return read_entry(dir, (struct dirent *)entry, (struct dirent **)result);
}

/* scandir and scandirat: the stream's entries the filter keeps, copied,
 * sorted by compar; -1 and errno on any failure, nothing left allocated. */
static int scan_stream(DIR *dir, struct dirent ***list, int (*filter)(const struct dirent *),
		       int (*compar)(const struct dirent **, const struct dirent **))
{
	struct dirent **v = NULL;
	size_t n = 0, cap = 0;
	int saved = errno, e = 0;
	for (;;) {
		errno = 0;
		struct dirent *d = readdir(dir);
		if (!d) {
			e = errno;
			break;
		}
		errno = 0;
		if (filter && !filter(d))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			struct dirent **bigger = realloc(v, cap * sizeof(*v));
			if (!bigger) {
				e = ENOMEM;
				break;
			}
			v = bigger;
		}
		size_t size = dirent_size(d);
		struct dirent *copy = malloc(size > sizeof(*copy) ? size : sizeof(*copy));
		if (!copy) {
			e = ENOMEM;
			break;
		}
		memcpy(copy, d, size);
		copy->d_reclen = (unsigned short)size;
		v[n++] = copy;
	}
	closedir(dir);
	if (e) {
		while (n)
			free(v[--n]);
		free(v);
		errno = e;
		return -1;
	}
	if (compar && n > 1)
		qsort(v, n, sizeof(*v), (int (*)(const void *, const void *))compar);
	*list = v;
	errno = saved;
	return (int)n;
}

EXPORT int scandir(const char *path, struct dirent ***list, int (*filter)(const struct dirent *),
		   int (*compar)(const struct dirent **, const struct dirent **))
{
	DIR *dir = opendir(path);
	return dir ? scan_stream(dir, list, filter, compar) : -1;
}

EXPORT int scandirat(int dirfd, const char *path, struct dirent ***list, int (*filter)(const struct dirent *),
		     int (*compar)(const struct dirent **, const struct dirent **))
{
	int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = fd < 0 ? NULL : fdopendir(fd);
	if (!dir && fd >= 0) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return dir ? scan_stream(dir, list, filter, compar) : -1;
}

EXPORT int scandir64(const char *path, struct dirent64 ***list, int (*filter)(const struct dirent64 *),
		     int (*compar)(const struct dirent64 **, const struct dirent64 **))
{
	return scandir(path, (struct dirent ***)list, (int (*)(const struct dirent *))filter,
		       (int (*)(const struct dirent **, const struct dirent **))compar);
}

EXPORT int scandirat64(int dirfd, const char *path, struct dirent64 ***list,
		       int (*filter)(const struct dirent64 *),
		       int (*compar)(const struct dirent64 **, const struct dirent64 **))
{
	return scandirat(dirfd, path, (struct dirent ***)list, (int (*)(const struct dirent *))filter,
			 (int (*)(const struct dirent **, const struct dirent **))compar);
}

/* nftw and ftw: a walk in readdir's order, each directory's names read
 * whole before its subtrees (glibc reads ahead the same way once it runs
 * out of descriptors: the order is the stream's either way). */
struct walk {
	int (*fn)(const char *, const struct stat *, int, struct FTW *);
	int (*old_fn)(const char *, const struct stat *, int); /* ftw */
	int flags;
	int here; /* FTW_CHDIR: the directory the walk started in */
	dev_t dev;
	char *path; /* the current path, grown as needed */
	size_t cap;
	/* directories walked, when links are followed: one reached again (by
	 * a link) is skipped, as glibc does */
	struct seen_dir {
		dev_t dev;
		ino_t ino;
	} *seen;
	size_t nseen, seen_cap;
};

/* 1: walked already; 0: noted now; -1: no memory */
static int seen_before(struct walk *w, const struct stat *st)
{
	for (size_t i = 0; i < w->nseen; i++)
		if (w->seen[i].dev == st->st_dev && w->seen[i].ino == st->st_ino)
			return 1;
	if (w->nseen == w->seen_cap) {
		size_t cap = w->seen_cap ? w->seen_cap * 2 : 32;
		struct seen_dir *more = realloc(w->seen, cap * sizeof(*more));
		if (!more)
			return -1;
		w->seen = more;
		w->seen_cap = cap;
	}
	w->seen[w->nseen++] = (struct seen_dir){st->st_dev, st->st_ino};
	return 0;
}

static int walk_report(struct walk *w, const struct stat *st, int type, int base, int level)
{
	if (w->old_fn)
		return w->old_fn(w->path, st, type == FTW_SLN ? FTW_NS : type);
	struct FTW where = {base, level};
	if (w->flags & FTW_CHDIR) { /* into the entry's directory; a directory's FTW_DP, into itself */
		size_t upto = type == FTW_DP ? strlen(w->path) : (size_t)base;
		char keep = w->path[upto];
		w->path[upto] = 0;
		int r = fchdir(w->here) == 0 && upto ? chdir(w->path) : w->here < 0 ? -1 : 0;
		w->path[upto] = keep;
		if (r != 0)
			return -1;
	}
	return w->fn(w->path, st, type, &where);
}

/* What happens next, from fn's answer: 0 go on; anything else ends the walk
 * with it (FTW_ACTIONRETVAL: FTW_STOP does; the skips are the caller's). */
static int walk_node(struct walk *w, size_t len, int base, int level)
{
	struct stat st;
	int type;
	int follow = !(w->flags & FTW_PHYS);
	if (w->here >= 0 && fchdir(w->here) != 0) /* FTW_CHDIR: names are from where the walk began */
		return -1;
	if ((follow ? stat(w->path, &st) : lstat(w->path, &st)) != 0) {
		type = follow && lstat(w->path, &st) == 0 && S_ISLNK(st.st_mode) ? FTW_SLN : FTW_NS;
		if (level == 0 && type == FTW_NS)
			return -1;
	} else if (S_ISDIR(st.st_mode)) {
		type = FTW_D;
	} else {
		type = S_ISLNK(st.st_mode) ? FTW_SL : FTW_F;
	}
	if (level == 0)
		w->dev = st.st_dev;
	else if ((w->flags & FTW_MOUNT) && type != FTW_NS && st.st_dev != w->dev)
		return 0;
	if (type != FTW_D)
		return walk_report(w, &st, type, base, level);
	if (follow) {
		int again = seen_before(w, &st);
		if (again)
			return again < 0 ? (errno = ENOMEM, -1) : 0;
	}
	if (w->here >= 0 && fchdir(w->here) != 0)
		return -1;
	DIR *dir = opendir(w->path);
	if (!dir)
		return walk_report(w, &st, FTW_DNR, base, level);
	/* the names, each ended by a 0, then an empty one */
	char *names = NULL;
	size_t used = 0, room = 0;
	struct dirent *d;
	while ((d = readdir(dir))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		size_t n = strlen(d->d_name) + 1;
		if (used + n + 1 > room) {
			room = (used + n + 1) * 2;
			char *more = realloc(names, room);
			if (!more) {
				free(names);
				closedir(dir);
				errno = ENOMEM;
				return -1;
			}
			names = more;
		}
		memcpy(names + used, d->d_name, n);
		used += n;
	}
	closedir(dir);
	if (names)
		names[used] = 0;
	int r = 0;
	if (!(w->flags & FTW_DEPTH)) {
		r = walk_report(w, &st, FTW_D, base, level);
		if ((w->flags & FTW_ACTIONRETVAL) && (r == FTW_SKIP_SUBTREE || r == FTW_SKIP_SIBLINGS)) {
			free(names);
			return r == FTW_SKIP_SIBLINGS ? r : 0;
		}
		if (r) {
			free(names);
			return r;
		}
	}
	for (char *name = names; name && *name && !r; name += strlen(name) + 1) {
		size_t n = strlen(name), need = len + 1 + n + 1;
		if (need > w->cap) {
			char *more = realloc(w->path, need * 2);
			if (!more) {
				r = -1;
				errno = ENOMEM;
				break;
			}
			w->path = more;
			w->cap = need * 2;
		}
		size_t at = len && w->path[len - 1] == '/' ? len : len + 1;
		w->path[at - 1] = '/';
		memcpy(w->path + at, name, n + 1);
		r = walk_node(w, at + n, (int)at, level + 1);
		w->path[len] = 0;
		if ((w->flags & FTW_ACTIONRETVAL) && (r == FTW_SKIP_SUBTREE || r == FTW_SKIP_SIBLINGS))
			r = r == FTW_SKIP_SIBLINGS ? -2 : 0; /* -2: leave this directory's names */
	}
	free(names);
	if (r == -2)
		r = 0;
	if (!r && (w->flags & FTW_DEPTH))
		r = walk_report(w, &st, FTW_DP, base, level);
	return r;
}

static int walk(const char *path, struct walk *w)
{
	size_t len = strlen(path);
	w->cap = len + 256;
	w->path = malloc(w->cap);
	if (!w->path) {
		errno = ENOMEM;
		return -1;
	}
	memcpy(w->path, path, len + 1);
	while (len > 1 && w->path[len - 1] == '/') /* glibc names the start without trailing slashes */
		w->path[--len] = 0;
	int here = (w->flags & FTW_CHDIR) ? open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	w->here = here;
	/* the base: after the last slash that is not a trailing one */
	size_t end = len;
	while (end > 1 && path[end - 1] == '/')
		end--;
	int base = 0;
	for (size_t i = 0; i < end; i++)
		if (path[i] == '/')
			base = (int)i + 1;
	int r = walk_node(w, len, base, 0);
	if (here >= 0) {
		int e = errno;
		if (fchdir(here) != 0)
			r = r ? r : -1;
		close(here);
		errno = e;
	}
	free(w->path);
	free(w->seen);
	if ((w->flags & FTW_ACTIONRETVAL) && r == FTW_SKIP_SIBLINGS)
		r = 0;
	return r;
}

EXPORT int nftw(const char *path, int (*fn)(const char *, const struct stat *, int, struct FTW *), int nopenfd,
		int flags)
{
	(void)nopenfd; /* one directory open at a time */
	struct walk w = {.fn = fn, .flags = flags};
	return walk(path, &w);
}

EXPORT int nftw64(const char *path, int (*fn)(const char *, const struct stat64 *, int, struct FTW *),
		  int nopenfd, int flags)
{
	return nftw(path, (int (*)(const char *, const struct stat *, int, struct FTW *))fn, nopenfd, flags);
}

EXPORT int ftw(const char *path, int (*fn)(const char *, const struct stat *, int), int nopenfd)
{
	(void)nopenfd;
	struct walk w = {.old_fn = fn};
	return walk(path, &w);
}

EXPORT int ftw64(const char *path, int (*fn)(const char *, const struct stat64 *, int), int nopenfd)
{
	return ftw(path, (int (*)(const char *, const struct stat *, int))fn, nopenfd);
}
