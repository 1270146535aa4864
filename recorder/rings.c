/*
 * recorder/rings.c - the record log: each thread's event ring in the region
 * shared with detrec (its capture copies the rings out while the program runs).
 *
 * Rules of this file:
 *  - The record hot path (det_rec_*) takes no lock, makes no syscall and
 *    allocates nothing: an event is one atomic add on its object's counter
 *    (strict mode: on the global clock) plus a 32-byte store into the
 *    thread's own ring.
 *  - No event is ever dropped: a full ring makes its thread wait for detrec.
 *  - Never call an interposed function from here; use raw syscalls.
 *  - Memory ordering arguments assume x86-64 (TSO); they are spelled out
 *    where they matter.
 */
#include "rings.h"

#include <errno.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *timeout)
{
	return det_sys(SYS_futex, (long)addr, op, val, (long)timeout, 0, 0);
}

/* ------------------------------------------------------------------ */
/* threads: a ring of its own */

void det_rec_claim_ring(struct det_thread *t)
{
	struct det_shm_header *h = det_hdr;
	uint32_t n = h->ring_count;
	unsigned idle = 0;
	for (unsigned attempt = 0;; attempt++) {
		uint32_t freed = atomic_load(&h->rings_freed);
		for (uint32_t i = 0; i < n; i++) {
			uint32_t r = (t->num + i) % n;
			uint32_t expected = 0;
			if (atomic_load_explicit(det_shm_ring_owner(h, r), memory_order_relaxed) == 0 &&
			    atomic_compare_exchange_strong(det_shm_ring_owner(h, r), &expected, t->num + 1)) {
				t->slot->ring = r + 1;
				t->ring = det_shm_ring(h, r);
				t->ring_entries = h->ring_entries;
				/* A reused ring starts where its last owner's capture ended. */
				atomic_store(&t->slot->head, 0);
				atomic_store(&t->slot->tail, 0);
				t->head = t->pos = t->tail_seen = t->published = t->kick_at = 0;
				t->ts_last = 0; /* its first event says its whole timestamp */
				return;
			}
		}
		/* Every ring belongs to a live thread or waits to be captured. */
		static _Atomic int told;
		if (idle == 20 && !atomic_exchange(&told, 1)) /* a second with no ring freed */
			det_msg("T%u waits for a free event ring: %u threads are alive (detrec --rings raises the limit)",
				t->num, n);
		if (det_strict)
			det_ops.strict_not_ready(t->num);
		/* Wait for the capture to free one: it wakes every waiter when it
		 * does (polling with a kick each, a thousand waiters kept it
		 * scanning and the system busy: 25 s for stress-ng's 0.3 s). */
		if (attempt == 0) {
			atomic_fetch_add(&h->capture_kick, 1);
			futex(&h->capture_kick, FUTEX_WAKE, 1, NULL);
		}
		struct timespec ts = {0, 50 * 1000 * 1000};
		if (futex(&h->rings_freed, FUTEX_WAIT, freed, &ts) == -ETIMEDOUT)
			idle++;
	}
}


/* ------------------------------------------------------------------ */
/* the record log */

static __attribute__((noinline)) void ring_wait(struct det_thread *t, uint64_t need)
{
	struct det_slot *s = t->slot;
	for (;;) {
		t->tail_seen = atomic_load_explicit(&s->tail, memory_order_acquire);
		if (t->head + need - t->tail_seen <= t->ring_entries)
			return;
		/* Publish what we have so the supervisor can drain it. */
		atomic_store(&s->waiting, 1);
		atomic_fetch_add(&det_hdr->capture_kick, 1);
		futex(&det_hdr->capture_kick, FUTEX_WAKE, 1, NULL);
		t->tail_seen = atomic_load(&s->tail);
		if (t->head + need - t->tail_seen <= t->ring_entries) {
			atomic_store(&s->waiting, 0);
			return;
		}
		struct timespec ts = {0, 10 * 1000 * 1000};
		futex(&s->waiting, FUTEX_WAIT, 1, &ts);
	}
}

/* Past half its ring: wake the capture (once per eighth of a ring), so it
 * copies while the thread goes on; wait only if the ring is full. */
static __attribute__((noinline)) void ring_room(struct det_thread *t, uint64_t n)
{
	if (det_hdr->flags & DET_F_NOTRACE) { /* detrun: no one reads the ring */
		t->tail_seen = t->head;
		return;
	}
	t->tail_seen = atomic_load_explicit(&t->slot->tail, memory_order_acquire);
	if (t->head + n - t->tail_seen <= t->ring_entries / 2)
		return;
	if (t->head >= t->kick_at) {
		t->kick_at = t->head + t->ring_entries / 8;
		atomic_fetch_add(&det_hdr->capture_kick, 1);
		futex(&det_hdr->capture_kick, FUTEX_WAKE, 1, NULL);
	}
	if (t->head + n - t->tail_seen > t->ring_entries)
		ring_wait(t, n);
}

