/*
 * recorder/logfmt.h - the capture log: what detrec writes while the program
 * runs (recorder/capture.c) and turns into the SQLite trace afterwards
 * (recorder/convert.c). docs/TRACE_FORMAT.md describes it for readers.
 *
 * Rules of this file:
 *  - The log is a file header and then chunks, appended, never rewritten.
 *    Ring chunks carry ring entries (include/det/shm.h struct det_rec)
 *    exactly as the program wrote them: nothing is decoded while it runs.
 *  - Every chunk says its length and carries a checksum of its payload, so
 *    a reader finds where a killed writer stopped (a torn tail) and cuts
 *    the log there; nothing after a bad chunk is read.
 *  - Bump DET_LOG_VERSION on any change of this file or of struct det_rec.
 */
#ifndef DET_LOGFMT_H
#define DET_LOGFMT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "det/crc32c.h"
#include "det/shm.h"

#define DET_LOG_MAGIC   "DETLOG\r\n"
#define DET_LOG_VERSION 2

struct det_log_header {
	char magic[8];
	uint32_t version;
	uint32_t header_bytes; /* sizeof(struct det_log_header) */
	uint32_t rec_bytes;    /* sizeof(struct det_rec) */
	uint32_t shm_version;  /* DET_SHM_VERSION of the runtime that wrote the entries */
	uint64_t pad[5];
};

enum det_log_type {
	DET_LOG_META = 1,    /* JSON object: the trace's meta table, from detrec */
	DET_LOG_RING = 2,    /* ring entries of thread `thread`, in its order */
	DET_LOG_THREAD = 3,  /* struct det_log_thread: a thread's identity (latest wins) */
	DET_LOG_PROCS = 4,   /* struct det_proc[]: the process table (latest wins) */
	DET_LOG_MODULES = 5, /* struct det_module[]: loaded ELF objects (latest wins) */
	DET_LOG_CLOCK = 6,   /* struct det_log_clock: TSC calibration (latest wins) */
	DET_LOG_END = 7,     /* the capture ended in order (no payload) */
};

struct det_log_chunk {
	uint32_t type;   /* enum det_log_type */
	uint32_t bytes;  /* payload bytes that follow, a multiple of 8 */
	uint32_t check;  /* det_log_check() of the payload, seeded with type and bytes */
	uint32_t thread; /* DET_LOG_RING, DET_LOG_THREAD: the thread's number */
};

struct det_log_thread {
	uint32_t num, parent; /* parent: its creator's number (T0: 0) */
	int32_t ktid;
	uint32_t obj, proc;   /* its own object id; its process's index in the region */
	uint32_t pad;
	uint64_t start_routine;
};

struct det_log_clock {
	uint64_t tsc0, mono0;   /* TSC and CLOCK_MONOTONIC (ns) when the runtime attached */
	uint64_t tsc1, mono1;   /* ... when the capture began (detrec's clock) */
	uint64_t tsc2, mono2;   /* ... now */
	uint32_t flags;         /* the region's DET_F_* flags (DET_F_TS_NS, DET_F_STRICT) */
	uint32_t pad;
};

/* Largest payload of one chunk: a reader never needs more at once. */
#define DET_LOG_CHUNK_MAX (1u << 22)

/* A checksum of a payload (a multiple of 8 bytes): crc32c in four lanes,
 * folded, so that it keeps up with the writer. */
#define DET_LOG_CHECK_BODY(step)                                                           \
	const uint8_t *b = p;                                                              \
	uint64_t l0 = type, l1 = bytes, l2 = 0x9E3779B9u, l3 = 0x85EBCA6Bu, w0, w1, w2, w3; \
	for (; n >= 32; n -= 32, b += 32) {                                                \
		memcpy(&w0, b, 8);                                                         \
		memcpy(&w1, b + 8, 8);                                                     \
		memcpy(&w2, b + 16, 8);                                                    \
		memcpy(&w3, b + 24, 8);                                                    \
		l0 = step(l0, w0);                                                         \
		l1 = step(l1, w1);                                                         \
		l2 = step(l2, w2);                                                         \
		l3 = step(l3, w3);                                                         \
	}                                                                                  \
	for (; n >= 8; n -= 8, b += 8) {                                                   \
		memcpy(&w0, b, 8);                                                         \
		l0 = step(l0, w0);                                                         \
	}                                                                                  \
	l0 = step(l0, l1);                                                                 \
	l0 = step(l0, l2);                                                                 \
	return (uint32_t)step(l0, l3)

__attribute__((target("sse4.2"))) static inline uint32_t det_log_check_sse42(const void *p, size_t n,
									   uint32_t type, uint32_t bytes)
{
	DET_LOG_CHECK_BODY(__builtin_ia32_crc32di);
}

static inline uint32_t det_log_check_soft(const void *p, size_t n, uint32_t type, uint32_t bytes)
{
	DET_LOG_CHECK_BODY(det_crc32c_soft);
}

static inline uint32_t det_log_check(const void *p, size_t n, uint32_t type, uint32_t bytes)
{
	static int sse42 = -1;
	if (sse42 < 0) {
		__builtin_cpu_init();
		sse42 = __builtin_cpu_supports("sse4.2") != 0;
	}
	return sse42 ? det_log_check_sse42(p, n, type, bytes) : det_log_check_soft(p, n, type, bytes);
}

#endif /* DET_LOGFMT_H */
