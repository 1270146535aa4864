"""The SQL schema of a det trace: the only place that spells it.

Rules: standard library only (gdb's Python imports it). A change to any
table, or to which calls are events (a replay needs the events the runtime
makes), bumps FORMAT_VERSION and docs/TRACE_FORMAT.md; an optional table of
derived data (OPTIONAL_TABLES: every reader does without it, and a trace of
the same version made before it existed is read as before) only changes
docs/TRACE_FORMAT.md. libdetsup.so receives the statements it needs from
here and only binds values.
"""

from __future__ import annotations

from .constants import CONVERT_SQL_ORDER, DET_MARK_WINDOW, SCHED_SQL_ORDER

FORMAT_VERSION = 6
APPLICATION_ID = 0x64657431  # "det1"
PAGE_SIZE = 4096  # (larger pages make small traces large and large ones no smaller)
# the meta keys whose values are stored as JSON text (det.trace writes and reads them, det.validate checks them)
JSON_META = {"argv", "env", "stdin", "stdout", "stderr", "libraries", "pct_change_points", "schedule_rows", "verified",
             "crash"}

SCHEMA = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value
);
CREATE TABLE object_kinds (
    kind        INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    description TEXT NOT NULL
);
CREATE TABLE event_kinds (
    kind        INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    object_kind TEXT NOT NULL,
    role        TEXT NOT NULL,
    description TEXT NOT NULL
);
CREATE TABLE threads (
    tid        INTEGER PRIMARY KEY,   -- stable number: T0 = main, then creation order
    parent     INTEGER NOT NULL,      -- -1 for T0
    ktid       INTEGER NOT NULL,      -- kernel thread id in the recorded run
    create_seq INTEGER NOT NULL,      -- seq of the creating event, -1 for T0
    obj        INTEGER NOT NULL,      -- the thread's own object id
    events     INTEGER,               -- events recorded (set when the trace is complete)
    end_state  TEXT,                  -- running | blocked | waiting | exited, when the program ended
    process    INTEGER NOT NULL DEFAULT 0  -- processes.process
);
CREATE TABLE processes (
    process    INTEGER PRIMARY KEY,   -- stable number: 0 = the program, then creation order
    parent     INTEGER NOT NULL,      -- -1 for process 0
    pid        INTEGER NOT NULL,      -- kernel pid in the recorded run (0: it never started)
    create_seq INTEGER NOT NULL,      -- seq of the fork or spawn event, -1 for process 0
    thread     INTEGER NOT NULL,      -- threads.tid of its first thread
    exe        TEXT NOT NULL,         -- file name of its last image
    execs      INTEGER NOT NULL,      -- images it exec'd
    status     INTEGER                -- wait status its parent collected; NULL if none did
);
CREATE TABLE objects (
    obj       INTEGER PRIMARY KEY,
    kind      INTEGER NOT NULL,       -- object_kinds.kind
    address   INTEGER NOT NULL,
    first_seq INTEGER NOT NULL
);
CREATE TABLE sites (
    site    INTEGER PRIMARY KEY,
    address INTEGER NOT NULL          -- return address of the interposed call
);
CREATE TABLE modules (
    path TEXT NOT NULL,
    base INTEGER NOT NULL             -- load bias
);
CREATE TABLE calls (
    call INTEGER PRIMARY KEY,         -- what an event did and where: one row per distinct
    kind INTEGER NOT NULL,            -- event_kinds.kind
    obj  INTEGER NOT NULL,            -- objects.obj, 0 for none
    aux  INTEGER NOT NULL,            -- per kind, see event_kinds.description
    site INTEGER NOT NULL             -- sites.site, 0 for none
);
CREATE TABLE event_rows (
    seq    INTEGER PRIMARY KEY,       -- global order, from 0
    tid    INTEGER NOT NULL,          -- threads.tid
    call   INTEGER NOT NULL,          -- calls.call
    result INTEGER NOT NULL,          -- return value (errno values; -errno for sem_*)
    dts    INTEGER NOT NULL           -- ns since the thread's previous event (its first: since the start)
);
-- Derived from event_rows for replay's speed (docs/TRACE_FORMAT.md): every event's seq,
-- thread, call and result, packed, a chunk of consecutive events a row. Optional.
CREATE TABLE schedule (
    chunk     INTEGER PRIMARY KEY,    -- 0, 1, ...: the events in seq order, 65536 a chunk
    first_seq INTEGER NOT NULL,       -- the seq of its first event
    events    INTEGER NOT NULL,       -- events in it
    bytes     BLOB NOT NULL           -- packed (supervisor/schedpack.h)
);
CREATE TABLE marks (
    win INTEGER NOT NULL,             -- seq / 1024
    tid INTEGER NOT NULL,             -- a thread with events in that window...
    idx INTEGER NOT NULL,             -- ... the index of its first one there
    ts  INTEGER NOT NULL,             -- ... and its ts
    PRIMARY KEY (win, tid)
) WITHOUT ROWID;
-- The events, one row each, as plain columns (idx and ts are derived).
CREATE VIEW events AS
SELECT e.seq AS seq, e.tid AS tid, row_number() OVER w - 1 AS idx, c.kind AS kind, c.obj AS obj,
       e.result AS result, c.aux AS aux, c.site AS site, sum(e.dts) OVER w AS ts
