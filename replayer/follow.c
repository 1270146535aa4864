/*
 * replayer/follow.c - libdetsup.so: a live replica's feeder (detrec --follow,
 * detreplay --follow LOG): the capture log read while detrec writes it, its
 * threads' events put in one order as they become known, and fed into a
 * replay region's windows as replayer/schedule.c feeds a trace's.
 *
 * Rules of this file:
 *  - The recording is never waited for: the log is only read (mapped, each
 *    chunk checked as the converter checks it; a chunk not whole yet is read
 *    again later). What the replica has not reached stays in the log.
 *  - An event goes to the replica once it is settled: a call logged before
 *    it ran (pending) once its RESULT entry came; any other once its
 *    thread's next event is in the log (a RESULT, logged after it, would be
 *    there too), or SETTLE_NS after it was read (a release published before
 *    its operation, which fails rarely and then says so right after it: a
 *    thread that blocks after an unlock must not hold the replica up), or
 *    it ends its thread, or the capture has ended. Until then its thread's
 *    replica waits at the window's end, as a thread waits for the feeder.
 *  - The order is the converter's rule (recorder/convert_merge.c) made
 *    incremental: an event may go when the positions before it on its
 *    objects and the creates before it have gone; among those, the earliest
 *    (strict: the next global number). Any such order is a linear extension
 *    of the recorded per-object orders, so the replica replays faithfully;
 *    it need not be the order the trace gets at the end. A wait that
 *    returned a child waits for the capture's end (the child's threads'
 *    last events are not known before); so does a position that never came.
 *    A fork waits for its child's identity and pid in the log.
 *  - Input data goes into a ring in the region: bytes are written again only
 *    once the replica has done the event that read them.
 *  - A thread's number of events (its slot's sched_count) stays
 *    DET_SCHED_OPEN until the END chunk came: then each is set to the
 *    events in the log, and no more come. A standby's stay open until it
 *    is released: its threads wait at their next events, the program's
 *    state when the recording ended (detrec --follow --standby).
 *  - The follower stops (with a message, the program goes on) on what it
 *    cannot follow: a thread or object number beyond the region's, the
 *    replica more than max_lag events behind the log.
 */
#include "feeder.h"
#include "../recorder/logfmt.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FOLLOW_MAP (1ull << 38)      /* address space the log may grow into */
#define FOLLOW_WINDOW 4096u          /* entries of a thread's window */
#define FOLLOW_MAX_OBJ (1u << 18)    /* object ids the region has room for */
#define FOLLOW_SAMPLES 8192u         /* (events captured, when) pairs kept for the lag */
#define SETTLE_NS (10 * 1000 * 1000) /* a release event's result is taken as 0 once this old */
#define FEED_BATCH 16384             /* events fed between two looks at the log */

struct fpiece {
	uint64_t off;
	uint32_t n;
};

struct fthread {
	struct fpiece *pieces;
	uint32_t npieces, cap, pi, pos;
	uint64_t events;             /* in its pieces */
	int known;                   /* its identity came */
	/* its next event, and what came with it */
	int has_head;
	struct det_rec head;
	int64_t result;
	uint64_t ts_raw, head_ts;
	uint64_t seen_at;            /* when the follower read the head (CLOCK_MONOTONIC ns) */
	uint64_t aux_pos;
	uint32_t aux_obj;
	uint8_t *data;
	uint32_t ndata, cap_data;
	int forced;
};

struct dref { /* input data in the ring: thread t's event idx uses [start, end) */
	uint32_t t;
	uint64_t idx, start, end;
};

struct follower {
	int fd;
	const uint8_t *map;
	uint64_t good;      /* bytes read and checked */
	int ended;          /* the END chunk came */
	int strict;
	struct fthread *th;
	uint32_t nth;
	uint64_t *count;    /* per object: events placed */
	uint64_t next_child, gseq;
	uint32_t glue;      /* thread + 1 whose glued signal goes next */
	uint32_t *active, nactive; /* the threads with entries, in the order they came */
	uint64_t max_lag;   /* events the replica may be behind (0: any number) */
	/* the data ring */
	uint64_t d_lo, d_hi, d_at;
	struct dref *dq;
	uint64_t dq_head, dq_tail, dq_cap; /* (a power of two) */
	/* what detrec asks for */
	_Atomic uint64_t captured, fed;
	_Atomic int ready, all_fed, stopped;
	_Atomic int stop;
	_Atomic int hold;     /* a standby: the counts stay open at END until released */
	_Atomic int end_read; /* the END chunk came (for det_sup_follow_release) */
	pthread_mutex_t mu; /* the samples */
	struct {
		uint64_t captured, at;
	} samp[FOLLOW_SAMPLES];
	uint64_t nsamp;
	char why[256];
};

