/*
 * recorder/convert_merge.c - libdetsup.so: the converter's merge: the threads'
 * events (convert_log.c) put in one order, each one stored as it is placed
 * (convert_write.c) and added to the schedule digest (supervisor/digest.h).
 *
 * Rules of this file:
 *  - The merged order is a linear extension of each thread's order, each
 *    object's order (parallel recording: positions taken on the object's
 *    counter) and the order of creates (thread numbers); among the events
 *    it may emit next, it takes the one with the earliest timestamp, so the
 *    order is as close to real time as those orders allow. A strict
 *    recording's global numbers are its order. Why any such order replays
 *    faithfully: docs/DESIGN.md.
 *  - A position that never came (its thread died between taking it and
 *    publishing the event) would block its object for ever: when nothing
 *    can go on, the earliest waiting event goes anyway and is counted as
 *    forced. In a log whose capture was cut (no END chunk: detrec was
 *    killed) the threads' entries stop at different points, so there the
 *    merge stops instead: the trace is the largest prefix that is
 *    consistent, and the events after it are counted as cut.
 */
#include "convert.h"
#include "../supervisor/digest.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static inline uint64_t *count_of(struct conv *c, uint32_t obj)
{
	if (obj == CHAIN)
		return &c->next_child;
	if (obj >= c->ncount && grow((void **)&c->count, &c->ncount, (uint64_t)obj + 1, sizeof(*c->count)))
		return NULL;
	return &c->count[obj];
}

static int is_create(uint16_t kind)
{
	return kind == DET_EV_THREAD_CREATE || kind == DET_EV_PROC_FORK || kind == DET_EV_PROC_SPAWN;
}

static int cmp_pid(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

/* Where pid is in c->pids, + 1 (0: no process had it). */
static uint32_t pid_rank(struct conv *c, int32_t pid)
{
	const int32_t *at = bsearch(&pid, c->pids, c->npids, sizeof(*c->pids), cmp_pid);
	return at ? (uint32_t)(at - c->pids) + 1 : 0;
}

/* The processes' pids, and each thread's (a wait for a child is ordered
 * after the child's threads by counting those with events to come, so
 * that it costs the same however many threads the run had). */
static int index_pids(struct conv *c)
{
	c->pids = malloc((c->nprocs + 1) * sizeof(*c->pids));
	c->pid_live = calloc(c->nprocs + 1, sizeof(*c->pid_live));
	if (!c->pids || !c->pid_live)
		return fail(c, "out of memory");
	for (uint32_t i = 0; i < c->nprocs; i++)
		c->pids[i] = c->procs[i].rec_pid;
	qsort(c->pids, c->nprocs, sizeof(*c->pids), cmp_pid);
	for (uint32_t i = 0; i < c->nprocs; i++)
		if (!c->npids || c->pids[c->npids - 1] != c->pids[i])
			c->pids[c->npids++] = c->pids[i];
	for (uint32_t t = 0; t < c->nst; t++) {
		struct stream *s = &c->st[t];
		if (s->has_ident && s->ident.proc < c->nprocs)
			s->pid = pid_rank(c, c->procs[s->ident.proc].rec_pid);
	}
	return 0;
}

/* Whether the head, a wait that returned a child, says the child ended
 * (exited or was killed), not that it stopped or went on: its data is the
 * wait status (preload/wait.c), or waitid's siginfo (aux's top bit). */
static int reports_end(const struct stream *s)
{
	for (uint32_t i = 0; i < s->npend; i++) {
		const struct det_rec *p = s->pend[i];
		if (p->kind != DET_REC_DATA)
			continue;
		int32_t w[3];
		if (p->flags < sizeof(w))
			return 1;
		memcpy(w, p, sizeof(w));
		if (s->head->aux & DET_AUX_PROC_WAIT_WAITID) /* si_code */
			return w[2] == CLD_EXITED || w[2] == CLD_KILLED || w[2] == CLD_DUMPED;
		return WIFEXITED(w[0]) || WIFSIGNALED(w[0]);
	}
	return 1;
}

/* What the head waits for: 0 if nothing (it may be emitted), else 1 with
 * the key. A count past the wanted position means that position was
 * skipped (forced): the event may go. */
static int blocked_on(struct conv *c, struct stream *s, uint32_t *obj, uint64_t *val)
{
	const struct det_rec *e = s->head;
	if (c->strict || s->forced_head)
		return 0;
	if (e->seq != DET_SEQ_NONE) {
		uint64_t *n = count_of(c, e->obj);
		uint64_t want = e->seq & ~DET_SEQ_OBSERVE;
		if (n && *n < want) {
			*obj = e->obj;
			*val = want;
			return 1;
		}
	}
	if (s->aux_pos != UINT64_MAX) {
		uint64_t *n = count_of(c, s->aux_obj);
		if (n && *n < s->aux_pos) {
			*obj = s->aux_obj;
			*val = s->aux_pos;
			return 1;
		}
	}
	if (is_create(e->kind) && c->next_child < e->aux) {
		*obj = CHAIN;
		*val = e->aux;
		return 1;
	}
	if (e->kind == DET_EV_PROC_WAIT && s->head_result > 0 && s->head_result <= INT32_MAX && reports_end(s)) {
		/* waitpid returned this child's end: everything its threads did
		 * came first (the thread itself aside, if a pid says it is the
		 * child's) */
		uint32_t p = pid_rank(c, (int32_t)s->head_result), self = p && s->pid == p;
		if (p && c->pid_live[p - 1] > self) {
			*obj = ENDED;
			*val = (uint64_t)s->head_result << 1 | self;
			return 1;
		}
	}
	return 0;
}

/* A signal delivered as its thread left det after its last event comes
 * right after that event in the order (replay looks for it there, in the
 * entry next to the event's: replayer/schedule.c). */
static int glued(struct stream *s)
{
	return s->head->kind == DET_EV_SIGNAL && !(s->head->aux & DET_SIG_BEFORE);
}

static uint64_t prio(struct conv *c, uint32_t t)
{
	const struct det_rec *e = c->st[t].head;
	return c->strict ? e->seq : (uint64_t)c->st[t].head_ts;
}

static int heap_less(struct conv *c, uint32_t a, uint32_t b)
{
	uint64_t pa = prio(c, a), pb = prio(c, b);
	return pa < pb || (pa == pb && a < b);
}

static void heap_push(struct conv *c, uint32_t t)
{
	uint32_t i = c->nheap++;
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (!heap_less(c, t, c->heap[p]))
			break;
		c->heap[i] = c->heap[p];
		i = p;
	}
	c->heap[i] = t;
}