FROM event_rows e JOIN calls c ON c.call = e.call
WINDOW w AS (PARTITION BY e.tid ORDER BY e.seq);
CREATE TABLE data (
    seq   INTEGER PRIMARY KEY,        -- the event the bytes belong to
    bytes BLOB NOT NULL
);
CREATE TABLE stdin (
    chunk INTEGER PRIMARY KEY,        -- what the program read on stdin when it was a pipe, in order
    bytes BLOB NOT NULL
);
CREATE TABLE blocked (
    tid  INTEGER PRIMARY KEY,         -- a thread blocked when the program was stopped
    kind INTEGER NOT NULL,            -- the event it was blocked in
    obj  INTEGER NOT NULL,
    ra   INTEGER NOT NULL
);
CREATE TABLE files (
    path     TEXT NOT NULL,           -- a file the program read, loaded or exec'd, as it named it (absolute)
    how      TEXT NOT NULL,           -- opened | loaded | exec
    size     INTEGER NOT NULL,        -- its size and mtime then
    mtime_ns INTEGER NOT NULL,
    cut      INTEGER NOT NULL         -- 1: the path was too long to keep whole
);
CREATE TABLE packed (
    path     TEXT PRIMARY KEY,        -- what replay shows the program at this absolute path (detrec pack)
    type     TEXT NOT NULL,           -- file | symlink | dir
    mode     INTEGER NOT NULL,        -- permission bits
    mtime_ns INTEGER NOT NULL,
    size     INTEGER NOT NULL,        -- file: bytes
    sha256   TEXT,                    -- file: its content, in blobs
    target   TEXT                     -- symlink: what it points to
);
CREATE TABLE blobs (
    sha256 TEXT NOT NULL,             -- of the whole uncompressed file
    chunk  INTEGER NOT NULL,          -- 0, 1, ...: the file in order
    codec  TEXT NOT NULL,             -- zlib | raw
    size   INTEGER NOT NULL,          -- uncompressed bytes of this chunk
    bytes  BLOB NOT NULL,
    PRIMARY KEY (sha256, chunk)
);
CREATE TABLE outcome (
    status        TEXT NOT NULL,      -- exited | signaled | timeout | stopped | interrupted
    exit_code     INTEGER,
    signal        INTEGER,
    stdout_bytes  INTEGER NOT NULL,
    stdout_sha256 TEXT NOT NULL,
    stdout_tail   BLOB NOT NULL,
    stderr_bytes  INTEGER NOT NULL,
    stderr_sha256 TEXT NOT NULL,
    stderr_tail   BLOB NOT NULL,
    duration_ns   INTEGER NOT NULL,
    events        INTEGER NOT NULL,
    message       TEXT NOT NULL       -- what det says about the end ("" if nothing)
);
"""

# Tables (and views) a trace must have to be read at all.
REQUIRED_TABLES = ("meta", "event_kinds", "threads", "processes", "objects", "sites", "calls", "event_rows", "marks",
                   "events", "outcome")

# Tables a trace may lack (made by this format version before they existed):
# derived data, which readers do without.
OPTIONAL_TABLES = ("schedule",)

# Seqs per marks window.
MARK_WINDOW = DET_MARK_WINDOW

# The packed schedule (include/det/sup.h enum det_sched_sql, supervisor/schedpack.h):
# the rows it is made from and checked against, dropping it, a chunk, and meta
# schedule_rows (the checksum lanes of the rows it was made from).
REPLAY_EVENTS = "SELECT seq, tid, call, result FROM event_rows ORDER BY seq"
_SCHEDULE_SQL = {
    "ROWS": REPLAY_EVENTS,
    "CLEAR": "DELETE FROM schedule",
    "CHUNK": "INSERT INTO schedule(chunk, first_seq, events, bytes) VALUES (?,?,?,?)",
    "META": "INSERT OR REPLACE INTO meta(key, value) VALUES ('schedule_rows', ?)",
}
REPLAY_SCHEDULE = "SELECT chunk, first_seq, events, bytes FROM schedule ORDER BY chunk"
REPLAY_SCHEDULE_ROWS = "SELECT value FROM meta WHERE key = 'schedule_rows'"

# What libdetsup.so's det_convert() binds, by include/det/sup.h's enum det_convert_sql.
_CONVERT_SQL = {
    "CALL": "INSERT INTO calls(call, kind, obj, aux, site) VALUES (?,?,?,?,?)",
    "SITE": "INSERT INTO sites(site, address) VALUES (?,?)",
    "OBJECT": "INSERT OR REPLACE INTO objects(obj, kind, address, first_seq) VALUES (?,?,?,?)",
    "FIRST_EVENT": "INSERT INTO event_rows(seq, tid, call, result, dts) VALUES (?,?,?,?,?)",
    "EVENTS": "INSERT INTO event_rows(tid, call, result, dts) VALUES ",
    "EVENT_ROW": "(?,?,?,?)",
    "DATA": "INSERT INTO data(seq, bytes) VALUES (?,?)",
    "MARK": "INSERT INTO marks(win, tid, idx, ts) VALUES (?,?,?,?)",
    "THREAD": "INSERT OR REPLACE INTO threads(tid, parent, ktid, create_seq, obj, events, process) "
              "VALUES (?,?,?,?,?,?,?)",
    "PROCESS": "INSERT INTO processes(process, parent, pid, create_seq, thread, exe, execs, status) "
               "VALUES (?,?,?,?,?,?,?,?)",
    "MODULE": "INSERT INTO modules(path, base) VALUES (?,?)",
    "RESULT": "UPDATE event_rows SET result = ? WHERE seq = ?",
    "META": "INSERT OR REPLACE INTO meta(key, value) VALUES (?,?)",
    **{f"SCHED_{name}": sql for name, sql in _SCHEDULE_SQL.items()},
    "INDEXES": "CREATE INDEX marks_by_thread ON marks(tid, idx);",
}


def _in_c_order(table: dict[str, str], order: tuple[str, ...], enum: str) -> tuple[str, ...]:
    """The statements of `table` in the order of the C enum whose member names
    (generated into det.constants) are `order`: a name either side lacks is a
    build error, found at import."""
    if set(table) != set(order):
        raise ImportError(f"det.schema: the statements for enum {enum} do not match include/det/sup.h: "
                          f"{sorted(set(table) ^ set(order))}")
    return tuple(table[name] for name in order)


SCHEDULE_SQL = _in_c_order(_SCHEDULE_SQL, SCHED_SQL_ORDER, "det_sched_sql")
CONVERT_SQL = _in_c_order(_CONVERT_SQL, CONVERT_SQL_ORDER, "det_convert_sql")

# The rows of the content checksum's lanes (include/det/sup.h det_table_sums,
# supervisor/sums.h): each event's order, thread, call and result, and each
# call's kind, object and aux (an event's idx follows from its seq and tid;
# its site and time are not enforced). No join.
EVENT_SUM_ROWS = "SELECT seq, tid, call, result FROM event_rows"
CALL_SUM_ROWS = "SELECT call, kind, obj, aux FROM calls"

# The marks again, from the events (for a trace whose event_rows were rewritten
# by hand: docs/TRACE_FORMAT.md).
REBUILD_MARKS = f"""DELETE FROM marks;
INSERT INTO marks(win, tid, idx, ts)
SELECT seq / {MARK_WINDOW}, tid, idx, ts FROM (
    SELECT seq, tid, idx, ts, row_number() OVER (PARTITION BY seq / {MARK_WINDOW}, tid ORDER BY seq) AS first
    FROM events) WHERE first = 1;"""

# Reading events without the view's window functions: rows in seq order,
# with their call's fields; idx and ts are counted and summed per thread.
EVENT_ROWS = ("SELECT e.seq, e.tid, c.kind, c.obj, e.result, c.aux, c.site, e.dts "
              "FROM event_rows e CROSS JOIN calls c ON c.call = e.call")
# The events without idx and ts (which need the view's window functions):
# a table expression that filters and joins as fast as the tables.
EVENTS_PLAIN = ("(SELECT e.seq AS seq, e.tid AS tid, c.kind AS kind, c.obj AS obj, e.result AS result, "
                "c.aux AS aux, c.site AS site FROM event_rows e CROSS JOIN calls c ON c.call = e.call)")
# Where a thread stood at the start of a marks window.
MARK_AT = "SELECT idx, ts FROM marks WHERE win = ? AND tid = ?"
# The window of a thread's event idx.
MARK_OF_INDEX = "SELECT win, idx, ts FROM marks WHERE tid = ? AND idx <= ? ORDER BY idx DESC LIMIT 1"

# Every event's thread, kind and object in order: what libdetsup.so's
# det_trace_digest() hashes into the schedule digest (inputs are skipped there).
SCHEDULE_ROWS = ("SELECT e.tid, c.kind, c.obj FROM event_rows e CROSS JOIN calls c ON c.call = e.call "
                 "ORDER BY e.seq")

# What the replay schedule builder reads (include/det/sup.h det_sup_replay_new).
REPLAY_THREADS_COMPLETE = "SELECT tid, obj, events FROM threads ORDER BY tid"
REPLAY_THREADS_COUNTED = """
SELECT t.tid, t.obj, coalesce(c.n, 0) FROM threads t
LEFT JOIN (SELECT tid, count(*) AS n FROM event_rows GROUP BY tid) c ON c.tid = t.tid
ORDER BY t.tid
"""
REPLAY_PROCESSES = "SELECT process, pid, status FROM processes ORDER BY process"
REPLAY_THREAD_PROCESSES = "SELECT tid, process, ktid, end_state FROM threads ORDER BY tid"
REPLAY_RAN_LAST = "SELECT value FROM meta WHERE key = 'ran_last'"
REPLAY_MAX_OBJECT = "SELECT max(coalesce((SELECT max(obj) FROM objects), 0), coalesce((SELECT max(obj) FROM calls), 0))"
REPLAY_CALLS = "SELECT call, kind, obj, aux FROM calls"
REPLAY_DATA_SIZE = "SELECT coalesce(sum(length(bytes)), 0) FROM data"
REPLAY_DATA = "SELECT seq, bytes FROM data ORDER BY seq"