static int ffail(struct det_sup *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int ffail(struct det_sup *s, const char *fmt, ...)
{
	struct follower *f = s->follow;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->why, sizeof(f->why), fmt, ap);
	va_end(ap);
	snprintf(s->err, sizeof(s->err), "%s", f->why);
	atomic_store(&f->stopped, 1);
	return -1;
}

static int is_create(uint16_t kind)
{
	return kind == DET_EV_THREAD_CREATE || kind == DET_EV_PROC_FORK || kind == DET_EV_PROC_SPAWN;
}

/* --- the log, as it grows --- */

static int add_piece(struct det_sup *s, uint32_t t, uint64_t off, uint32_t n)
{
	struct follower *f = s->follow;
	if (t >= f->nth)
		return ffail(s, "the program has more than %u threads, the replica's most", f->nth);
	struct fthread *th = &f->th[t];
	if (!th->npieces)
		f->active[f->nactive++] = t;
	if (th->npieces == th->cap) {
		uint32_t cap = th->cap ? th->cap * 2 : 16;
		struct fpiece *p = realloc(th->pieces, cap * sizeof(*p));
		if (!p)
			return ffail(s, "out of memory");
		th->pieces = p;
		th->cap = cap;
	}
	th->pieces[th->npieces++] = (struct fpiece){off, n};
	uint64_t events = 0;
	const struct det_rec *e = (const struct det_rec *)(f->map + off);
	for (uint32_t i = 0; i < n; i++)
		events += e[i].kind < DET_KIND_LIMIT;
	th->events += events;
	atomic_fetch_add(&f->captured, events);
	return 0;
}

static void thread_known(struct det_sup *s, uint32_t t, const struct det_log_thread *id)
{
	struct det_slot *sl = sup_slot(s, t);
	sl->obj = id->obj;
	sl->proc = id->proc < s->fixed.max_procs ? id->proc : 0;
	sl->rec_ktid = id->ktid;
	s->follow->th[t].known = 1;
}

static void procs_known(struct det_sup *s, const struct det_proc *p, uint32_t n)
{
	/* each process's recorded pid, once known (the replica's wait and kill
	 * translate by it), and the first one's parent */
	for (uint32_t i = 0; i < n && i < s->fixed.max_procs; i++) {
		if (!p[i].rec_pid || sup_proc(s, i)->rec_pid)
			continue;
		if (i == 0)
			sup_proc(s, 0)->rec_ppid = p[0].rec_ppid;
		det_sup_replay_process(s, i, p[i].rec_pid, -1);
	}
}

/* Every thread's events are in the log (its END came): each count is
 * final (an exiting replica waits for the others' to be done,
 * replayer/enforce.c det_replay_before_exit). Called again it writes the
 * same counts: END and a standby's release may both come to it. */
static void close_counts(struct det_sup *s)
{
	struct follower *f = s->follow;
	for (uint32_t t = 0; t < f->nth; t++)
		atomic_store(&sup_slot(s, t)->sched_count, f->th[t].events);
}

