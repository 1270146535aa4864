/*
 * preload/mode.h - the operations libdet.so's shared code asks of the
 * active mode: recording (recorder/rings.c), enforcing a replay
 * (replayer/enforce.c), the strict scheduler and its chaos
 * (replayer/strict.c: it runs while recording too), logical time
 * (replayer/logical.c).
 *
 * Rules of this file:
 *  - preload/ calls recorder/ and replayer/ only through det_ops, and the
 *    modes call each other's folders only through it too (strict records
 *    its decisions with det_ops.rec_*): no file of preload/ names a symbol
 *    of theirs, and recorder/ and replayer/ never name each other's.
 *  - Each mode fills its own members in a table of its own and registers it
 *    with DET_MODE_REGISTER (a pointer in the linker section det_modes);
 *    det_init merges the tables into det_ops before anything runs, and
 *    stops the program if a member is left empty.
 *  - One indirect call per operation: det_ops is a plain global, written
 *    only by det_init; callers test the mode's flag (det_mode, det_strict,
 *    det_logical, det_chaos) before calling, as they tested it before the
 *    direct call.
 *  - Members are function pointers only (det_init merges them slot by slot).
 */
#ifndef DET_MODE_H
#define DET_MODE_H

#include <stdint.h>
#include <time.h>

#include "det/events.h"

struct det_thread;
struct det_op;
struct det_sched;

/* A point where the holder may lose the token, and why it is one. */
enum det_point {
	DET_POINT_EVENT = 0, /* after an ordinary event */
	DET_POINT_YIELD = 1, /* after sched_yield: the program offers its turn */
	DET_POINT_SPIN = 2,  /* after an event that says the thread polls for others (det_strict_point_of) */
	DET_POINT_TICK = 3,  /* det-cc's logical quantum ended: instrumented code ran on without an event */
	DET_POINT_MEMORY = 4, /* a det-cc memory point, under PCT over memory points (DET_F_CC_POINTS) */
};

struct det_mode_ops {
	/* --- record (recorder/rings.c) --- */
	/* The thread's own ring, claimed when it attaches (it waits for a free one). */
	void (*rec_claim_ring)(struct det_thread *t);
	/* A new object's declaration, published with the event that first uses it. */
	void (*rec_object)(struct det_thread *t, uint32_t id, enum det_objkind kind, uint64_t addr);
	void (*rec_release_begin)(struct det_op *op);
	void (*rec_end)(struct det_op *op, int64_t result);
	void (*rec_acquire_end)(struct det_op *op, int64_t result);
	void (*rec_block)(struct det_thread *t, uint16_t kind, uint32_t obj, uint64_t ra);
	void (*rec_unblock)(struct det_thread *t);
	/* Strict: the thread stops here and hands its turn over, an event. */
	void (*rec_block_event)(struct det_thread *t, uint16_t kind, uint32_t obj, uint64_t ra);
	/* A strict-mode scheduling event (BLOCK, CC_YIELD), logged under the turn. */
	void (*rec_sched_event)(struct det_thread *t, uint16_t kind, uint32_t obj, uint32_t aux, int64_t result,
				uint64_t ra);
	uint32_t (*rec_new_thread)(struct det_op *op);
	void (*rec_data)(struct det_thread *t, const void *data, uint32_t len);
	void (*rec_input)(struct det_op *op, int64_t result, uint32_t len);
	/* A call whose result matters, logged as pending before it runs. */
	void (*rec_call_begin)(struct det_op *op);
	void (*rec_call_end)(struct det_op *op, int64_t result);
	/* An event already published turned out to return `result`. */
	void (*rec_fix_result)(struct det_op *op, int64_t result);

