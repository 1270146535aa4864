/*
 * supervisor/schedpack.c - libdetsup.so: the packed schedule (supervisor/
 * schedpack.h) made again from a trace's event_rows, and checked against
 * them.
 *
 * Rules of this file:
 *  - SQL text is schema.py's (include/det/sup.h says which statement is
 *    which); this only steps and binds.
 *  - Building sums the rows' checksum lanes (supervisor/sums.h) in the same
 *    scan, so a writer that seals a trace it changed (det.validate.seal)
 *    reads event_rows once for both; the lanes go into meta schedule_rows,
 *    which says which rows the schedule was made from.
 *  - Checking reads both in seq order side by side and names the first
 *    event where they differ; a value that is not an integer is named too,
 *    never converted.
 */
#include "supervisor.h"
#include "schedpack.h"
#include "sums.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* An event row (seq, thread, call, result), all integers: 0, or -1 with a message. */
static int row_of(sqlite3_stmt *st, int64_t v[4], char *err, uint32_t errlen)
{
	for (int i = 0; i < 4; i++) {
		if (sqlite3_column_type(st, i) != SQLITE_INTEGER) {
			snprintf(err, errlen, "event_rows row %lld: %s is not a number", (long long)sqlite3_column_int64(st, 0),
				 sqlite3_column_name(st, i));
			return -1;
		}
		v[i] = sqlite3_column_int64(st, i);
	}
	return 0;
}

static int write_chunk(sqlite3 *db, sqlite3_stmt *ins, struct det_pack_enc *e, char *err, uint32_t errlen)
{
	if (det_pack_end(e)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	sqlite3_bind_int64(ins, 1, (int64_t)e->chunk);
	sqlite3_bind_int64(ins, 2, (int64_t)e->first_seq);
	sqlite3_bind_int64(ins, 3, (int64_t)e->events);
	sqlite3_bind_blob64(ins, 4, e->buf, e->len, SQLITE_STATIC);
	int rc = sqlite3_step(ins);
	sqlite3_reset(ins);
	if (rc != SQLITE_DONE) {
		snprintf(err, errlen, "cannot store the packed schedule: %s", sqlite3_errmsg(db));
		return -1;
	}
	return 0;
}

SUP_HIDDEN int sup_schedule_build(sqlite3 *db, const char *rows_sql, const char *clear_sql, const char *chunk_sql,
				  const char *meta_sql, struct det_table_sum *sum, char *err, uint32_t errlen)
{
	sqlite3_stmt *rows = NULL, *ins = NULL, *meta = NULL;
	struct det_pack_enc e;
	struct det_table_sum s;
	int r = -1, rc;
	memset(&e, 0, sizeof(e));
	memset(&s, 0, sizeof(s));
	if (sqlite3_exec(db, clear_sql, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, rows_sql, -1, &rows, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, chunk_sql, -1, &ins, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, meta_sql, -1, &meta, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
		goto out;
	}
	uint64_t chunk = 0;
	while ((rc = sqlite3_step(rows)) == SQLITE_ROW) {
		int64_t v[4];
		if (row_of(rows, v, err, errlen))
			goto out;
		det_sum_row(&s, v, 1);
		if (e.events == DET_PACK_EVENTS) {
			if (write_chunk(db, ins, &e, err, errlen))
				goto out;
			chunk++;
		}
		if (e.events == DET_PACK_EVENTS || s.rows == 1)
			det_pack_start(&e, chunk, (uint64_t)v[0]);
		if (v[0] < 0 || v[1] < 0 || v[2] <= 0 || v[2] > UINT32_MAX ||
		    det_pack_add(&e, (uint64_t)v[0], (uint32_t)v[1], (uint32_t)v[2], v[3])) {
			snprintf(err, errlen, "event %lld cannot be packed (thread %lld, call %lld)", (long long)v[0],
				 (long long)v[1], (long long)v[2]);
			goto out;
		}
	}
	if (rc != SQLITE_DONE) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
		goto out;
	}
	if (e.events && write_chunk(db, ins, &e, err, errlen))
		goto out;
	char text[96];
	snprintf(text, sizeof(text), "[%" PRIu64 ", %" PRId64 ", %" PRId64 "]", s.rows, s.lane[0], s.lane[1]);
	sqlite3_bind_text(meta, 1, text, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(meta) != SQLITE_DONE) {
		snprintf(err, errlen, "cannot store meta schedule_rows: %s", sqlite3_errmsg(db));
		goto out;
	}
	if (sum)
		*sum = s;
	r = 0;
out:
	sqlite3_finalize(rows);
	sqlite3_finalize(ins);
	sqlite3_finalize(meta);
	det_pack_enc_free(&e);
	return r;
}

SUP_EXPORT int det_schedule_build(const char *db_path, const char *const *sql, uint32_t nsql,
				  struct det_table_sum *sum, char *err, uint32_t errlen)
{
	sqlite3 *db = NULL;
	int r = -1;
	if (nsql != DET_SCHED_SQL_COUNT) {
		snprintf(err, errlen, "libdetsup.so expects %d statements, got %u: mixed det builds?", DET_SCHED_SQL_COUNT,
			 nsql);
		return -1;
	}
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "cannot open %s: %s", db_path, db ? sqlite3_errmsg(db) : "out of memory");
		goto out;
	}
	sqlite3_busy_timeout(db, 10000);
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "cannot write %s: %s", db_path, sqlite3_errmsg(db));
		goto out;
	}
	if (sup_schedule_build(db, sql[DET_SCHED_SQL_ROWS], sql[DET_SCHED_SQL_CLEAR], sql[DET_SCHED_SQL_CHUNK],
			       sql[DET_SCHED_SQL_META], sum, err, errlen) ||
	    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		if (!err[0])
			snprintf(err, errlen, "cannot write %s: %s", db_path, sqlite3_errmsg(db));
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		goto out;
	}
	r = 0;
