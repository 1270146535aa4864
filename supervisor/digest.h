/*
 * supervisor/digest.h - the schedule digest (docs/TRACE_FORMAT.md, meta
 * schedule_digest): the one definition, taken by the converter's merge as it
 * orders a log's events (recorder/convert_merge.c) and by det_trace_digest
 * from a trace's rows (supervisor/digest.c).
 *
 * Rules of this file:
 *  - Header only, static inline: the merge steps it for every event.
 *  - Both users must give the same value for one schedule: a hunt learns a
 *    run's schedule from its log (det_log_digest) and compares it with
 *    traces' (meta schedule_digest, or det_trace_digest for traces that
 *    lack the key).
 */
#ifndef DET_DIGEST_H
#define DET_DIGEST_H

#include <stdint.h>

#include "det/events.h"

static inline uint64_t det_mix64(uint64_t a)
{
	a ^= a >> 33;
	a *= 0xff51afd7ed558ccdULL;
	a ^= a >> 33;
	a *= 0xc4ceb9fe1a85ec53ULL;
	a ^= a >> 33;
	return a;
}

/* The schedule digest: the ordered events' (thread, kind, object), in
 * order, each packed into one word (thread: 16 bits, kind: 16, object: 32)
 * and chained through det_mix64(); the count closes it. Inputs are left out:
 * their values (a clock's, say) differ between runs of one schedule. */
#define DET_DIGEST_START 0x6a09e667f3bcc908ULL
#define DET_DIGEST_STEP 0x9e3779b97f4a7c15ULL

static inline int det_in_schedule(uint32_t kind)
{
	int role = det_kind_role(kind);
	return role >= 0 && role != DET_ROLE_INPUT;
}

static inline uint64_t det_digest_step(uint64_t h, uint64_t tid, uint64_t kind, uint64_t obj)
{
	return det_mix64(h ^ ((tid & 0xffff) << 48 | (kind & 0xffff) << 32 | (obj & 0xffffffff))) + DET_DIGEST_STEP;
}

static inline uint64_t det_digest_end(uint64_t h, uint64_t n)
{
	return det_mix64(h ^ n);
}

#endif /* DET_DIGEST_H */