/* Read the chunks written since the last look: 0, or -1 (stop following). */
static int read_log(struct det_sup *s)
{
	struct follower *f = s->follow;
	struct stat st;
	if (fstat(f->fd, &st) != 0)
		return ffail(s, "cannot read the capture log: %s", strerror(errno));
	uint64_t size = (uint64_t)st.st_size;
	if (size > FOLLOW_MAP)
		return ffail(s, "the capture log passed %llu GiB, more than the replica maps",
			     (unsigned long long)(FOLLOW_MAP >> 30));
	if (f->good == 0) {
		const struct det_log_header *h = (const void *)f->map;
		if (size < sizeof(*h))
			return 0;
		if (memcmp(h->magic, DET_LOG_MAGIC, 8) != 0 || h->version != DET_LOG_VERSION ||
		    h->rec_bytes != sizeof(struct det_rec) || h->shm_version != DET_SHM_VERSION)
			return ffail(s, "not a capture log of this det");
		f->good = sizeof(*h);
	}
	while (!f->ended && f->good + sizeof(struct det_log_chunk) <= size) {
		const struct det_log_chunk *k = (const void *)(f->map + f->good);
		const uint8_t *p = (const uint8_t *)(k + 1);
		if (k->bytes % 8 || k->bytes > DET_LOG_CHUNK_MAX || f->good + sizeof(*k) + k->bytes > size ||
		    det_log_check(p, k->bytes, k->type, k->bytes) != k->check)
			break; /* not whole yet */
		uint64_t poff = f->good + sizeof(*k);
		switch (k->type) {
		case DET_LOG_RING:
			if (k->bytes % sizeof(struct det_rec))
				return ffail(s, "a ring chunk of %u bytes: not a log det wrote", k->bytes);
			if (add_piece(s, k->thread, poff, k->bytes / sizeof(struct det_rec)))
				return -1;
			break;
		case DET_LOG_THREAD:
			if (k->bytes != sizeof(struct det_log_thread))
				return ffail(s, "a THREAD chunk of %u bytes: not a log det wrote", k->bytes);
			if (k->thread >= f->nth)
				return ffail(s, "the program has more than %u threads, the replica's most", f->nth);
			thread_known(s, k->thread, (const void *)p);
			break;
		case DET_LOG_PROCS:
			procs_known(s, (const void *)p, k->bytes / sizeof(struct det_proc));
			break;
		case DET_LOG_CLOCK: {
			struct det_log_clock ck;
			memcpy(&ck, p, sizeof(ck));
			f->strict = !!(ck.flags & DET_F_STRICT);
			break;
		}
		case DET_LOG_END:
			f->ended = 1;
			atomic_store(&f->end_read, 1);
			if (!atomic_load(&f->hold))
				close_counts(s);
			break;
		default:
			break;
		}
		f->good = poff + k->bytes;
	}
	if (!atomic_load(&f->ready) && f->th[0].known && sup_proc(s, 0)->rec_pid)
		atomic_store(&f->ready, 1);
	return 0;
}

/* --- each thread's events --- */

static const struct det_rec *at(struct follower *f, const struct fthread *th, uint32_t pi, uint32_t pos)
{
	return pi < th->npieces ? (const struct det_rec *)(f->map + th->pieces[pi].off) + pos : NULL;
}

static void step(const struct fthread *th, uint32_t *pi, uint32_t *pos)
{
	if (++*pos >= th->pieces[*pi].n) {
		++*pi;
		*pos = 0;
		while (*pi < th->npieces && th->pieces[*pi].n == 0)
			++*pi;
	}
}

/* Read thread t's entries up to its next event (kept across calls: its
 * entries may come in more than one chunk). 0, or -1. */
static int load_head(struct det_sup *s, uint32_t t)
{
	struct follower *f = s->follow;
	struct fthread *th = &f->th[t];
	const struct det_rec *e;
	while (!th->has_head && (e = at(f, th, th->pi, th->pos))) {
		step(th, &th->pi, &th->pos);
		if (e->kind < DET_KIND_LIMIT) {
			if (e->obj > FOLLOW_MAX_OBJ || (th->aux_pos != UINT64_MAX && th->aux_obj > FOLLOW_MAX_OBJ))
				return ffail(s, "the program has more than %u objects, the replica's most", FOLLOW_MAX_OBJ);
			th->head = *e;
			th->has_head = 1;
			th->ts_raw += e->dts;
			th->head_ts = th->ts_raw;
			th->result = e->flags & DET_RF_PENDING ? DET_RESULT_PENDING : 0;
			th->seen_at = sup_mono_ns();
			return 0;
		}
		switch (e->kind) {
		case DET_REC_AUXSEQ:
			th->aux_pos = e->seq;
			th->aux_obj = e->obj;
			break;
		case DET_REC_TS:
			th->ts_raw = e->ts;
			break;
		case DET_REC_DATA: {
			uint32_t n = e->flags <= DET_DATA_CHUNK ? e->flags : DET_DATA_CHUNK;
			if (th->ndata + n > th->cap_data) {
				uint32_t cap = th->cap_data ? th->cap_data * 2 : 256;
				while (cap < th->ndata + n)
					cap *= 2;
				uint8_t *d = realloc(th->data, cap);
				if (!d)
					return ffail(s, "out of memory");
				th->data = d;
				th->cap_data = cap;
			}
			memcpy(th->data + th->ndata, e, n); /* (the bytes are over seq..dts) */
			th->ndata += n;
			break;
		}
		default:
			break; /* OBJECT (replay binds by address), RESULT of an event fed already */
		}
	}
	return 0;
}