/* Make room for n entries before writing an event (with its entries). */
static inline void ring_reserve(struct det_thread *t, uint64_t n)
{
	if (det_unlikely(t->head + n - t->tail_seen > t->ring_entries / 2))
		ring_room(t, n);
}

static inline struct det_rec *ring_put(struct det_thread *t)
{
	struct det_rec *r = &t->ring[t->pos];
	t->head++;
	if (++t->pos == t->ring_entries)
		t->pos = 0;
	return r;
}

void det_rec_object(struct det_thread *t, uint32_t id, enum det_objkind kind, uint64_t addr)
{
	/* Published together with the event that first uses the object. */
	ring_reserve(t, 2);
	struct det_rec *r = ring_put(t);
	r->seq = 0;
	r->ra = addr;
	r->obj = id;
	r->aux = kind;
	r->dts = 0;
	r->kind = DET_REC_OBJECT;
	r->flags = 0;
}

/*
 * The event's place in the order (include/det/shm.h struct det_rec.seq).
 *
 * Strict mode: the next number of the global clock (one thread runs at a
 * time, so the clock's line moves only when the turn does).
 *
 * Parallel recording: a position on the event's object, from the object's
 * own counter: threads that share no object share no line, and the lock's
 * holder usually has its counter's line already. Any order that keeps each
 * thread's order and each object's order is a faithful replay order;
 * recorder/convert.c builds one after the run (the argument is in
 * docs/DESIGN.md). Inputs need no place, except hand-offs through
 * descriptors (det_kind_handoff: on object 0, a write's before it runs, a
 * read's after it returns). An acquisition that failed only
 * looked at its object: it takes no position (so it cannot be ordered
 * before the event of a holder that updates two objects, see aux_place).
 */
static inline uint64_t place(struct det_op *op, int observe)
{
	if (det_unlikely(det_strict))
		return atomic_fetch_add_explicit(&det_hdr->clock, 1, memory_order_seq_cst) & DET_SEQ_MASK;
	if (det_kind_unordered(op->kind))
		return DET_SEQ_NONE;
	uint32_t obj = op->obj;
	if (det_unlikely(obj >= det_hdr->objseq_count))
		det_fatal("the program made more synchronization objects than det records in a run (%u; every "
			  "pthread_*_init, and the first use of an address, makes one)", det_hdr->objseq_count);
	DET_ATOMIC(uint64_t) *n = det_shm_objseq(det_hdr, obj);
	if (det_unlikely(observe))
		return atomic_load_explicit(n, memory_order_acquire) | DET_SEQ_OBSERVE;
	return atomic_fetch_add_explicit(n, 1, memory_order_seq_cst);
}

/*
 * A condition wait and its wake-up also take a position on their mutex,
 * after the one on the condition variable and while holding the mutex: no
 * other thread can take a mutex position in between (failed acquisitions
 * only look), so the event has one moment, its condition position, and the
 * orders stay acyclic. The position goes in an AUXSEQ entry before the event.
 */
static inline void aux_place(struct det_op *op)
{
	uint32_t obj = op->aux;
	if (det_unlikely(det_event_also_handoff(op->kind, op->aux)) && !det_strict)
		obj = 0; /* a place among the hand-offs, on object 0 (include/det/events.h) */
	else if (det_likely(!op->aux_addr) || det_strict || !op->aux || op->aux >= det_hdr->objseq_count)
		return;
	struct det_rec *r = ring_put(op->t);
	memset(r, 0, sizeof(*r));
	r->seq = atomic_fetch_add_explicit(det_shm_objseq(det_hdr, obj), 1, memory_order_seq_cst);
	r->obj = obj;
	r->kind = DET_REC_AUXSEQ;
}

/* A timestamp that does not fit an entry's dts (the thread's first, one
 * after a long pause, or in other units) goes in a TS entry of its own. */
static __attribute__((noinline)) void put_ts(struct det_thread *t, uint64_t now, uint16_t flags)
{
	struct det_rec *r = ring_put(t);
	memset(r, 0, sizeof(*r));
	r->ts = now;
	r->kind = DET_REC_TS;
	r->flags = flags;
	t->ts_last = now;
	t->ts_flags = flags;
}

/* The event, its result if not 0 (a RESULT entry after it: room for it was
 * reserved), published together. */