	/* --- replay (replayer/enforce.c; the declarations there say more) --- */
	const struct det_sched *(*replay_begin)(struct det_op *op, const void *addr, enum det_objkind objkind);
	void (*replay_end)(struct det_op *op, int64_t result);
	const struct det_sched *(*replay_input)(struct det_op *op);
	int (*replay_free_running)(void);
	int (*replay_polled)(struct det_thread *t, uint16_t kind);
	uint16_t (*replay_next_kind)(struct det_thread *t, uint16_t kind);
	void (*replay_take_block)(struct det_thread *t);
	const struct det_sched *(*replay_pending)(struct det_thread *t, uint16_t kind, uint32_t aux);
	int (*replay_wait_due)(struct det_thread *t, const struct det_sched *e, long ns);
	/* Events thread `num` has done so far in this run (any process's thread). */
	uint64_t (*replay_done_count)(uint32_t num);
	/* The recorded place (seq) of thread `num`'s next event, or UINT64_MAX:
	 * it has done them all, or the feeder has not written it yet (its place
	 * is after every event the feeder wrote). */
	uint64_t (*replay_next_seq)(uint32_t num);
	__attribute__((noreturn)) void (*diverge)(struct det_thread *t, uint32_t reason, uint16_t got_kind,
						  const void *got_addr, uint64_t ra, const char *what);
	void (*replay_attach)(struct det_thread *t);
	void (*replay_resume)(struct det_thread *t);
	void (*replay_reset)(void);
	void (*replay_before_exit)(void);
	__attribute__((noreturn)) void (*replay_vanish)(struct det_op *op);
	__attribute__((noreturn)) void (*replay_cancel)(struct det_thread *t);
	int (*replay_cancel_next)(struct det_thread *t);
	void (*replay_cancel_request)(uint32_t obj, pthread_t th);
	int (*replay_canceled)(struct det_thread *t);
	void (*sched_wait)(struct det_thread *t, uint64_t idx);
	int (*sched_known)(struct det_thread *t, uint64_t idx);

	/* --- strict mode and chaos (replayer/strict.c) --- */
	void (*strict_start)(struct det_thread *t);
	void (*strict_acquire)(struct det_thread *t);
	void (*strict_release)(struct det_thread *t);
	void (*strict_process_ending)(void);
	enum det_point (*strict_point_of)(uint16_t kind, int64_t result);
	void (*strict_after_event)(struct det_thread *t, enum det_point why);
	void (*strict_created)(uint32_t child);
	void (*strict_not_ready)(uint32_t num);
	int (*strict_wait)(struct det_op *op, const void *obj, const struct timespec *abstime, clockid_t clock);
	void (*strict_wait_for)(struct det_op *op, const void *obj);
	void (*strict_wait_for_cancelable)(struct det_op *op, const void *obj);
	int (*strict_wait_until)(struct det_op *op, const void *obj, const struct timespec *abstime, clockid_t clock);
	int (*strict_sem_wait)(struct det_op *op, const void *obj, const struct timespec *abstime, clockid_t clock);
	void (*strict_canceled)(uint64_t th);
	int (*strict_signal)(const void *obj, int all);
	void (*strict_unlocked)(struct det_thread *t, const void *obj);
	void (*strict_barrier_init)(const void *b, unsigned count);
	int (*strict_barrier_wait)(struct det_op *arrive, const void *b);
	void (*strict_cc_yield)(struct det_thread *t, int why, void (*log)(struct det_thread *t, int why));
	void (*chaos_delay)(struct det_thread *t);

	/* --- logical time (replayer/logical.c) --- */
	void (*logical_acquire)(struct det_thread *t);
	void (*logical_leave)(struct det_thread *t);
	void (*logical_tick)(struct det_thread *t);
	void (*logical_point)(struct det_thread *t);
};

/* The active modes' operations, merged by det_init (preload/runtime.c). */
extern __attribute__((visibility("hidden"))) struct det_mode_ops det_ops;

/* A mode's table (static const, its own members filled), registered. */
#define DET_MODE_REGISTER(table)                                                                   \
	static const struct det_mode_ops *const det_mode_##table                                   \
		__attribute__((used, section("det_modes"))) = &table

#endif /* DET_MODE_H */
