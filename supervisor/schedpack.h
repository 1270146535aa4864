/*
 * supervisor/schedpack.h - the packed schedule (table `schedule`,
 * docs/TRACE_FORMAT.md "schedule"): each event's seq, thread, call and
 * result, a chunk of consecutive events per row, a byte or less an event.
 * The one definition of the encoding: the converter packs as it writes
 * event_rows (recorder/convert_pack.c), supervisor/schedpack.c rebuilds it from
 * the rows (det's other writers) and checks it against them (the
 * validator), and the replay feeder decodes it (replayer/schedule.c).
 *
 * Rules of this file:
 *  - Derived data: event_rows stay the truth. Every chunk decodes on its
 *    own (its state starts empty), and a decoder trusts nothing: a byte that
 *    does not fit, a thread or call out of range, a chunk that does not end
 *    where its event count says, is damage (-1), never a guess.
 *  - Header only, static inline: the encoder and the decoder sit side by
 *    side so they cannot drift apart, and the feeder's loop inlines the
 *    decoder; every user is in libdetsup.so.
 */
#ifndef DET_SCHEDPACK_H
#define DET_SCHEDPACK_H

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Events per chunk (the last one may hold fewer). */
#define DET_PACK_EVENTS 65536u
/* Calls a thread's recent-call list holds. */
#define DET_PACK_MRU 4
/* Threads a schedule may name (thread numbers are below 2^16). */
#define DET_PACK_THREADS 65536u

/* The event byte: thread code in bits 0-1, call code in bits 2-4, a result
 * and a seq gap follow when bits 5 and 6 say so; bit 7: a run byte. */
#define DET_PACK_T_PREV 0     /* the previous event's thread */
#define DET_PACK_T_OTHER 1    /* the thread before the last switch */
#define DET_PACK_T_EXPLICIT 2 /* a varint: the thread */
#define DET_PACK_C_EXPLICIT 4 /* call code 0-3: the thread's recent call; 4: a varint */
#define DET_PACK_RESULT 0x20  /* a zigzag varint: result minus the thread's last nonzero result */
#define DET_PACK_GAP 0x40     /* a varint: seqs skipped before this event */
#define DET_PACK_RUN 0x80     /* the previous event byte again, (b & 0x7f) + 1 times */

struct det_pack_thread {
	uint32_t mru[DET_PACK_MRU]; /* its recent calls, the latest first (0: none) */
	uint64_t last_result;       /* its last nonzero result in the chunk */
	uint64_t epoch;             /* the chunk the above belong to (struct det_pack_state's epoch) */
};

/* What encoding and decoding share: where the chunk stands. */
struct det_pack_state {
	struct det_pack_thread *th; /* by thread number, grown as needed */
	uint32_t nth;
	uint64_t epoch;        /* chunks begun, this one included: a thread's state from an
				* earlier one (or an earlier pass: the feeder rewinds) is stale */
	uint64_t next_seq;     /* the seq an event with no gap has */
	uint32_t prev, other;  /* thread codes 0 and 1 */
	int last;              /* the last event byte, if it had no payload; else -1 */
};

static inline struct det_pack_thread *det_pack_thread_of(struct det_pack_state *s, uint32_t t)
{
	if (t >= s->nth) {
		uint32_t n = s->nth ? s->nth : 16;
		while (n <= t)
			n *= 2;
		struct det_pack_thread *p = realloc(s->th, (size_t)n * sizeof(*p));
		if (!p)
			return NULL;
		memset(p + s->nth, 0, (size_t)(n - s->nth) * sizeof(*p));
		s->th = p;
		s->nth = n;
	}
	struct det_pack_thread *th = &s->th[t];
	if (th->epoch != s->epoch) {
		memset(th, 0, sizeof(*th));
		th->epoch = s->epoch;
	}
	return th;
}

static inline void det_pack_begin(struct det_pack_state *s, uint64_t first_seq)
{
	s->epoch++;
	s->next_seq = first_seq;
	s->prev = s->other = 0;
	s->last = -1;
}

