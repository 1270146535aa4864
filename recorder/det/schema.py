"""The SQL schema of a det trace: the only place that spells it.

Rules: standard library only (gdb's Python imports it). A change to any
table bumps FORMAT_VERSION and docs/TRACE_FORMAT.md. libdetsup.so receives
the statements it needs from here and only binds values.
"""

from __future__ import annotations

FORMAT_VERSION = 3
APPLICATION_ID = 0x64657431  # "det1"

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
CREATE TABLE events (
    seq    INTEGER PRIMARY KEY,       -- global order
    tid    INTEGER NOT NULL,          -- threads.tid
    idx    INTEGER NOT NULL,          -- index among the thread's events, from 0
    kind   INTEGER NOT NULL,          -- event_kinds.kind
    obj    INTEGER NOT NULL,          -- objects.obj, 0 for none
    result INTEGER NOT NULL,          -- return value (errno values; -errno for sem_*)
    aux    INTEGER NOT NULL,          -- per kind, see event_kinds.description
    site   INTEGER NOT NULL,          -- sites.site, 0 for none
    ts     INTEGER NOT NULL           -- ns since the program started
);
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

# Tables a trace must have to be read at all.
REQUIRED_TABLES = ("meta", "event_kinds", "threads", "processes", "objects", "sites", "events", "outcome")

# Statements libdetsup.so binds (include/det/sup.h gives the order).
EVENT_INSERT_PREFIX = "INSERT INTO events(seq, tid, idx, kind, obj, result, aux, site, ts) VALUES "
EVENT_INSERT_ROW = "(?,?,?,?,?,?,?,?,?)"
OBJECT_INSERT = "INSERT OR REPLACE INTO objects(obj, kind, address, first_seq) VALUES (?,?,?,?)"
SITE_INSERT = "INSERT INTO sites(site, address) VALUES (?,?)"
THREAD_INSERT = "INSERT OR REPLACE INTO threads(tid, parent, ktid, create_seq, obj) VALUES (?,?,?,?,?)"
RESULT_UPDATE = "UPDATE events SET result = ? WHERE seq = ?"
DATA_INSERT = "INSERT INTO data(seq, bytes) VALUES (?,?)"

# What the replay schedule builder reads.
REPLAY_THREADS_COMPLETE = "SELECT tid, obj, events FROM threads ORDER BY tid"
REPLAY_THREADS_COUNTED = """
SELECT t.tid, t.obj, coalesce(c.n, 0) FROM threads t
LEFT JOIN (SELECT tid, count(*) AS n FROM events GROUP BY tid) c ON c.tid = t.tid
ORDER BY t.tid
"""
REPLAY_PROCESSES = "SELECT process, pid, status FROM processes ORDER BY process"
REPLAY_THREAD_PROCESSES = "SELECT tid, process, end_state FROM threads ORDER BY tid"
REPLAY_MAX_OBJECT = "SELECT coalesce(max(obj), 0) FROM objects"
REPLAY_EVENTS = "SELECT seq, tid, idx, kind, obj, aux, result FROM events ORDER BY seq"
REPLAY_DATA_SIZE = "SELECT coalesce(sum(length(bytes)), 0) FROM data"
REPLAY_DATA = "SELECT seq, bytes FROM data ORDER BY seq"
