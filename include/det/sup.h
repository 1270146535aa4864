/*
 * include/det/sup.h - libdetsup.so, the supervisor's native half.
 *
 * Rules of this file:
 *  - detrec and detreplay (Python) call these through ctypes; every function
 *    returns plain integers, and errors as a negative value plus a message
 *    from det_sup_error(). Nothing here prints or exits.
 *  - SQL text is the Python package's (recorder/det/schema.py): these
 *    functions receive the statements and only bind values, in the order
 *    each parameter's comment gives.
 *  - struct det_thread_info is mirrored by ctypes in recorder/det/native.py;
 *    det_sup_abi() lets Python check that both agree.
 */
#ifndef DET_SUP_H
#define DET_SUP_H

#include <stdint.h>

struct det_sup;

/* What Python learns about one thread of a running or finished program. */
struct det_thread_info {
	uint64_t num, parent, ktid, create_seq, obj, state;
	uint64_t blocked_kind, blocked_obj, blocked_ra;
	uint64_t events;  /* record: events drained; replay: events done */
	uint64_t planned; /* replay: events recorded for it */
	uint64_t sleeping;
	uint64_t proc;    /* its process's index in the region's table */
	uint64_t yielded; /* strict: waits for the token after an event (struct det_slot) */
};

/* One of the program's processes (include/det/shm.h struct det_proc). */
struct det_proc_info {
	int64_t pid, rec_pid, parent; /* parent: index, or -1 for the top process */
	uint64_t first_thread, create_seq, state, execs;
	int64_t status;               /* wait status, or -1 when nobody collected it */
	char exe[72];
};

struct det_drain_stats {
	uint64_t events, objects, sites, payload_bytes, threads, passes;
	uint64_t busy_ns; /* time spent moving events into SQLite */
};

#define DET_SUP_ABI                                                                                \
	(sizeof(struct det_thread_info) * 1000000 + sizeof(struct det_proc_info) * 1000 + sizeof(struct det_drain_stats))
uint64_t det_sup_abi(void);

const char *det_sup_error(struct det_sup *s);
int det_sup_fd(struct det_sup *s);
void det_sup_free(struct det_sup *s);

/* --- record --- */
struct det_sup *det_sup_record_new(uint32_t max_threads, uint32_t rings, uint64_t ring_entries,
				   uint32_t objects_cap);
/*
 * Open the trace for draining.
 *   event_prefix + event_row: "INSERT ... VALUES " and "(?, ...)" binding
 *       seq, thread, index, kind, object, result, aux, site, ts (ns)
 *   object_sql: binding object, kind, address, first seq
 *   site_sql:   binding site, address
 *   thread_sql: binding thread, parent, kernel tid, create seq, object
 *               (run when a thread's first event is drained)
 *   result_sql: binding result, seq (a release-like event that failed)
 *   data_sql:   binding seq, bytes (NULL: payloads are dropped)
 */
int det_drain_open(struct det_sup *s, const char *db_path, const char *event_prefix, const char *event_row,
		   const char *object_sql, const char *site_sql, const char *thread_sql, const char *result_sql,
		   const char *data_sql);
/* Drain until det_drain_stop(), then everything left; returns < 0 on error. */
int det_drain_run(struct det_sup *s);
/* Ask det_drain_run to finish; `dead` says the program is gone, so events
 * whose thread died before publishing them will never come. */
void det_drain_stop(struct det_sup *s, int dead);
void det_drain_stats(struct det_sup *s, struct det_drain_stats *out);

/* --- both --- */
/* Add DET_F_* flags to the region before the program starts. */
void det_sup_add_flags(struct det_sup *s, uint32_t flags);
/* Strict mode and chaos parameters (record): events per turn, the watchdog,
 * the chaos seed (0: none) and the longest parallel-chaos delay. */
