/*
 * supervisor/digest.c - libdetsup.so: the schedule digest
 * (supervisor/digest.h) of a trace's rows, for traces that lack meta
 * schedule_digest.
 *
 * Rules of this file:
 *  - Read-only, with det_scan_rows' own connection (supervisor/sums.c); the
 *    SELECT is schema.py's SCHEDULE_ROWS.
 */
#include "supervisor.h"
#include "digest.h"

#include <stdio.h>

struct row_digest {
	uint64_t h, n;
};

static void digest_row(const int64_t *v, void *ctx)
{
	struct row_digest *d = ctx;
	if (!det_in_schedule((uint32_t)v[1]))
		return;
	d->h = det_digest_step(d->h, (uint64_t)v[0], (uint64_t)v[1], (uint64_t)v[2]);
	d->n++;
}

SUP_EXPORT int det_trace_digest(const char *db_path, const char *rows_sql, uint64_t *digest, char *err,
				uint32_t errlen)
{
	struct row_digest d = {DET_DIGEST_START, 0};
	char why[400];
	if (det_scan_rows(db_path, rows_sql, 3, digest_row, &d, why, sizeof(why))) {
		snprintf(err, errlen, "cannot read %s: %s", db_path, why);
		return -1;
	}
	*digest = det_digest_end(d.h, d.n);
	return 0;
}
