/*
 * include/det/sup.h - libdetsup.so, the supervisor's native half.
 *
 * Rules of this file:
 *  - detrec and detreplay (Python) call these through ctypes; every function
 *    returns plain integers, and errors as a negative value plus a message
 *    from det_sup_error(). Nothing here prints or exits.
 *  - SQL text is the Python package's (store/det/schema.py): these
 *    functions receive the statements and only bind values, in the order
 *    each parameter's comment gives.
 *  - struct det_thread_info is mirrored by ctypes in store/det/native.py;
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
	/* record: the signal that killed it (0: none) and where (struct det_slot's crash_*) */
	uint64_t crash_sig;
	int64_t crash_code;
	uint64_t crash_pc, crash_addr, crash_call_ra, crash_caller, crash_entry;
};

/* One of the program's processes (include/det/shm.h struct det_proc). */
struct det_proc_info {
	int64_t pid, rec_pid, parent; /* parent: index, or -1 for the top process */
	uint64_t first_thread, create_seq, state, execs;
	int64_t status;               /* wait status, or -1 when nobody collected it */
	char exe[72];
};

struct det_capture_stats {
	uint64_t entries, bytes, threads, passes;
	uint64_t busy_ns; /* time spent writing the capture log */
};

/* A table's rows and its two content-checksum lanes (supervisor/sums.h). */
struct det_table_sum {
	uint64_t rows;
	int64_t lane[2];
};

struct det_convert_stats {
	uint64_t events, objects, sites, calls, threads, processes, data_bytes;
	uint64_t forced;     /* events placed against their object's order (a position never published) */
	uint64_t cut;        /* events left out after the consistent prefix of a cut capture */
	uint64_t log_bytes;  /* the log's readable part */
	uint64_t torn_bytes; /* cut off its end: a chunk a killed writer left unfinished */
	uint64_t complete;   /* the log ends with its END chunk */
	uint64_t ns;         /* time the conversion took */
	uint64_t schedule;   /* the schedule digest (docs/TRACE_FORMAT.md, meta schedule_digest) */
	struct det_table_sum event_sum, call_sum; /* event_rows and calls as written (supervisor/sums.h) */
};

#define DET_SUP_ABI                                                                                \
	(sizeof(struct det_thread_info) * 1000000 + sizeof(struct det_proc_info) * 1000 +          \
	 sizeof(struct det_capture_stats) * 10 + sizeof(struct det_convert_stats))
uint64_t det_sup_abi(void);

const char *det_sup_error(struct det_sup *s);
int det_sup_fd(struct det_sup *s);
void det_sup_free(struct det_sup *s);

/* --- record --- */
struct det_sup *det_sup_record_new(uint32_t max_threads, uint32_t rings, uint64_t ring_entries,
				   uint32_t objects_cap);
/* Create the capture log (mode 0600, must not exist) and write its META. */
int det_capture_open(struct det_sup *s, const char *log_path, const char *meta_json);
/* Capture until det_capture_stop(), then everything left; < 0 on error. */
int det_capture_run(struct det_sup *s);
/* Ask det_capture_run to finish (the program has ended). */
void det_capture_stop(struct det_sup *s);
/* det_capture_run on a thread libdetsup.so starts; det_capture_finish
 * stops it and waits for it: 0, or < 0 with the error from det_sup_error. */
int det_capture_start(struct det_sup *s);
int det_capture_finish(struct det_sup *s);
/* Has det_capture_run ended on an error (the log could not be written)?
 * The program's threads then wait for ring room that never comes: the
 * caller stops the program, and det_capture_finish gives the error. */
int det_capture_failed(struct det_sup *s);
void det_capture_stats(struct det_sup *s, struct det_capture_stats *out);
/* Nonzero once the capture found a thread's ring corrupt (the program wrote
 * over det's memory): the program is to be stopped; det_sup_failed says why. */
int det_capture_stopped(struct det_sup *s);

/* --- after the run (recorder/convert.c): no region needed --- */
/*
 * The statements det_convert() binds, in this order (schema.py's
 * CONVERT_SQL); the parameters each binds follow its name.
 */
