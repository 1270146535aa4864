/*
 * recorder/sums.c - libdetsup.so: a table's content-checksum lanes
 * (recorder/sums.h) read from a trace file with the sqlite3 C API.
 *
 * Rules of this file:
 *  - The SELECT is schema.py's (include/det/sup.h); this only steps it and
 *    adds rows. Every value must be an integer: anything else is named in
 *    the error, never converted (SQL's % would have converted it).
 *  - Read-only: the file is opened with its own connection, so the caller
 *    commits its changes first.
 */
#include "supervisor.h"
#include "sums.h"

#include <stdio.h>
#include <string.h>

SUP_EXPORT int det_table_sums(const char *db_path, const char *select, struct det_table_sum *out, char *err,
			      uint32_t errlen)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	struct det_table_sum s;
	memset(&s, 0, sizeof(s));
	int r = -1, rc;
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, select, -1, &st, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s", db ? sqlite3_errmsg(db) : "out of memory");
		goto out;
	}
	if (sqlite3_column_count(st) != DET_SUM_COLS) {
		snprintf(err, errlen, "the checksum's query reads %d columns, not %d", sqlite3_column_count(st),
			 DET_SUM_COLS);
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t v[DET_SUM_COLS];
		for (int i = 0; i < DET_SUM_COLS; i++) {
			if (sqlite3_column_type(st, i) != SQLITE_INTEGER) {
				snprintf(err, errlen, "row %lld: %s is not a number", (long long)sqlite3_column_int64(st, 0),
					 sqlite3_column_name(st, i));
				goto out;
			}
			v[i] = sqlite3_column_int64(st, i);
		}
		det_sum_row(&s, v, 1);
	}
	if (rc != SQLITE_DONE) {
		snprintf(err, errlen, "%s", sqlite3_errmsg(db));
		goto out;
	}
	*out = s;
	r = 0;
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	return r;
}
