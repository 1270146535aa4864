/*
 * recorder/rings.h - the record log's operations (recorder/rings.c).
 *
 * Rules of this file:
 *  - Its own folder's files call these directly; preload/ and the other
 *    modes reach them through det_ops (preload/mode.h), which the table at
 *    the end of recorder/rings.c fills.
 */
#ifndef DET_RINGS_H
#define DET_RINGS_H

#include "runtime.h"

/* The thread's own ring, claimed when it attaches (it waits for a free one). */
DET_HIDDEN void det_rec_claim_ring(struct det_thread *t);
/* A new object's declaration, published with the event that first uses it. */
DET_HIDDEN void det_rec_object(struct det_thread *t, uint32_t id, enum det_objkind kind, uint64_t addr);
DET_HIDDEN void det_rec_release_begin(struct det_op *op);
DET_HIDDEN void det_rec_end(struct det_op *op, int64_t result);
DET_HIDDEN void det_rec_acquire_end(struct det_op *op, int64_t result);
DET_HIDDEN void det_rec_block(struct det_thread *t, uint16_t kind, uint32_t obj, uint64_t ra);
DET_HIDDEN void det_rec_unblock(struct det_thread *t);
DET_HIDDEN void det_rec_block_event(struct det_thread *t, uint16_t kind, uint32_t obj, uint64_t ra);
DET_HIDDEN void det_rec_sched_event(struct det_thread *t, uint16_t kind, uint32_t obj, uint32_t aux,
				    int64_t result, uint64_t ra);
DET_HIDDEN uint32_t det_rec_new_thread(struct det_op *op);
DET_HIDDEN void det_rec_data(struct det_thread *t, const void *data, uint32_t len);
DET_HIDDEN void det_rec_input(struct det_op *op, int64_t result, uint32_t len);
DET_HIDDEN void det_rec_call_begin(struct det_op *op);
DET_HIDDEN void det_rec_call_end(struct det_op *op, int64_t result);
/* An event already published turned out to return `result`. */
DET_HIDDEN void det_rec_fix_result(struct det_op *op, int64_t result);

#endif /* DET_RINGS_H */