/* Is the head's result final: its RESULT entry came (pending: the call
 * came back), or its thread's next event (else), or it ends the thread, or
 * the capture ended? A RESULT found on the way is taken. */
static int settled(struct det_sup *s, uint32_t t)
{
	struct follower *f = s->follow;
	struct fthread *th = &f->th[t];
	if (th->head.kind == DET_EV_THREAD_EXIT)
		return 1;
	uint64_t idx = sup_feed_fed(s, t);
	int pending = th->result == DET_RESULT_PENDING;
	uint32_t pi = th->pi, pos = th->pos;
	const struct det_rec *e;
	while ((e = at(f, th, pi, pos))) {
		if (e->kind == DET_REC_RESULT && e->seq == idx) {
			th->result = e->result;
			return 1;
		}
		if (e->kind < DET_KIND_LIMIT && !pending)
			return 1;
		step(th, &pi, &pos);
	}
	if (!pending && sup_mono_ns() - th->seen_at >= SETTLE_NS)
		return 1; /* a release's rare failure would have come right after it */
	return f->ended; /* (a call still pending then never came back) */
}

static uint64_t *count_of(struct follower *f, uint32_t obj)
{
	return &f->count[obj <= FOLLOW_MAX_OBJ ? obj : 0];
}

/* May thread t's head go now (its places in the order are reached)? */
static int may_go(struct det_sup *s, uint32_t t)
{
	struct follower *f = s->follow;
	struct fthread *th = &f->th[t];
	const struct det_rec *e = &th->head;
	if (f->strict)
		return e->seq == f->gseq || th->forced;
	if (th->forced)
		return 1;
	if (e->seq != DET_SEQ_NONE && *count_of(f, e->obj) < (e->seq & ~DET_SEQ_OBSERVE))
		return 0;
	if (th->aux_pos != UINT64_MAX && *count_of(f, th->aux_obj) < th->aux_pos)
		return 0;
	if (is_create(e->kind) && f->next_child < e->aux)
		return 0;
	if (e->kind == DET_EV_PROC_WAIT && th->result > 0 && !f->ended)
		return 0; /* the child's threads: all of them first (see the rules) */
	if ((e->kind == DET_EV_PROC_FORK || e->kind == DET_EV_PROC_SPAWN) && th->result > 0 && !f->ended) {
		/* the child's process number and recorded pid first: the
		 * replica's fork takes them from the region */
		if (e->aux >= f->nth || !f->th[e->aux].known)
			return 0;
		uint32_t proc = sup_slot(s, e->aux)->proc;
		if (!sup_proc(s, proc)->rec_pid)
			return 0;
	}
	return 1;
}

/* --- the data ring --- */

/* Room for n bytes of input data: its offset, or UINT64_MAX (the replica
 * has not done the events whose data is there yet). */
static uint64_t data_room(struct det_sup *s, uint32_t n)
{
	struct follower *f = s->follow;
	while (f->dq_tail != f->dq_head) {
		struct dref *r = &f->dq[f->dq_tail & (f->dq_cap - 1)];
		if (atomic_load(&sup_slot(s, r->t)->done) <= r->idx)
			break;
		f->dq_tail++;
	}
	if (f->dq_tail == f->dq_head) {
		f->d_at = f->d_lo; /* all free */
		return n <= f->d_hi - f->d_lo ? f->d_lo : UINT64_MAX;
	}
	uint64_t oldest = f->dq[f->dq_tail & (f->dq_cap - 1)].start;
	if (f->d_at > oldest) {
		if (f->d_hi - f->d_at >= n)
			return f->d_at;
		if (oldest - f->d_lo >= n)
			return f->d_lo; /* wrap */
		return UINT64_MAX;
	}
	return oldest - f->d_at >= n ? f->d_at : UINT64_MAX;
}