out:
	sqlite3_close(db);
	return r;
}

SUP_EXPORT int det_schedule_check(const char *db_path, const char *rows_sql, const char *chunks_sql,
				  struct det_table_sum *sum, char *err, uint32_t errlen)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *rows = NULL;
	struct det_unpacker u;
	struct det_table_sum s;
	int r = -1, rc;
	memset(&u, 0, sizeof(u));
	memset(&s, 0, sizeof(s));
	u.d.nthreads = DET_PACK_THREADS;
	err[0] = 0;
	if (det_open_trace_ro(db_path, &db) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, rows_sql, -1, &rows, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, chunks_sql, -1, &u.st, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s", db ? sqlite3_errmsg(db) : "out of memory");
		goto out;
	}
	for (;;) {
		int64_t v[4], w[4];
		rc = sqlite3_step(rows);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
			snprintf(err, errlen, "%s", sqlite3_errmsg(db));
			goto out;
		}
		int p = det_unpack_row(&u, w, err, errlen);
		if (p < 0)
			goto out;
		if (rc == SQLITE_DONE) {
			if (p > 0) {
				snprintf(err, errlen, "the packed schedule has an event %lld that event_rows lack",
					 (long long)w[0]);
				r = 1;
			} else {
				r = 0;
			}
			break;
		}
		if (row_of(rows, v, err, errlen))
			goto out;
		det_sum_row(&s, v, 1);
		if (!p) {
			snprintf(err, errlen, "the packed schedule ends before event %lld", (long long)v[0]);
			r = 1;
			break;
		}
		if (memcmp(v, w, sizeof(v)) != 0) {
			static const char *const col[4] = {"seq", "tid", "call", "result"};
			int i = 0;
			while (v[i] == w[i])
				i++;
			snprintf(err, errlen, "the packed schedule says %s %lld at event %lld (chunk %llu), event_rows say %lld",
				 col[i], (long long)w[i], (long long)v[0], (unsigned long long)u.chunk - 1,
				 (long long)v[i]);
			r = 1;
			break;
		}
	}
	if (sum)
		*sum = s;
out:
	sqlite3_finalize(rows);
	sqlite3_finalize(u.st);
	sqlite3_close(db);
	det_pack_dec_free(&u.d);
	return r;
}