static inline void write_event(struct det_op *op, int64_t result)
{
	struct det_thread *t = op->t;
	uint64_t now = det_now();
	uint16_t flags = det_tsc_trapped ? DET_RF_TS_NS : 0;
	if (det_unlikely(now - t->ts_last > UINT32_MAX || !t->ts_last || flags != t->ts_flags))
		put_ts(t, now, flags);
	struct det_rec *r = ring_put(t);
	r->seq = op->seq;
	r->ra = op->ra;
	r->obj = op->obj;
	r->aux = op->aux;
	r->dts = (uint32_t)(now - t->ts_last);
	r->kind = op->kind;
	t->ts_last = now;
	op->idx = t->idx++;
	if (det_unlikely(result != 0)) {
		if (result == DET_RESULT_PENDING) {
			flags |= DET_RF_PENDING;
		} else {
			struct det_rec *x = ring_put(t);
			memset(x, 0, sizeof(*x));
			x->seq = op->idx;
			x->result = result;
			x->kind = DET_REC_RESULT;
		}
	}
	r->flags = flags;
	atomic_store_explicit(&t->slot->head, t->head, memory_order_release);
}

/* Take the event's places and publish it: room for its entries (a TS, the
 * event, its AUXSEQ, its RESULT or a later one) was reserved. */
static inline void log_event(struct det_op *op, int64_t result, int observe)
{
	op->seq = place(op, observe);
	aux_place(op);
	write_event(op, result);
}

/*
 * A release-like event is published before its operation runs: once the
 * operation is visible to other threads, the process may die (another
 * thread exits, crashes, or detrec is killed) and the event must already be
 * in the log. Its result is assumed to be 0; the rare failure is logged as
 * a DET_REC_RESULT entry after the operation.
 */
void det_rec_release_begin(struct det_op *op)
{
	if (det_unlikely(det_strict) && !op->t->holding && !op->t->exited)
		det_ops.strict_acquire(op->t);
	ring_reserve(op->t, 4); /* a TS, the event, its AUXSEQ, room for a result */
	log_event(op, 0, 0);
}

/* The moment between two events: where strict mode may switch threads and
 * parallel chaos may pause. */
static inline void boundary(struct det_thread *t, uint16_t kind, int64_t result)
{
	if (det_unlikely(det_strict)) {
		/* an exiting thread gives its turn up for good just after; a
		 * trapped atomic's next event is its switch point (keep_turn) */
		if (kind != DET_EV_THREAD_EXIT && !t->keep_turn)
			det_ops.strict_after_event(t, det_ops.strict_point_of(kind, result));
	}
	else if (det_unlikely(det_chaos))
		det_ops.chaos_delay(t);
}

/* A call whose result matters, logged before it runs as "pending" (it may
 * never come back), and completed by det_rec_call_end. */
void det_rec_call_begin(struct det_op *op)
{
	if (det_unlikely(det_strict) && !op->t->holding && !op->t->exited)
		det_ops.strict_acquire(op->t);
	ring_reserve(op->t, 4); /* a TS, the event, its AUXSEQ, room for its result */
	log_event(op, DET_RESULT_PENDING, 0);
}

void det_rec_call_end(struct det_op *op, int64_t result)
{
	det_rec_fix_result(op, result);
	boundary(op->t, op->kind, result);
}

/* A result entry for the thread's event `idx`, already published (room
 * reserved). */
static void put_result(struct det_thread *t, uint64_t idx, int64_t result)
{
	struct det_rec *r = ring_put(t);
	memset(r, 0, sizeof(*r));
	r->seq = idx;
	r->kind = DET_REC_RESULT;
	r->result = result;
	atomic_store_explicit(&t->slot->head, t->head, memory_order_release);
}

void det_rec_end(struct det_op *op, int64_t result)
{
	if (det_unlikely(result != 0))
		put_result(op->t, op->idx, result);
	boundary(op->t, op->kind, result);
}

/* The event `op` (already published) returned `result` after all. */
void det_rec_fix_result(struct det_op *op, int64_t result)
{
	ring_reserve(op->t, 1);
	put_result(op->t, op->idx, result);
}

/* A failed acquisition (trylock's EBUSY, a timeout, a join that found the
 * thread running) changed nothing: it only saw its object. */
static inline int only_looked(uint16_t kind, int64_t result)
{
	if (det_likely(result == 0))
		return 0;
	int role = det_kind_role(kind);
	return role == DET_ROLE_ACQUIRE || role == DET_ROLE_JOIN;
}

void det_rec_acquire_end(struct det_op *op, int64_t result)
{
	if (det_unlikely(det_strict) && !op->t->holding && !op->t->exited)
		det_ops.strict_acquire(op->t);
	ring_reserve(op->t, 4); /* a TS, the event, its AUXSEQ, its result */
	log_event(op, result, only_looked(op->kind, result));
	boundary(op->t, op->kind, result);
}

/* An input's data goes before its event, in DATA entries published as they
 * are written, so that data larger than the ring streams through it. */