static int data_keep(struct det_sup *s, uint32_t t, uint64_t idx, uint64_t off, uint32_t n)
{
	struct follower *f = s->follow;
	if (f->dq_head - f->dq_tail == f->dq_cap) {
		uint64_t cap = f->dq_cap * 2;
		struct dref *q = malloc(cap * sizeof(*q));
		if (!q)
			return ffail(s, "out of memory");
		for (uint64_t i = f->dq_tail; i != f->dq_head; i++)
			q[i & (cap - 1)] = f->dq[i & (f->dq_cap - 1)];
		free(f->dq);
		f->dq = q;
		f->dq_cap = cap;
	}
	f->dq[f->dq_head++ & (f->dq_cap - 1)] = (struct dref){t, idx, off, off + n};
	f->d_at = off + n;
	return 0;
}

/* --- the order, fed --- */

/* Feed thread t's head: 1 fed, 0 not now (its window or the data ring is
 * full: the replica has to move first), -1. */
static int feed_head(struct det_sup *s, uint32_t t)
{
	struct follower *f = s->follow;
	struct fthread *th = &f->th[t];
	const struct det_rec *e = &th->head;
	if (!sup_feed_room(s, t))
		return 0;
	uint64_t off = 0;
	if (th->ndata) {
		if (th->ndata > f->d_hi - f->d_lo)
			return ffail(s, "an input of %u bytes, more than the replica's data space (%llu)", th->ndata,
				     (unsigned long long)(f->d_hi - f->d_lo));
		off = data_room(s, th->ndata);
		if (off == UINT64_MAX)
			return 0;
		memcpy((char *)s->hdr + off, th->data, th->ndata);
		if (data_keep(s, t, sup_feed_fed(s, t), off, th->ndata))
			return -1;
	}
	sup_feed_put(s, t, atomic_load(&f->fed), th->result, e->kind, e->obj, e->aux, off, th->ndata);
	atomic_fetch_add(&f->fed, 1);
	/* the orders it moves on (recorder/convert_merge.c emit) */
	if (f->strict) {
		f->gseq = e->seq + 1;
	} else {
		if (is_create(e->kind) && f->next_child <= e->aux)
			f->next_child = (uint64_t)e->aux + 1;
		if (th->aux_pos != UINT64_MAX && *count_of(f, th->aux_obj) <= th->aux_pos)
			*count_of(f, th->aux_obj) = th->aux_pos + 1;
		if (e->seq != DET_SEQ_NONE && !(e->seq & DET_SEQ_OBSERVE) && *count_of(f, e->obj) <= e->seq)
			*count_of(f, e->obj) = e->seq + 1;
	}
	th->has_head = 0;
	th->forced = 0;
	th->ndata = 0;
	th->aux_pos = UINT64_MAX;
	return 1;
}

/* A signal delivered as its thread left det after its last event goes
 * right after that event (replayer/schedule.c looks for it there). */
static int glued(const struct fthread *th)
{
	return th->has_head && th->head.kind == DET_EV_SIGNAL && !(th->head.aux & DET_SIG_BEFORE);
}

/* Feed what can go: 1 if anything went, 0 if not, -1. */
static int feed_some(struct det_sup *s)
{
	struct follower *f = s->follow;
	int moved = 0;
	for (;;) {
		uint32_t best = UINT32_MAX;
		int any_head = 0;
		if (f->glue) {
			uint32_t t = f->glue - 1;
			if (load_head(s, t))
				return -1;
			if (!glued(&f->th[t]))
				f->glue = 0;
			else if (!settled(s, t))
				break;
			else
				best = t;
		}
		if (best == UINT32_MAX) {
			for (uint32_t i = 0; i < f->nactive; i++) {
				uint32_t t = f->active[i];
				struct fthread *th = &f->th[t];
				if (load_head(s, t))
					return -1;
				if (!th->has_head)
					continue;
				any_head = 1;
				if (!may_go(s, t) || !settled(s, t))
					continue;
				if (best == UINT32_MAX || th->head_ts < f->th[best].head_ts)
					best = t;
			}
		}
		if (best == UINT32_MAX) {
			if (!f->ended || !any_head)
				break;
			/* the capture ended and nothing can go: a position never
			 * came (its thread died between taking it and logging):
			 * the earliest head goes anyway, as the converter does */
			for (uint32_t i = 0; i < f->nactive; i++) {
				uint32_t t = f->active[i];
				if (f->th[t].has_head && (best == UINT32_MAX || f->th[t].head_ts < f->th[best].head_ts))
					best = t;
			}
			f->th[best].forced = 1;
		}
		int r = feed_head(s, best);
		if (r <= 0) {
			if (r < 0)
				return -1;
			break;
		}
		if (++moved >= FEED_BATCH)
			break; /* read the log again: what is captured, and the lag, stay current */
		if (load_head(s, best))
			return -1;
		f->glue = glued(&f->th[best]) ? best + 1 : 0;
	}
	sup_feed_publish(s);
	return moved > 0;
}

