/*
 * supervisor/sums.h - the row lanes of a trace's content checksum (meta
 * content_sum, docs/TRACE_FORMAT.md): the one definition, used by the
 * converter as it writes event_rows and calls (recorder/convert_write.c) and by
 * det_table_sums() (supervisor/sums.c), which the validator and det's other
 * writers call on a finished file.
 *
 * Rules of this file:
 *  - A row is DET_SUM_COLS integers. Each lane is a polynomial hash of the
 *    row mod 2^31-1 with C's truncating %, summed over the table in 64-bit
 *    integers: the arithmetic of the SQL that sealed traces before
 *    (sum(((((0*a + c0%p)%p)*a + c1%p)%p ...)), so traces sealed then still
 *    match. An empty table's lanes are reported as no sum (Python: None).
 *  - Header only, static inline: both users are in libdetsup.so.
 */
#ifndef DET_SUMS_H
#define DET_SUMS_H

#include <stdint.h>

#include "det/sup.h"

#define DET_SUM_P 2147483647LL
#define DET_SUM_COLS 4

static const int64_t det_sum_mult[2] = {48271, 69621};

static inline int64_t det_sum_lane(const int64_t v[DET_SUM_COLS], int64_t a)
{
	int64_t h = 0;
	for (int i = 0; i < DET_SUM_COLS; i++)
		h = (h * a + v[i] % DET_SUM_P) % DET_SUM_P; /* |h * a| < 2^48: no overflow */
	return h;
}

/* Add (sign 1) or take away (sign -1) one row. */
static inline void det_sum_row(struct det_table_sum *s, const int64_t v[DET_SUM_COLS], int sign)
{
	s->rows += (uint64_t)(int64_t)sign;
	for (int l = 0; l < 2; l++)
		s->lane[l] += sign * det_sum_lane(v, det_sum_mult[l]);
}

#endif
