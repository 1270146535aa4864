/*
 * supervisor/sums.c - libdetsup.so: a table's content-checksum lanes
 * (supervisor/sums.h) read from a trace file with the sqlite3 C API.
 *
 * Rules of this file:
 *  - The SELECT is schema.py's (include/det/sup.h); this only steps it and
 *    adds rows. det_scan_rows is libdetsup's one read-only scan of a trace's
 *    rows (the schedule digest's det_trace_digest uses it too). Every value must be an integer: anything else is named in
 *    the error, never converted (SQL's % would have converted it).
 *  - Read-only: the file is opened with its own connection, so the caller
 *    commits its changes first. Every reader of a trace in libdetsup.so
 *    opens it with det_open_trace_ro: immutable (det/tracefile.py's rule),
 *    so SQLite never reads, rolls back or writes a journal, WAL or -shm
 *    file beside the trace.
 */
#include "supervisor.h"
#include "sums.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

SUP_HIDDEN int det_open_trace_ro(const char *db_path, sqlite3 **db)
{
	/* "file:" URI with immutable=1; the path is percent-encoded where a URI
	 * would read it otherwise ('%', '?', '#'), and made absolute. */
	char cwd[4096] = "";
	if (db_path[0] != '/' && !getcwd(cwd, sizeof(cwd))) {
		*db = NULL;
		return SQLITE_CANTOPEN;
	}
	size_t n = strlen(cwd) + 1 + strlen(db_path);
	char *uri = malloc(5 + 3 * n + sizeof("?immutable=1"));
	if (!uri) {
		*db = NULL;
		return SQLITE_NOMEM;
	}
	char *o = stpcpy(uri, "file:");
	for (int part = 0; part < 2; part++) {
		const char *in = part ? db_path : cwd;
		for (; *in; in++) {
			if (*in == '%' || *in == '?' || *in == '#')
				o += sprintf(o, "%%%02X", (unsigned char)*in);
			else
				*o++ = *in;
		}
		if (!part && cwd[0])
			*o++ = '/';
	}
	strcpy(o, "?immutable=1");
	int rc = sqlite3_open_v2(uri, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI, NULL);
	free(uri);
	return rc;
}

/* Steps `select` over the trace at db_path (read-only, its own connection),
 * giving each row's `ncols` integers to row(v, ctx); a value that is not an
 * integer is an error naming it. 0, or -1 with a message in err. */
SUP_HIDDEN int det_scan_rows(const char *db_path, const char *select, int ncols,
			     void (*row)(const int64_t *v, void *ctx), void *ctx, char *err, uint32_t errlen)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int r = -1, rc;
	if (det_open_trace_ro(db_path, &db) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, select, -1, &st, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s", db ? sqlite3_errmsg(db) : "out of memory");
		goto out;
	}
	if (ncols > 8 || sqlite3_column_count(st) != ncols) {
		snprintf(err, errlen, "the query reads %d columns, not %d", sqlite3_column_count(st), ncols);
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t v[8];
		for (int i = 0; i < ncols; i++) {
			if (sqlite3_column_type(st, i) != SQLITE_INTEGER) {
				snprintf(err, errlen, "row %lld: %s is not a number", (long long)sqlite3_column_int64(st, 0),
					 sqlite3_column_name(st, i));
				goto out;
			}
			v[i] = sqlite3_column_int64(st, i);
		}
		row(v, ctx);
	}
	if (rc != SQLITE_DONE) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
		goto out;
	}
	r = 0;
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	return r;
}

static void add_row(const int64_t *v, void *sum)
{
	det_sum_row(sum, v, 1);
}

SUP_EXPORT int det_table_sums(const char *db_path, const char *select, struct det_table_sum *out, char *err,
			      uint32_t errlen)
{
	struct det_table_sum s;
	memset(&s, 0, sizeof(s));
	if (det_scan_rows(db_path, select, DET_SUM_COLS, add_row, &s, err, errlen))
		return -1;
	*out = s;
	return 0;
}
