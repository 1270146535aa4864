/*
 * tests/unit/c/sched_rewind.c - the packed schedule decodes the same after
 * a rewind (the feeder rewinds under gdb, where the program starts again):
 * three threads, one of them only in the first chunk, three chunks packed
 * with supervisor/schedpack.h into an in-memory table, read twice through one
 * decoder. Prints "same" and exits 0, or the first event that differs.
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "schedpack.h" /* supervisor/ */

#define N ((int)(2 * DET_PACK_EVENTS + 1000))

static int64_t ev[N][4];

int main(void)
{
	sqlite3 *db;
	sqlite3_stmt *ins, *sel;
	if (sqlite3_open(":memory:", &db) != SQLITE_OK ||
	    sqlite3_exec(db, "CREATE TABLE schedule(chunk INTEGER PRIMARY KEY, first_seq, events, bytes)", NULL, NULL,
			 NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT INTO schedule VALUES (?,?,?,?)", -1, &ins, NULL) != SQLITE_OK)
		return 2;
	srand(5);
	for (int i = 0; i < N; i++) {
		/* T2's events are all in the first chunk; T0 and T1 take turns */
		int t = i < 5000 && i % 7 == 0 ? 2 : (i / 3) % 2;
		ev[i][0] = i;
		ev[i][1] = t;
		ev[i][2] = 1 + t * 10 + rand() % 6; /* more calls than a thread's recent four */
		ev[i][3] = rand() % 5 ? 0 : rand() % 100 - 50;
	}
	struct det_pack_enc e;
	memset(&e, 0, sizeof(e));
	for (int c = 0, i = 0; i < N; c++) {
		det_pack_start(&e, c, (uint64_t)ev[i][0]);
		for (; i < N && e.events < DET_PACK_EVENTS; i++)
			if (det_pack_add(&e, (uint64_t)ev[i][0], (uint32_t)ev[i][1], (uint32_t)ev[i][2], ev[i][3]))
				return 2;
		det_pack_end(&e);
		sqlite3_bind_int64(ins, 1, (int64_t)c);
		sqlite3_bind_int64(ins, 2, (int64_t)e.first_seq);
		sqlite3_bind_int64(ins, 3, (int64_t)e.events);
		sqlite3_bind_blob(ins, 4, e.buf, (int)e.len, SQLITE_TRANSIENT);
		if (sqlite3_step(ins) != SQLITE_DONE)
			return 2;
		sqlite3_reset(ins);
	}
	if (sqlite3_prepare_v2(db, "SELECT chunk, first_seq, events, bytes FROM schedule ORDER BY chunk", -1, &sel,
			       NULL) != SQLITE_OK)
		return 2;
	struct det_unpacker u;
	memset(&u, 0, sizeof(u));
	u.st = sel;
	u.d.nthreads = 3;
	char err[200];
	for (int pass = 0; pass < 3; pass++) {
		int64_t v[4];
		int i = 0, r;
		while ((r = det_unpack_row(&u, v, err, sizeof(err))) > 0) {
			if (i >= N || memcmp(v, ev[i], sizeof(v)) != 0) {
				printf("pass %d: event %d differs\n", pass, i);
				return 1;
			}
			i++;
		}
		if (r < 0 || i != N) {
			printf("pass %d: %s after %d events\n", pass, r < 0 ? err : "end", i);
			return 1;
		}
		det_unpack_rewind(&u);
	}
	printf("same\n");
	return 0;
}