static uint32_t heap_pop(struct conv *c)
{
	uint32_t top = c->heap[0], last = c->heap[--c->nheap], i = 0;
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		uint32_t mv = last;
		if (l < c->nheap && heap_less(c, c->heap[l], mv)) {
			m = l;
			mv = c->heap[l];
		}
		if (r < c->nheap && heap_less(c, c->heap[r], mv))
			m = r;
		if (m == i)
			break;
		c->heap[i] = c->heap[m];
		i = m;
	}
	if (c->nheap)
		c->heap[i] = last;
	return top;
}

static inline uint32_t bucket_of(struct conv *c, uint32_t obj, uint64_t val)
{
	return (uint32_t)(det_mix64(((uint64_t)obj << 40) ^ val) & (c->nbuckets - 1));
}

/* The thread's head can go, or waits: put it where it belongs. */
static void place_thread(struct conv *c, uint32_t t)
{
	struct stream *s = &c->st[t];
	uint32_t obj;
	uint64_t val;
	if (!blocked_on(c, s, &obj, &val)) {
		heap_push(c, t);
		return;
	}
	uint32_t b = bucket_of(c, obj, val);
	s->wait_key_obj = obj;
	s->wait_key_val = val;
	c->waiters[c->nwaiters++] = t;
	s->waiting = c->nwaiters;
	s->wait_next = c->buckets[b];
	c->buckets[b] = t + 1;
}

/* Thread t waits no more (it is out of its bucket's chain, or the chains
 * are made again). */
static void unwait(struct conv *c, uint32_t t)
{
	uint32_t at = c->st[t].waiting - 1, last = c->waiters[--c->nwaiters];
	c->waiters[at] = last;
	c->st[last].waiting = at + 1;
	c->st[t].waiting = 0;
}

/* obj's count became val: the threads waiting for that may go on. */
static void wake(struct conv *c, uint32_t obj, uint64_t val)
{
	uint32_t b = bucket_of(c, obj, val);
	uint32_t *link = &c->buckets[b];
	while (*link) {
		uint32_t t = *link - 1;
		struct stream *s = &c->st[t];
		if (s->wait_key_obj == obj && s->wait_key_val == val) {
			*link = s->wait_next;
			unwait(c, t);
			place_thread(c, t);
		} else {
			link = &s->wait_next;
		}
	}
}

/* Thread t has no events to come: waits for its process's pid may end. */
static void thread_ended(struct conv *c, uint32_t t)
{
	uint32_t p = c->st[t].pid;
	if (!p)
		return;
	uint32_t left = --c->pid_live[p - 1];
	if (left <= 1)
		wake(c, ENDED, (uint64_t)c->pids[p - 1] << 1 | left);
}

/* Nothing can go on: the earliest waiting event goes anyway. (Only the
 * waiting threads are looked at, not every thread number.) */