enum det_convert_sql {
	DET_SQL_CALL,      /* call, kind, object, aux, site */
	DET_SQL_SITE,      /* site, address */
	DET_SQL_OBJECT,    /* object, kind, address, first seq */
	DET_SQL_FIRST_EVENT, /* seq, thread, call, result, ts delta (ns): the first event */
	DET_SQL_EVENTS,    /* "INSERT ... VALUES " prefix of a multi-row insert of the next ones... */
	DET_SQL_EVENT_ROW, /* "(?,...)": thread, call, result, ts delta (ns); seq = rowid, the next */
	DET_SQL_DATA,      /* seq, bytes */
	DET_SQL_MARK,      /* window, thread, index, ts (ns) */
	DET_SQL_THREAD,    /* thread, parent, kernel tid, create seq, object, events, process */
	DET_SQL_PROCESS,   /* process, parent, pid, create seq, thread, exe, execs, status (NULL: none) */
	DET_SQL_MODULE,    /* path, base */
	DET_SQL_RESULT,    /* result, seq: an event already stored returned this */
	DET_SQL_META,      /* key, value: a meta row (the schedule digest) */
	DET_SQL_SCHED_ROWS,  /* the packed schedule (enum det_sched_sql, in that order): rows to pack... */
	DET_SQL_SCHED_CLEAR, /* ... */
	DET_SQL_SCHED_CHUNK, /* ... */
	DET_SQL_SCHED_META,  /* ... */
	DET_SQL_INDEXES,   /* run once everything is loaded */
	DET_SQL_COUNT,
};
/* Events per row of the multi-row insert, and seqs per mark window. */
#define DET_CONVERT_BATCH 64
#define DET_MARK_WINDOW 1024
/*
 * Build the trace at db_path (an SQLite file with det's tables, no events)
 * from the capture log: its torn tail, if any, is cut off (the file is
 * truncated), the threads' events are merged into one order (the argument
 * is in docs/DESIGN.md), and everything goes in with one transaction.
 * Returns 0, or < 0 with a message in err.
 */
int det_convert(const char *log_path, const char *db_path, const char *const *sql, uint32_t nsql,
		struct det_convert_stats *out, char *err, uint32_t errlen);
/* The schedule digest of a capture log, by the same merge as det_convert()
 * (whose trace stores it as meta schedule_digest), without writing a trace
 * or changing the log: out gets the digest (schedule) and what the merge
 * counted (events, forced, cut, ...). Returns 0, or < 0 with a message. */
int det_log_digest(const char *log_path, struct det_convert_stats *out, char *err, uint32_t errlen);
/* The same digest from a trace's rows: rows_sql (schema.py SCHEDULE_ROWS)
 * gives each event's thread, kind and object in seq order. */
int det_trace_digest(const char *db_path, const char *rows_sql, uint64_t *digest, char *err, uint32_t errlen);
/* The checksum lanes of the rows `select` (schema.py's, DET_SUM_COLS
 * integers a row) reads from the trace at db_path; 0, or < 0 with a
 * message in err (a value that is not an integer is one). */
int det_table_sums(const char *db_path, const char *select, struct det_table_sum *out, char *err, uint32_t errlen);
/*
 * The packed schedule (supervisor/schedpack.h, docs/TRACE_FORMAT.md table
 * schedule): the statements that make it, in this order (schema.py's
 * SCHEDULE_SQL; det_convert takes them too, as DET_SQL_SCHED_*).
 */
enum det_sched_sql {
	DET_SCHED_SQL_ROWS,  /* no parameters: rows (seq, thread, call, result) of event_rows in seq order */
	DET_SCHED_SQL_CLEAR, /* no parameters: drop every chunk */
	DET_SCHED_SQL_CHUNK, /* chunk, first seq, events, bytes */
	DET_SCHED_SQL_META,  /* value of meta schedule_rows: "[rows, lane 0, lane 1]" of the rows packed */
	DET_SCHED_SQL_COUNT,
};
/* Make the packed schedule again from event_rows, in one transaction of its
 * own on the file at db_path (nothing else may be writing it), with meta
 * schedule_rows; sum gets event_rows' checksum lanes (supervisor/sums.h), read
 * in the same scan. 0, or < 0 with a message in err. */
int det_schedule_build(const char *db_path, const char *const *sql, uint32_t nsql, struct det_table_sum *sum,
		       char *err, uint32_t errlen);
/* Does the packed schedule (rows of chunks_sql: chunk, first seq, events,
 * bytes, by chunk) hold exactly the events of rows_sql (seq, thread, call,
 * result in seq order)? 0: yes, and sum gets the rows' checksum lanes; 1:
 * no, err names the first event that differs; < 0: unreadable (err). */
int det_schedule_check(const char *db_path, const char *rows_sql, const char *chunks_sql, struct det_table_sum *sum,
		       char *err, uint32_t errlen);
/* The identity of the file at path (supervisor/identity.c: every byte and the
 * length, 256 bits, at memory speed; not cryptographic), as 64 hex digits in
 * hex (len >= 65): the key of det.validate's cache of traces that passed.
 * 0, or -1 with a message in hex. */
