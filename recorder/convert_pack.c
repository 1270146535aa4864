/*
 * recorder/convert_pack.c - libdetsup.so: the converter's packed schedule: the
 * events as they are stored, packed with the encoder every side shares
 * (supervisor/schedpack.h) into table schedule.
 *
 * Rules of this file:
 *  - The packed schedule (supervisor/schedpack.h) is made from the same rows
 *    as they are made: the last two chunks' events wait unpacked, so a late
 *    result still finds its event there; one that comes later than that (a
 *    thread held up for a whole chunk of others' events between an event
 *    and its result) has the schedule made again from the rows, in the
 *    same transaction, after the merge. meta schedule_rows holds the lanes
 *    of the rows it was made from.
 */
#include "convert.h"

#include <stdio.h>
#include <stdlib.h>

_Static_assert(DET_SQL_SCHED_CLEAR - DET_SQL_SCHED_ROWS == DET_SCHED_SQL_CLEAR &&
		       DET_SQL_SCHED_CHUNK - DET_SQL_SCHED_ROWS == DET_SCHED_SQL_CHUNK &&
		       DET_SQL_SCHED_META - DET_SQL_SCHED_ROWS == DET_SCHED_SQL_META,
	       "the converter's schedule statements are enum det_sched_sql's");

/* Pack and write the waiting chunk in buffer b. */
static int pack_write(struct conv *c, uint32_t b)
{
	uint32_t n = c->npack[b];
	struct pack_ev *ev = c->pack[b];
	if (!n || c->pack_lost)
		return 0;
	det_pack_start(&c->enc, c->pack_chunks, ev[0].seq);
	for (uint32_t i = 0; i < n; i++)
		if (det_pack_add(&c->enc, ev[i].seq, ev[i].thread, ev[i].call, ev[i].result)) {
			c->pack_lost = 1; /* (made again from the rows, which say why) */
			return 0;
		}
	if (det_pack_end(&c->enc))
		return fail(c, "out of memory");
	c->npack[b] = 0;
	return put(c, DET_SQL_SCHED_CHUNK, 3,
		   (const int64_t[]){(int64_t)c->pack_chunks++, (int64_t)ev[0].seq, (int64_t)n}, c->enc.buf, c->enc.len);
}

int pack_event(struct conv *c, uint64_t seq, uint32_t t, uint32_t call, int64_t result)
{
	if (c->pack_lost)
		return 0;
	uint32_t b = c->pack_cur;
	if (c->npack[b] == DET_PACK_EVENTS) { /* the older chunk can change no more */
		if (pack_write(c, !b))
			return -1;
		b = c->pack_cur = !b;
	}
	if (!c->pack[b] && !(c->pack[b] = malloc(DET_PACK_EVENTS * sizeof(*c->pack[b]))))
		return fail(c, "out of memory");
	c->pack[b][c->npack[b]++] = (struct pack_ev){seq, t, call, result};
	return 0;
}

/* Event seq's result changed after it was packed (or is waiting). */
void pack_fix(struct conv *c, uint64_t seq, int64_t result)
{
	for (uint32_t k = 0; k < 2; k++) {
		uint32_t b = k ? !c->pack_cur : c->pack_cur, lo = 0, hi = c->npack[b];
		struct pack_ev *ev = c->pack[b];
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;
			if (ev[mid].seq < seq)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < c->npack[b] && ev[lo].seq == seq) {
			ev[lo].result = result;
			return;
		}
	}
	c->pack_lost = 1;
}

/* Every row is made: the last chunks, and what they were made from. */
int pack_finish(struct conv *c)
{
	uint32_t older = !c->pack_cur;
	if (pack_write(c, older) || pack_write(c, c->pack_cur))
		return -1;
	if (c->pack_lost) {
		char why[300];
		if (sup_schedule_build(c->db, c->sched_sql[DET_SCHED_SQL_ROWS], c->sched_sql[DET_SCHED_SQL_CLEAR],
				       c->sched_sql[DET_SCHED_SQL_CHUNK], c->sched_sql[DET_SCHED_SQL_META], NULL, why,
				       sizeof(why)) == 0)
			return 0;
		/* (rows the schedule cannot hold: the trace goes without one, and
		 * replay reads the rows) */
		return sqlite3_exec(c->db, c->sched_sql[DET_SCHED_SQL_CLEAR], NULL, NULL, NULL) == SQLITE_OK
			       ? 0
			       : fail(c, "cannot drop the packed schedule: %s", sqlite3_errmsg(c->db));
	}
	char text[96];
	const struct det_table_sum *sum = &c->stats.event_sum;
	snprintf(text, sizeof(text), "[%llu, %lld, %lld]", (unsigned long long)sum->rows, (long long)sum->lane[0],
		 (long long)sum->lane[1]);
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(c->db, c->sched_sql[DET_SCHED_SQL_META], -1, &st, NULL) != SQLITE_OK)
		return fail(c, "cannot prepare \"%.60s\": %s", c->sched_sql[DET_SCHED_SQL_META], sqlite3_errmsg(c->db));
	sqlite3_bind_text(st, 1, text, -1, SQLITE_TRANSIENT);
	int r = sqlite3_step(st);
	sqlite3_finalize(st);
	return r == SQLITE_DONE ? 0 : fail(c, "cannot store meta schedule_rows: %s", sqlite3_errmsg(c->db));
}