void det_rec_data(struct det_thread *t, const void *data, uint32_t len)
{
	const uint8_t *p = data;
	uint32_t n = 0;
	while (len) {
		ring_reserve(t, 1);
		struct det_rec *r = ring_put(t);
		uint32_t k = len < DET_DATA_CHUNK ? len : DET_DATA_CHUNK;
		memcpy(r, p, k);
		r->kind = DET_REC_DATA;
		r->flags = (uint16_t)k;
		p += k;
		len -= k;
		if (++n % 256 == 0)
			atomic_store_explicit(&t->slot->head, t->head, memory_order_release);
	}
	atomic_store_explicit(&t->slot->head, t->head, memory_order_release);
}

void det_rec_input(struct det_op *op, int64_t result, uint32_t len)
{
	(void)len; /* (the DATA entries before the event say it) */
	if (det_unlikely(det_strict) && !op->t->holding && !op->t->exited)
		det_ops.strict_acquire(op->t);
	ring_reserve(op->t, 3); /* a TS, the event, its result */
	log_event(op, result, 0);
	boundary(op->t, op->kind, result);
}

/* A create takes its place in the order and its child's number together,
 * and is published before the child exists. The thread's handle is not
 * known yet: its object is declared without an address. In a parallel
 * recording the child's number comes from the thread count alone, and the
 * create is the first event of the child's brand-new object. */
uint32_t det_rec_new_thread(struct det_op *op)
{
	struct det_thread *t = op->t;
	det_logical_turn(t); /* thread numbers are taken in turn */
	ring_reserve(t, 4); /* the object, a TS, the event, a result */
	op->obj = atomic_fetch_add(&det_hdr->next_obj, 1) + 1;
	det_rec_object(t, op->obj, DET_OBJ_THREAD, 0);
	uint64_t add = det_strict ? 1 + DET_THREAD_ONE : DET_THREAD_ONE;
	uint64_t c = atomic_fetch_add_explicit(&det_hdr->clock, add, memory_order_seq_cst);
	op->aux = (uint32_t)(c >> DET_SEQ_BITS);
	op->seq = det_strict ? (c & DET_SEQ_MASK) : place(op, 0);
	write_event(op, 0);
	return op->aux;
}

/* A call that may block: in strict mode the thread gives up its turn. */
void det_rec_block(struct det_thread *t, uint16_t kind, uint32_t obj, uint64_t ra)
{
	struct det_slot *s = t->slot;
	s->blocked_obj = obj;
	s->blocked_ra = ra;
	atomic_store_explicit(&s->blocked_kind, kind, memory_order_release);
	if (det_strict) {
		det_rec_block_event(t, kind, obj, ra);
		det_ops.strict_release(t);
	}
}

/* Strict mode: the thread stops here and gives up its turn. The code it ran
 * so far belongs before what others do next, so the hand-over is an event,
 * which replay takes at the same call. */
void det_rec_block_event(struct det_thread *t, uint16_t kind, uint32_t obj, uint64_t ra)
{
	det_rec_sched_event(t, DET_EV_BLOCK, obj, kind, 0, ra);
}

/* A strict-mode scheduling event (BLOCK, CC_YIELD): logged under the turn,
 * with no boundary after it (the caller hands the turn on itself). */
void det_rec_sched_event(struct det_thread *t, uint16_t kind, uint32_t obj, uint32_t aux, int64_t result,
			 uint64_t ra)
{
	if (!t->holding)
		det_ops.strict_acquire(t);
	struct det_op op = {.t = t, .kind = kind, .obj = obj, .aux = aux, .ra = ra};
	ring_reserve(t, 3); /* a TS, the event, its result */
	log_event(&op, result, 0);
}

void det_rec_unblock(struct det_thread *t)
{
	atomic_store_explicit(&t->slot->blocked_kind, 0, memory_order_relaxed);
	if (det_strict)
		det_ops.strict_acquire(t);
}

/* The record log: reached from preload/ and the other modes through det_ops. */
static const struct det_mode_ops record_ops = {
	.rec_claim_ring = det_rec_claim_ring,
	.rec_object = det_rec_object,
	.rec_release_begin = det_rec_release_begin,
	.rec_end = det_rec_end,
	.rec_acquire_end = det_rec_acquire_end,
	.rec_block = det_rec_block,
	.rec_unblock = det_rec_unblock,
	.rec_block_event = det_rec_block_event,
	.rec_sched_event = det_rec_sched_event,
	.rec_new_thread = det_rec_new_thread,
	.rec_data = det_rec_data,
	.rec_input = det_rec_input,
	.rec_call_begin = det_rec_call_begin,
	.rec_call_end = det_rec_call_end,
	.rec_fix_result = det_rec_fix_result,
};
DET_MODE_REGISTER(record_ops);