static int force_one(struct conv *c)
{
	uint32_t best = UINT32_MAX;
	for (uint32_t i = 0; i < c->nwaiters; i++)
		if (best == UINT32_MAX || heap_less(c, c->waiters[i], best))
			best = c->waiters[i];
	if (best == UINT32_MAX)
		return 0;
	/* it goes; every waiter is placed again (counts may have jumped: the
	 * order they are placed in changes nothing) */
	c->st[best].forced_head = 1;
	c->stats.forced++;
	uint32_t n = c->nwaiters;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t t = c->waiters[i];
		c->buckets[bucket_of(c, (uint32_t)c->st[t].wait_key_obj, c->st[t].wait_key_val)] = 0;
	}
	uint32_t *again = c->waiters + c->nst; /* (the second half) */
	memcpy(again, c->waiters, n * sizeof(*again));
	for (uint32_t i = 0; i < n; i++)
		c->st[again[i]].waiting = 0;
	c->nwaiters = 0;
	for (uint32_t i = 0; i < n; i++)
		place_thread(c, again[i]);
	return 1;
}

/* Emit thread t's head as the next event of the order (into the trace,
 * when there is one to write, and into the schedule digest). */
static int emit(struct conv *c, uint32_t t)
{
	struct stream *s = &c->st[t];
	const struct det_rec *e = s->head;
	uint64_t seq = c->seq++;
	if (det_in_schedule(e->kind)) {
		c->digest = det_digest_step(c->digest, t, e->kind, e->obj);
		c->digest_n++;
	}
	if (c->db && store(c, t, seq))
		return -1;
	s->recent_seq[s->emitted % 16] = seq;
	s->emitted++;
	c->stats.events++;
	if (is_create(e->kind) && e->aux < c->nst)
		c->create_seq[e->aux] = (int64_t)seq;
	if (c->strict)
		return 0;
	/* the orders it moves on */
	if (is_create(e->kind) && c->next_child <= e->aux) {
		c->next_child = (uint64_t)e->aux + 1;
		wake(c, CHAIN, c->next_child);
	}
	if (s->aux_pos != UINT64_MAX) {
		uint64_t *n = count_of(c, s->aux_obj);
		if (!n)
			return fail(c, "out of memory");
		if (*n <= s->aux_pos) {
			*n = s->aux_pos + 1;
			wake(c, s->aux_obj, *n);
		}
	}
	if (e->seq != DET_SEQ_NONE && !(e->seq & DET_SEQ_OBSERVE)) {
		uint64_t *n = count_of(c, e->obj);
		if (!n)
			return fail(c, "out of memory");
		if (*n <= e->seq) {
			*n = e->seq + 1;
			wake(c, e->obj, *n);
		}
	}
	return 0;
}

int merge(struct conv *c)
{
	c->nbuckets = 64;
	while (c->nbuckets < 4 * c->nst)
		c->nbuckets *= 2;
	c->buckets = calloc(c->nbuckets, sizeof(*c->buckets));
	c->waiters = malloc(2 * (c->nst + 1) * sizeof(*c->waiters)); /* (and force_one's copy) */
	c->heap = calloc(c->nst + 1, sizeof(*c->heap));
	c->create_seq = malloc((c->nst + 1) * sizeof(*c->create_seq));
	if (!c->buckets || !c->waiters || !c->heap || !c->create_seq || index_pids(c))
		return fail(c, "out of memory");
	for (uint32_t t = 0; t <= c->nst; t++)
		c->create_seq[t] = -1;
	c->next_child = 1;
	for (uint32_t t = 0; t < c->nst; t++) {
		struct stream *s = &c->st[t];
		while (s->pi < s->npieces && s->pieces[s->pi].n == 0)
			s->pi++;
		if (load_head(c, s))
			return -1;
		if (s->head) {
			if (s->pid)
				c->pid_live[s->pid - 1]++;
			place_thread(c, t);
		}
	}
	for (;;) {
		/* (strict: the global numbers must follow each other) */
		if (c->strict && !c->stats.complete && c->nheap && c->st[c->heap[0]].head->seq != c->seq) {
			c->st[c->heap[0]].waiting = 0;
			c->nheap = 0; /* (all of them are counted below) */
		}
		if (!c->nheap && !c->stats.complete) {
			/* the capture was cut (detrec killed): each thread's events
			 * are there up to some point, not the same for all; what can
			 * be ordered is a consistent prefix, and the rest is left out */
			for (uint32_t t = 0; t < c->nst; t++)
				for (struct stream *s = &c->st[t]; s->head; load_head(c, s))
					c->stats.cut++;
			break;
		}
		if (!c->nheap) {
			int r = force_one(c);
			if (r < 0)
				return -1;
			if (!r)
				break;
			continue;
		}
		uint32_t t = heap_pop(c);
		/* a thread goes on while its next event may go and is the earliest */
		for (;;) {
			if (emit(c, t) || load_head(c, &c->st[t]))
				return -1;
			struct stream *s = &c->st[t];
			if (!s->head) {
				thread_ended(c, t);
				break;
			}
			uint32_t obj;
			uint64_t val;
			if (glued(s))
				continue;
			if (!blocked_on(c, s, &obj, &val) && (!c->nheap || heap_less(c, t, c->heap[0])) &&
			    !(c->strict && !c->stats.complete && s->head->seq != c->seq))
				continue;
			place_thread(c, t);
			break;
		}
	}
	return writer_end(c);
}