static uint64_t mono_ns(void)
{
	return sup_mono_ns();
}

static uint64_t replica_done(struct det_sup *s)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < s->follow->nth; i++)
		n += atomic_load(&sup_slot(s, i)->done);
	return n;
}

static void sample(struct follower *f)
{
	uint64_t c = atomic_load(&f->captured);
	pthread_mutex_lock(&f->mu);
	if (!f->nsamp || f->samp[(f->nsamp - 1) % FOLLOW_SAMPLES].captured != c) {
		f->samp[f->nsamp % FOLLOW_SAMPLES].captured = c;
		f->samp[f->nsamp % FOLLOW_SAMPLES].at = mono_ns();
		f->nsamp++;
	}
	pthread_mutex_unlock(&f->mu);
}

static void follow_free(struct det_sup *s)
{
	struct follower *f = s->follow;
	if (f) {
		atomic_store(&f->stop, 1);
		if (f->map && f->map != MAP_FAILED)
			munmap((void *)f->map, FOLLOW_MAP);
		if (f->fd >= 0)
			close(f->fd);
		for (uint32_t t = 0; t < f->nth && f->th; t++) {
			free(f->th[t].pieces);
			free(f->th[t].data);
		}
		free(f->th);
		free(f->active);
		free(f->count);
		free(f->dq);
		pthread_mutex_destroy(&f->mu);
		free(f);
		s->follow = NULL;
	}
	sup_feed_release(s);
}

SUP_EXPORT struct det_sup *det_sup_follow_new(const char *log_path, uint32_t max_threads, uint32_t flags,
					      uint64_t data_bytes, uint64_t max_lag, char *err, uint32_t errlen)
{
	struct det_sup *s = sup_alloc();
	if (!s)
		return NULL;
	s->release = follow_free;
	struct follower *f = s->follow = calloc(1, sizeof(*f));
	int ok = 0;
	if (!f) {
		sup_fail(s, "out of memory");
		goto out;
	}
	f->fd = -1;
	pthread_mutex_init(&f->mu, NULL);
	if (max_threads < 1 || max_threads > (1u << 16) || data_bytes < 4096) {
		sup_fail(s, "a replica of %u threads and %llu bytes of data cannot be made", max_threads,
			 (unsigned long long)data_bytes);
		goto out;
	}
	f->nth = max_threads;
	f->max_lag = max_lag;
	f->fd = open(log_path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0) {
		sup_fail(s, "cannot open %s: %s", log_path, strerror(errno));
		goto out;
	}
	f->map = mmap(NULL, FOLLOW_MAP, PROT_READ, MAP_SHARED, f->fd, 0);
	if (f->map == MAP_FAILED) {
		f->map = NULL;
		sup_fail(s, "cannot map %s: %s", log_path, strerror(errno));
		goto out;
	}
	f->th = calloc(max_threads, sizeof(*f->th));
	f->active = calloc(max_threads, sizeof(*f->active));
	f->count = calloc(FOLLOW_MAX_OBJ + 1, sizeof(*f->count));
	f->dq_cap = 1024;
	f->dq = malloc(f->dq_cap * sizeof(*f->dq));
	if (!f->th || !f->active || !f->count || !f->dq) {
		sup_fail(s, "out of memory");
		goto out;
	}
	for (uint32_t t = 0; t < max_threads; t++)
		f->th[t].aux_pos = UINT64_MAX;
	f->next_child = 1;
	struct sup_layout l = {
		.mode = DET_MODE_REPLAY,
		.max_threads = max_threads,
		.objects_cap = sup_pow2((uint64_t)FOLLOW_MAX_OBJ * 2 + 64, 1024),
		.objrev_count = FOLLOW_MAX_OBJ,
		.sched_entries = (uint64_t)max_threads * FOLLOW_WINDOW,
		.data_bytes = data_bytes,
	};
	if (sup_map(s, &l))
		goto out;
	struct det_shm_header *h = s->hdr;
	h->flags = flags;
	h->threads_recorded = max_threads;
	h->events_recorded = DET_SCHED_OPEN;
	for (uint32_t i = 0; i < max_threads; i++) {
		struct det_slot *sl = det_shm_slot(h, i);
		sl->num = i;
		sl->sched_off = h->sched_off + (uint64_t)i * FOLLOW_WINDOW * sizeof(struct det_sched);
		sl->sched_count = DET_SCHED_OPEN;
		sl->sched_window = FOLLOW_WINDOW;
	}
	f->d_lo = f->d_at = s->data_off;
	f->d_hi = s->data_off + data_bytes;
	if (sup_feed_open(s, max_threads, FOLLOW_MAX_OBJ) || read_log(s))
		goto out;
	ok = 1;
out:
	if (!ok) {
		if (err && errlen)
			snprintf(err, errlen, "%s", s->err);
		det_sup_free(s);
		return NULL;
	}
	return s;
}