void det_sup_schedule(struct det_sup *s, uint32_t quantum, uint32_t watchdog_ms, uint64_t seed, uint32_t delay_us);
/* Chaos in strict mode (PCT): d-1 change points (at most 8): when the event
 * count passes points[i], the running thread's priority drops to d-1-i,
 * below every initial one. A thread that runs spin_steps steps in a row
 * while others wait lets them run as many (0: never). */
void det_sup_pct(struct det_sup *s, const uint64_t *points, uint32_t n, uint32_t spin_steps);
/* Watchdog preemptions in strict mode so far. */
uint32_t det_sup_preemptions(struct det_sup *s);
/* det-cc memory points the program passed (counted under PCT only). */
uint64_t det_sup_cc_points(struct det_sup *s);
uint32_t det_sup_threads(struct det_sup *s);
int det_sup_thread(struct det_sup *s, uint32_t num, struct det_thread_info *out);
/* The runtime's state: attached pid, failed, diverged; error text. */
int64_t det_sup_attached(struct det_sup *s);
int det_sup_failed(struct det_sup *s, char *buf, uint32_t len);
/* Replay divergence: fields as in struct det_divergence, in this order:
 * thread, idx, seq, reason, want_kind, want_obj, got_kind, got_obj, got_addr, ra. */
int det_sup_divergence(struct det_sup *s, uint64_t out[10], char *what, uint32_t len);

/* The program's processes: how many, and each (0, or -1 past the end). */
uint32_t det_sup_procs(struct det_sup *s);
int det_sup_proc(struct det_sup *s, uint32_t idx, struct det_proc_info *out);

/* The program's loaded objects: 1 and (base, path) for module i, 0 past the end. */
int det_sup_module(struct det_sup *s, uint32_t i, uint64_t *base, char *path, uint32_t len);
/* File i the program read or loaded (include/det/shm.h struct det_file): its
 * DET_FILE_* kind with (path, size, mtime), 0 for an entry never finished,
 * -1 past the end; det_sup_files_lost: files beyond the table's capacity. */
int det_sup_file(struct det_sup *s, uint32_t i, char *path, uint32_t len, int64_t *size, int64_t *mtime_ns);
uint32_t det_sup_files_lost(struct det_sup *s);

/* --- replay --- */
/*
 * Build a replay region from a trace.
 *   threads_sql: rows (thread, object) for every thread
 *   max_obj_sql: one row, the largest object id
 *   events_sql:  rows (seq, thread, index, kind, object, aux, result) in seq order
 *   data_size_sql: one row, the total bytes of input data
 *   data_sql:    rows (seq, bytes) in seq order
 *   flags: DET_F_* (DET_F_RELAXED: per-object order; DET_F_STRICT: a strict
 *          trace, every event ordered and threads run only in their turn)
 */
struct det_sup *det_sup_replay_new(const char *db_path, const char *threads_sql, const char *max_obj_sql,
				   const char *events_sql, const char *data_size_sql, const char *data_sql,
				   uint32_t flags, char *err, uint32_t errlen);
uint64_t det_sup_events_done(struct det_sup *s);
/* Replay: the recording's process `idx` had pid rec_pid and ended with
 * wait status rec_status (-1: unknown); thread `num` ran in process
 * `proc`. Set before the program starts. */
int det_sup_replay_process(struct det_sup *s, uint32_t idx, int64_t rec_pid, int64_t rec_status);
int det_sup_replay_thread_process(struct det_sup *s, uint32_t num, uint32_t proc);

/* Replay's enforcement backends (include/det/turns.def): the name of
 * number i, or NULL past the last; det_sup_turns makes the region use the
 * backend `name` (kmod: loads the schedule into /dev/detsched, owned by s
 * until det_sup_free). Call after the region is built, before the program
 * starts. */
const char *det_sup_turns_name(uint32_t i);
int det_sup_turns(struct det_sup *s, const char *name);
/* What the backend itself says about the threads that wait (kmod: the
 * module's STATE), as one line; "" when it has nothing to add. */
int det_sup_turns_describe(struct det_sup *s, char *out, uint32_t len);

#endif /* DET_SUP_H */
