/*
 * include/det/cc.h - det-cc's hooks: what a program built with det-cc
 * (llvm/DetPass.cpp) calls in libdet.so (preload/atomics.c), and the
 * names the pass gives what it adds to the program. The one definition:
 * the runtime's definitions are compiled against these prototypes, and the
 * pass checks the types it builds in IR against them at compile time.
 *
 * Rules of this file:
 *  - C and C++ (the pass includes it in extern "C"); fixed-width types
 *    only, nothing but declarations and constants.
 *  - A change here is a change of the ABI between det-cc programs and
 *    libdet.so: the pass and the runtime change together.
 */
#ifndef DET_CC_H
#define DET_CC_H

#include <stdint.h>

/* The budget a det_cc_slow call is about: index into det_cc_tls. */
enum { DET_CC_TICK = 0, DET_CC_POINT = 1 };

/* What a budget is refilled with when nothing is to happen at its end (the
 * program without libdet.so, or a budget the runtime does not watch). */
#define DET_CC_REFILL (INT64_MAX / 2)

/* Made by the pass in the program, not in libdet.so:
 *  - DET_CC_TLS: per thread, { i64 tick budget, i64 point budget }, counted
 *    down inline; one copy per process (the executable's, exported);
 *  - DET_CC_SLOW_LOCAL: void (int32_t which), the cold path when a budget
 *    runs out: calls det_cc_slow when libdet.so is there, else refills;
 *  - DET_CC_BUILT / DET_CC_BUILT_MEMORY: a marker saying the module was
 *    built with det-cc (with memory points), for the runtime and det's tools. */
#define DET_CC_TLS "det_cc_tls"
#define DET_CC_SLOW_LOCAL "det_cc_slow_local"
#define DET_CC_BUILT "det_cc_built"
#define DET_CC_BUILT_MEMORY "det_cc_built_memory"

/* aux of an ATOMIC_* event: the access's size in bytes (bits 0-7), its C11
 * memory order (8-15; 5 is seq_cst), a read-modify-write's operation (16-23,
 * LLVM's AtomicRMWInst numbering: 0 is an exchange), DET_ATOMIC_TRAPPED, and
 * at its end DET_ATOMIC_SWAPPED. */
#define DET_ATOMIC_AUX(size, order, rmw_op) \
	((uint32_t)(size) | (uint32_t)(order) << 8 | (uint32_t)(rmw_op) << 16)
static inline unsigned det_atomic_rmw_op(uint32_t aux)
{
	return (aux >> 16) & 0xff;
}
/* aux bit of an ATOMIC_* event from an instruction libdet.so trapped in a
 * program det-cc did not build (detrec --patch-atomics), not from the pass */
#define DET_ATOMIC_TRAPPED (1u << 30)
/* aux bit of a compare-exchange's end: it stored (the comparison held) */
#define DET_ATOMIC_SWAPPED (1u << 31)

/* libdet.so's entry points (extern_weak in the program: natively absent).
 * An atomic instruction is bracketed by begin (its address, event kind,
 * aux) and end (the value it read or wrote). */
void det_cc_atomic_begin(void *addr, uint32_t kind, uint32_t aux);
void det_cc_atomic_end(uint64_t value, uint32_t aux);
/* A budget ran out: budget is the thread's det_cc_tls, which DET_CC_TICK
 * or DET_CC_POINT, site the instrumented code's return address. */
void det_cc_slow(int64_t *budget, int32_t which, void *site);

#endif /* DET_CC_H */