/* Follow until det_sup_follow_stop, or until everything is fed once the
 * capture ended and the replica has taken it: 0, or -1 (det_sup_error: why
 * it stopped following; the replica is to be stopped). */
SUP_EXPORT int det_sup_follow_run(struct det_sup *s)
{
	struct follower *f = s->follow;
	struct det_shm_header *h = s->hdr;
	while (!atomic_load(&f->stop)) {
		uint32_t kick = atomic_load(&h->feed_kick);
		if (read_log(s))
			return -1;
		sample(f);
		int r = feed_some(s);
		if (r < 0)
			return -1;
		if (f->ended && !atomic_load(&f->all_fed) && atomic_load(&f->fed) == atomic_load(&f->captured))
			atomic_store(&f->all_fed, 1);
		if (f->max_lag) {
			uint64_t done = replica_done(s), captured = atomic_load(&f->captured);
			if (captured > done + f->max_lag)
				return ffail(s, "the replica fell %llu events behind the recording (at most %llu)",
					     (unsigned long long)(captured - done), (unsigned long long)f->max_lag);
		}
		if (r > 0)
			continue;
		struct timespec ts = {0, 1000 * 1000};
		syscall(SYS_futex, &h->feed_kick, FUTEX_WAIT, kick, &ts, NULL, 0);
	}
	return 0;
}

/* A warm standby (detrec --follow --standby): when the log ends, every
 * thread of the replica stays at its next event, the program's state as of
 * the recording's last event, until det_sup_follow_release (the program
 * ended well: the replica ends as it did). */
SUP_EXPORT void det_sup_follow_hold(struct det_sup *s)
{
	if (s->follow)
		atomic_store(&s->follow->hold, 1);
}

SUP_EXPORT void det_sup_follow_release(struct det_sup *s)
{
	struct follower *f = s->follow;
	if (!f)
		return;
	atomic_store(&f->hold, 0);
	if (atomic_load(&f->end_read))
		close_counts(s);
}

SUP_EXPORT void det_sup_follow_stop(struct det_sup *s)
{
	if (!s->follow)
		return;
	atomic_store(&s->follow->stop, 1);
	atomic_fetch_add(&s->hdr->feed_kick, 1);
	syscall(SYS_futex, &s->hdr->feed_kick, FUTEX_WAKE, 1, NULL, NULL, 0);
}

SUP_EXPORT void det_sup_follow_state(struct det_sup *s, struct det_follow_state *out)
{
	struct follower *f = s->follow;
	memset(out, 0, sizeof(*out));
	if (!f)
		return;
	out->captured = atomic_load(&f->captured);
	out->fed = atomic_load(&f->fed);
	out->done = replica_done(s);
	out->ready = (uint32_t)atomic_load(&f->ready);
	out->all_fed = (uint32_t)atomic_load(&f->all_fed);
	out->stopped = (uint32_t)atomic_load(&f->stopped);
	/* lag: since when the log has held the event after the replica's last */
	pthread_mutex_lock(&f->mu);
	uint64_t first = f->nsamp > FOLLOW_SAMPLES ? f->nsamp - FOLLOW_SAMPLES : 0;
	for (uint64_t i = first; i < f->nsamp; i++) {
		if (f->samp[i % FOLLOW_SAMPLES].captured > out->done) {
			out->lag_ns = mono_ns() - f->samp[i % FOLLOW_SAMPLES].at;
			break;
		}
	}
	pthread_mutex_unlock(&f->mu);
}