int det_file_identity(const char *path, char *hex, uint32_t len);
/* The META chunk of a capture log (a JSON object), NUL-terminated in buf;
 * returns its length, or < 0 with a message in buf. */
int det_log_meta(const char *log_path, char *buf, uint32_t len);

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
/* Strict mode: the thread number + 1 holding the run token (0: free); once the
 * program has ended, the thread it ended in. */
uint32_t det_sup_strict_owner(struct det_sup *s);
/* Record: the thread number + 1 that last took a fault or an abort (0:
 * none): the program ended in it if it died of that signal. */
uint32_t det_sup_crashed(struct det_sup *s);
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
 *   calls_sql:   rows (call, kind, object, aux)
 *   events_sql:  rows (seq, thread, call, result) in seq order
 *   schedule_sql: NULL, or the packed schedule's chunks (chunk, first seq,
 *                events, bytes, by chunk: supervisor/schedpack.h), read
 *                instead of events_sql when it holds schedule_events events
 *                and every thread's count adds up to that (else the rows are
 *                read: older traces, traces whose rows were rewritten)
 *   data_size_sql: one row, the total bytes of input data
 *   data_sql:    rows (seq, bytes) in seq order
 *   flags: DET_F_* (DET_F_RELAXED: per-object order; DET_F_STRICT: a strict
 *          trace, every event ordered and threads run only in their turn)
 */
struct det_sup *det_sup_replay_new(const char *db_path, const char *threads_sql, const char *max_obj_sql,
				   const char *calls_sql, const char *events_sql, const char *schedule_sql,
				   uint64_t schedule_events, const char *data_size_sql, const char *data_sql, uint32_t flags,
				   char *err, uint32_t errlen);
/* Which the feeder reads: 1 the packed schedule, 0 event_rows. */
int det_sup_replay_packed(struct det_sup *s);
/* Replay: stream the rest of the schedule into the threads' windows, as
 * they advance, until det_sup_feed_stop() (run it in its own thread while
 * the program runs; a damaged trace stops the program with a message). */
int det_sup_feed_run(struct det_sup *s);
void det_sup_feed_stop(struct det_sup *s);
uint64_t det_sup_events_done(struct det_sup *s);
/* Replay: the recording's process `idx` had pid rec_pid and ended with
 * wait status rec_status (-1: unknown); thread `num` ran in process
 * `proc` as kernel thread rec_ktid (and, strict mode, waited for the token
 * after its last event when the recording ended: yielded); thread `num` ran
 * last (the program ended by itself in its turn: it runs on alone past the
 * schedule's end). Set before the program starts. */
int det_sup_replay_process(struct det_sup *s, uint32_t idx, int64_t rec_pid, int64_t rec_status);
int det_sup_replay_thread(struct det_sup *s, uint32_t num, uint32_t proc, int64_t rec_ktid, uint32_t yielded);
int det_sup_replay_ran_last(struct det_sup *s, uint32_t num);

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

/* --- a live replica (detrec --follow, detreplay --follow LOG) --- */
/*
 * A replay region fed from a capture log while detrec writes it
 * (replayer/follow.c): max_threads threads, data_bytes of input data in a
 * ring; the follower stops when the replica is more than max_lag events
 * behind (0: never). Run det_sup_follow_run in its own thread; the replica
 * may start once det_sup_follow_state says ready.
 */
struct det_follow_state {
	uint64_t captured; /* events in the log so far */
	uint64_t fed;      /* events given to the replica */
	uint64_t done;     /* events the replica has done */
	uint64_t lag_ns;   /* since the log has held the event after the replica's last (0: none waits) */
	uint32_t ready;    /* the first thread's and process's identity came: the replica may start */
	uint32_t all_fed;  /* the capture ended and every event is fed */
	uint32_t stopped;  /* the follower gave up (det_sup_error says why) */
	uint32_t pad;
};
struct det_sup *det_sup_follow_new(const char *log_path, uint32_t max_threads, uint32_t flags,
				   uint64_t data_bytes, uint64_t max_lag, char *err, uint32_t errlen);
int det_sup_follow_run(struct det_sup *s);
/* A standby: at the log's END every thread stays at its next event until
 * det_sup_follow_release (call hold before det_sup_follow_run). */
void det_sup_follow_hold(struct det_sup *s);
void det_sup_follow_release(struct det_sup *s);
void det_sup_follow_stop(struct det_sup *s);
void det_sup_follow_state(struct det_sup *s, struct det_follow_state *out);

#endif /* DET_SUP_H */