/* The thread used call (found at slot k of its list, or -1): it moves first. */
static inline void det_pack_mru_use(struct det_pack_thread *th, int k, uint32_t call)
{
	if (k < 0)
		k = DET_PACK_MRU - 1;
	for (; k > 0; k--)
		th->mru[k] = th->mru[k - 1];
	th->mru[0] = call;
}

static inline void det_pack_after(struct det_pack_state *s, uint32_t t, uint64_t seq)
{
	if (t != s->prev) {
		s->other = s->prev;
		s->prev = t;
	}
	s->next_seq = seq + 1;
}

static inline uint64_t det_zigzag(uint64_t v)
{
	return (v << 1) ^ (uint64_t)((int64_t)v >> 63);
}

static inline uint64_t det_unzigzag(uint64_t v)
{
	return (v >> 1) ^ (0 - (v & 1));
}

/* ------------------------------------------------------------------ encoding */

struct det_pack_enc {
	struct det_pack_state s;
	uint8_t *buf;
	size_t len, cap;
	uint64_t chunk, first_seq, events;
	uint32_t run; /* repeats of s.last not written yet */
};

static inline int det_pack_room(struct det_pack_enc *e, size_t n)
{
	if (e->len + n <= e->cap)
		return 0;
	size_t cap = e->cap ? e->cap * 2 : 4096;
	while (cap < e->len + n)
		cap *= 2;
	uint8_t *b = realloc(e->buf, cap);
	if (!b)
		return -1;
	e->buf = b;
	e->cap = cap;
	return 0;
}

