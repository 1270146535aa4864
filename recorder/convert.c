/*
 * recorder/convert.c - libdetsup.so: turn a capture log (recorder/logfmt.h)
 * into the SQLite trace, after the program has ended: det_convert and
 * det_log_digest drive the log reader (convert_log.c), the merge
 * (convert_merge.c), the SQLite writer (convert_write.c) and the schedule
 * packer (convert_pack.c) over one struct conv (recorder/convert.h).
 *
 * Rules of this file:
 *  - The schedule digest (docs/TRACE_FORMAT.md) is taken as events are
 *    ordered, by the same merge with or without a trace to write: a hunt
 *    learns a run's schedule from its log (det_log_digest) without making
 *    the trace, and a converted trace stores the same value (meta
 *    schedule_digest). det_trace_digest hashes a trace's rows with the
 *    same two functions, for traces that lack the key.
 *  - No printing, no exits: the first error is kept (fail) and handed to
 *    the caller.
 */
#include "convert.h"
#include "../supervisor/digest.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int fail(struct conv *c, const char *fmt, ...)
{
	if (c->w) /* (the merge or the writer) */
		pthread_mutex_lock(&c->w->mu);
	if (!c->err[0]) { /* the first error wins */
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->err, sizeof(c->err), fmt, ap);
		va_end(ap);
	}
	if (c->w)
		pthread_mutex_unlock(&c->w->mu);
	return -1;
}

int grow(void **p, uint64_t *cap, uint64_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	uint64_t n = *cap ? *cap : 16;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * size);
	if (!q)
		return -1;
	memset((char *)q + *cap * size, 0, (n - *cap) * size);
	*p = q;
	*cap = n;
	return 0;
}

static void conv_free(struct conv *c)
{
	db_close(c);
	pages_free(c);
	for (uint32_t t = 0; t < c->nst; t++) {
		free(c->st[t].pieces);
		free(c->st[t].pend);
	}
	free(c->st);
	free(c->count);
	free(c->buckets);
	free(c->waiters);
	free(c->pids);
	free(c->pid_live);
	free(c->heap);
	free(c->create_seq);
	free(c->sites.keys);
	free(c->sites.vals);
	free(c->calls.keys);
	free(c->calls.vals);
	free(c->call_keys);
	free(c->data);
	free(c->pack[0]);
	free(c->pack[1]);
	det_pack_enc_free(&c->enc);
}

/* The log's events in order: into the trace at db_path, or (db_path NULL)
 * only into the digest, reading the log without changing it. */
static int run(struct conv *c, const char *log_path, const char *db_path, const char *const *sql, uint32_t nsql)
{
	int fd = -1, r = -1, began = 0;
	c->path = log_path;
	if (map_log(c, log_path, &fd, db_path != NULL))
		goto out;
	int64_t good = scan(c, log_path);
	if (good < 0)
		goto out;
	c->stats.log_bytes = (uint64_t)good;
	c->stats.torn_bytes = c->size - (uint64_t)good;
	c->digest = DET_DIGEST_START;
	if (!db_path) {
		if (merge(c))
			goto out;
		c->stats.schedule = det_digest_end(c->digest, c->digest_n);
		r = 0;
		goto out;
	}
	if (c->stats.torn_bytes && ftruncate(fd, good) != 0) { /* cut the torn tail */
		fail(c, "cannot cut the torn end of %s: %s", log_path, strerror(errno));
		goto out;
	}
	if (open_db(c, db_path, sql, nsql) || pages_open(c, db_path))
		goto out;
	if (sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
		fail(c, "cannot write %s: %s", db_path, sqlite3_errmsg(c->db));
		goto out;
	}
	began = 1;
	writer_start(c);
	int merged = merge(c);
	if (c->w) /* (the merge failed midway) */
		writer_end(c);
	if (merged || leftovers(c) || write_tables(c))
		goto out;
	if (c->pages) {
		began = 0; /* (pages_finish commits, and begins again once the rows are in) */
		if (pages_finish(c, db_path, sql, nsql))
			goto out;
		began = 1;
	}
	if (pack_finish(c))
		goto out;
	c->stats.schedule = det_digest_end(c->digest, c->digest_n);
	if (store_digest(c))
		goto out;
	char *msg = NULL;
	if (sqlite3_exec(c->db, c->indexes, NULL, NULL, &msg) != SQLITE_OK) {
		fail(c, "cannot index %s: %s", db_path, msg ? msg : "?");
		sqlite3_free(msg);
		goto out;
	}
	if (sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		fail(c, "cannot write %s: %s", db_path, sqlite3_errmsg(c->db));
		goto out;
	}
	began = 0;
	r = 0;
out:
	if (began)
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	if (c->map)
		munmap((void *)c->map, c->size);
	if (fd >= 0)
		close(fd);
	return r;
}

static int run_and_report(const char *log_path, const char *db_path, const char *const *sql, uint32_t nsql,
			  struct det_convert_stats *out, char *err, uint32_t errlen)
{
	struct conv *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	uint64_t t0 = sup_mono_ns();
	int r = run(c, log_path, db_path, sql, nsql);
	c->stats.ns = sup_mono_ns() - t0;
	if (out)
		*out = c->stats;
	if (r && err && errlen)
		snprintf(err, errlen, "%s", c->err[0] ? c->err : "conversion failed");
	conv_free(c);
	free(c);
	return r;
}

SUP_EXPORT int det_convert(const char *log_path, const char *db_path, const char *const *sql, uint32_t nsql,
			   struct det_convert_stats *out, char *err, uint32_t errlen)
{
	if (!db_path) {
		snprintf(err, errlen, "det_convert needs a trace to write");
		return -1;
	}
	return run_and_report(log_path, db_path, sql, nsql, out, err, errlen);
}

SUP_EXPORT int det_log_digest(const char *log_path, struct det_convert_stats *out, char *err, uint32_t errlen)
{
	return run_and_report(log_path, NULL, NULL, 0, out, err, errlen);
}