static inline void det_pack_varint(struct det_pack_enc *e, uint64_t v)
{
	while (v >= 0x80) {
		e->buf[e->len++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	e->buf[e->len++] = (uint8_t)v;
}

static inline int det_pack_flush_run(struct det_pack_enc *e)
{
	if (!e->run)
		return 0;
	if (det_pack_room(e, 1))
		return -1;
	e->buf[e->len++] = (uint8_t)(DET_PACK_RUN | (e->run - 1));
	e->run = 0;
	return 0;
}

/* Start chunk `chunk` (its events are added next, from seq first_seq on). */
static inline void det_pack_start(struct det_pack_enc *e, uint64_t chunk, uint64_t first_seq)
{
	det_pack_begin(&e->s, first_seq);
	e->len = 0;
	e->run = 0;
	e->chunk = chunk;
	e->first_seq = first_seq;
	e->events = 0;
}

/* Add an event (seqs grow from chunk to chunk and within one). 0, or -1:
 * out of memory, or a seq or thread that cannot be packed. */
static inline int det_pack_add(struct det_pack_enc *e, uint64_t seq, uint32_t t, uint32_t call, int64_t result)
{
	struct det_pack_state *s = &e->s;
	if (seq < s->next_seq || t >= DET_PACK_THREADS || !call)
		return -1;
	struct det_pack_thread *th = det_pack_thread_of(s, t);
	if (!th)
		return -1;
	int tc = t == s->prev ? DET_PACK_T_PREV : t == s->other ? DET_PACK_T_OTHER : DET_PACK_T_EXPLICIT;
	int k = -1;
	for (int i = 0; i < DET_PACK_MRU; i++)
		if (th->mru[i] == call) {
			k = i;
			break;
		}
	uint64_t gap = seq - s->next_seq;
	int b = tc | (k < 0 ? DET_PACK_C_EXPLICIT : k) << 2 | (result ? DET_PACK_RESULT : 0) | (gap ? DET_PACK_GAP : 0);
	int plain = tc != DET_PACK_T_EXPLICIT && k >= 0 && !result && !gap;
	if (plain && b == s->last) {
		if (++e->run == 128 && det_pack_flush_run(e))
			return -1;
	} else {
		if (det_pack_flush_run(e) || det_pack_room(e, 1 + 3 * 10))
			return -1;
		e->buf[e->len++] = (uint8_t)b;
		if (tc == DET_PACK_T_EXPLICIT)
			det_pack_varint(e, t);
		if (k < 0)
			det_pack_varint(e, call);
		if (result) {
			det_pack_varint(e, det_zigzag((uint64_t)result - th->last_result));
			th->last_result = (uint64_t)result;
		}
		if (gap)
			det_pack_varint(e, gap);
		s->last = plain ? b : -1;
	}
	det_pack_mru_use(th, k, call);
	det_pack_after(s, t, seq);
	e->events++;
	return 0;
}

/* The chunk is complete: its bytes are e->buf[0..e->len). */
static inline int det_pack_end(struct det_pack_enc *e)
{
	return det_pack_flush_run(e);
}

static inline void det_pack_enc_free(struct det_pack_enc *e)
{
	free(e->buf);
	free(e->s.th);
	memset(e, 0, sizeof(*e));
}

/* ------------------------------------------------------------------ decoding */

struct det_pack_dec {
	struct det_pack_state s;
	const uint8_t *p, *end;
	uint64_t left;   /* events of the chunk not decoded yet */
	uint32_t repeat; /* of a run, still to come */
	uint32_t nthreads;
};

/* Decode a chunk of `events` events from first_seq on, in bytes [p, p + n):
 * the caller keeps them in place until the chunk is done. */
static inline int det_unpack_start(struct det_pack_dec *d, uint64_t first_seq, uint64_t events, const void *p,
				   uint64_t n)
{
	det_pack_begin(&d->s, first_seq);
	d->p = p;
	d->end = d->p + n;
	d->left = events;
	d->repeat = 0;
	return events > 0 && n > 0 ? 0 : -1;
}

static inline int det_unpack_varint(struct det_pack_dec *d, uint64_t *v)
{
	uint64_t x = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (d->p >= d->end)
			return -1;
		uint8_t b = *d->p++;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

/* The chunk's next event. 1, 0 when the chunk is done (every byte read),
 * -1 when its bytes are damaged. */
static inline int det_unpack_next(struct det_pack_dec *d, uint64_t *seq, uint32_t *thread, uint32_t *call,
				  int64_t *result)
{
	struct det_pack_state *s = &d->s;
	if (!d->left)
		return d->p == d->end && !d->repeat ? 0 : -1;
	int b;
	if (d->repeat) {
		d->repeat--;
		b = s->last;
	} else {
		if (d->p >= d->end)
			return -1;
		b = *d->p++;
		if (b & DET_PACK_RUN) {
			if (s->last < 0)
				return -1;
			d->repeat = (uint32_t)(b & 0x7f);
			b = s->last;
		}
	}
	int tc = b & 3, cc = (b >> 2) & 7;
	if (tc > DET_PACK_T_EXPLICIT || cc > DET_PACK_C_EXPLICIT)
		return -1;
	uint64_t v;
	uint32_t t = tc == DET_PACK_T_PREV ? s->prev : s->other;
	if (tc == DET_PACK_T_EXPLICIT) {
		if (det_unpack_varint(d, &v) || v >= d->nthreads)
			return -1;
		t = (uint32_t)v;
	}
	struct det_pack_thread *th = det_pack_thread_of(s, t);
	if (!th)
		return -1;
	uint32_t c;
	int k = -1;
	if (cc == DET_PACK_C_EXPLICIT) {
		if (det_unpack_varint(d, &v) || !v || v > UINT32_MAX)
			return -1;
		c = (uint32_t)v;
		for (int i = 0; i < DET_PACK_MRU; i++)
			if (th->mru[i] == c) {
				k = i;
				break;
			}
	} else {
		k = cc;
		c = th->mru[k];
		if (!c)
			return -1;
	}
	int64_t r = 0;
	if (b & DET_PACK_RESULT) {
		if (det_unpack_varint(d, &v))
			return -1;
		th->last_result += det_unzigzag(v);
		r = (int64_t)th->last_result;
	}
	uint64_t q = s->next_seq;
	if (b & DET_PACK_GAP) {
		if (det_unpack_varint(d, &v) || v > (UINT64_MAX >> 2) - q)
			return -1;
		q += v;
	}
	int plain = tc != DET_PACK_T_EXPLICIT && cc != DET_PACK_C_EXPLICIT && !(b & (DET_PACK_RESULT | DET_PACK_GAP));
	s->last = plain ? b : -1;
	if (d->repeat && !plain)
		return -1;
	det_pack_mru_use(th, k, c);
	det_pack_after(s, t, q);
	d->left--;
	*seq = q;
	*thread = t;
	*call = c;
	*result = r;
	return 1;
}

static inline void det_pack_dec_free(struct det_pack_dec *d)
{
	free(d->s.th);
	memset(d, 0, sizeof(*d));
}

/* ------------------------------------------------------------------ reading chunks */

/* The packed schedule's events in order, chunk after chunk, from a
 * statement giving (chunk, first seq, events, bytes) by chunk. */
struct det_unpacker {
	sqlite3_stmt *st;
	struct det_pack_dec d;
	uint64_t chunk; /* the next chunk's number */
	uint64_t after; /* seqs of the next chunk start here (the last chunk's end) */
	int in_chunk;
};

/* The next event (seq, thread, call, result) of u->st's chunks: 1, 0 at the
 * end, -1 damaged (message in err). u->d.nthreads bounds the threads. */
static inline int det_unpack_row(struct det_unpacker *u, int64_t v[4], char *err, uint32_t errlen)
{
	for (;;) {
		if (u->in_chunk) {
			uint64_t seq;
			uint32_t t, call;
			int64_t result;
			int r = det_unpack_next(&u->d, &seq, &t, &call, &result);
			if (r > 0) {
				v[0] = (int64_t)seq;
				v[1] = t;
				v[2] = call;
				v[3] = result;
				return 1;
			}
			if (r < 0) {
				snprintf(err, errlen, "the packed schedule is damaged (chunk %llu)",
					 (unsigned long long)u->chunk - 1);
				return -1;
			}
			u->after = u->d.s.next_seq;
			u->in_chunk = 0;
		}
		int rc = sqlite3_step(u->st);
		if (rc == SQLITE_DONE)
			return 0;
		if (rc != SQLITE_ROW) {
			snprintf(err, errlen, "the packed schedule cannot be read (%s)",
				 sqlite3_errmsg(sqlite3_db_handle(u->st)));
			return -1;
		}
		for (int i = 0; i < 3; i++)
			if (sqlite3_column_type(u->st, i) != SQLITE_INTEGER) {
				snprintf(err, errlen, "the packed schedule is damaged (chunk %llu: %s is not a number)",
					 (unsigned long long)u->chunk, sqlite3_column_name(u->st, i));
				return -1;
			}
		int64_t n = sqlite3_column_int64(u->st, 0), first = sqlite3_column_int64(u->st, 1),
			events = sqlite3_column_int64(u->st, 2);
		const void *bytes = sqlite3_column_blob(u->st, 3);
		int len = sqlite3_column_bytes(u->st, 3);
		if (n < 0 || (uint64_t)n != u->chunk || first < 0 || (uint64_t)first < u->after || events <= 0 ||
		    events > (int64_t)DET_PACK_EVENTS || sqlite3_column_type(u->st, 3) != SQLITE_BLOB ||
		    det_unpack_start(&u->d, (uint64_t)first, (uint64_t)events, bytes, (uint64_t)len)) {
			snprintf(err, errlen, "the packed schedule is damaged (chunk %llu is not chunk %lld, events %lld "
				 "from %lld)", (unsigned long long)u->chunk, (long long)n, (long long)events, (long long)first);
			return -1;
		}
		u->chunk++;
		u->in_chunk = 1;
	}
}

/* Back to the first chunk. */
static inline void det_unpack_rewind(struct det_unpacker *u)
{
	sqlite3_reset(u->st);
	u->chunk = u->after = 0;
	u->in_chunk = 0;
}

#endif
