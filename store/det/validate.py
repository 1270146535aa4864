"""Validating a trace: every tool reads a trace only after this module said yes.

    validate(trace)   called by det.trace.Trace when it opens a file

Rules of this file:
  - Standard library only (gdb's Python imports it through det.trace), and
    libdetsup.so through det.native (ctypes) for the checksum's row lanes,
    the packed schedule's check and the file identity.
  - A trace that is wrong in any way becomes a TraceError whose message is
    one line naming the table, row and value at fault; nothing else escapes
    (no sqlite3, json, Unicode or type error).
  - The checks are written against the trace's logical content (meta, the
    outcome, threads, processes, objects, and the events' seq, tid, idx,
    kind, obj, result and aux), read through Trace, so that a change of how
    events are stored touches little here. The expected tables and columns
    come from schema.SCHEMA. The tables the events are stored in (format 4:
    event_rows, calls, marks) are checked as tables too: types, references,
    and the marks against the events they index.
  - Cheap checks (identity, schema, meta, outcome, the small tables) run at
    every open. The full pass reads every event once (types, ranges,
    references, and each kind's order rules: a barrier's depart after its
    arrive, a lock taken only when free, a join after the exit, ...) and
    compares the content checksum that detrec sealed the trace with
    (det.seal: how it is made, and the seal), so a changed input value or
    schedule is refused too; here its row lanes are summed by one C scan
    of each table.
  - The packed schedule (table schedule, meta schedule_rows) is derived
    data for replay's speed, outside the checksum: the full pass checks, in
    C (native.schedule_check, one scan of both), that it holds exactly
    event_rows' (seq, tid, call, result) and says which rows it was made
    from, so a stale or edited one is refused like any other damage; that
    scan's lanes of event_rows serve the checksum too. A trace without one
    (made before it existed) is read from its rows.
  - The full pass runs once per content: the identity of a trace det wrote,
    or of one that passed (native.file_identity: all its bytes, 256 bits,
    read at memory speed), is kept in the user's cache
    ($XDG_CACHE_HOME/det/valid-traces, det.seal's), and a file with those
    exact bytes needs only the cheap checks. DET_VALIDATE=full forces the
    full pass.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from . import events as ev
from . import schema
from .errors import TraceDamage
from .seal import content_sum, db_file, file_identity, known_valid, remember, sums_with


class Opened(Protocol):
    """What this module reads of the det.trace.Trace that calls it as it
    opens a file (a protocol: det.trace imports this module, not back)."""

    path: Path
    db: sqlite3.Connection

    def event_rows(self) -> Iterator[tuple[int, int, int, int, int, int, int, int]]: ...


ROLE = {k.number: k.role for k in ev.EVENTS}
OBJKIND_OF = {k.number: k.objkind for k in ev.EVENTS}
OBJKIND_NUMBER = {o.name: o.number for o in ev.OBJKINDS}
KIND = {k.name: k.number for k in ev.EVENTS}
NAME = {k.number: k.name.lower() for k in ev.EVENTS}

MAX_ERRNO = 4095
EOWNERDEAD = 130
MAX_ID = 0x10FFFF  # object and site ids (det.compare.diff reads them as code points; det makes at most 2^20 objects)
HEX64 = re.compile(r"[0-9a-f]{64}")
HEX16 = re.compile(r"[0-9a-f]{16}")

# Kinds whose result is a pthread-style error number (0 or a positive errno).
PTHREAD_RESULT = {"THREAD", "MUTEX", "COND", "RWLOCK", "SPIN", "OMP_LOCK"}
READ_LOCKS = {KIND[n] for n in ("RWLOCK_RDLOCK", "RWLOCK_TRYRDLOCK", "RWLOCK_TIMEDRDLOCK", "RWLOCK_CLOCKRDLOCK")}
OWNED = {"MUTEX", "SPIN", "RWLOCK", "FILE", "OMP_LOCK"}  # objects one thread holds at a time (readers aside)

META_TYPES: dict[str, Callable[[Any], bool]] = {
    "format_version": lambda v: v == schema.FORMAT_VERSION,
    "mode": lambda v: v in ("record", "strict", "logical", "ptrace", "isolated"),
    "argv": lambda v: isinstance(v, list) and len(v) > 0 and all(isinstance(a, str) for a in v),
    "env": lambda v: isinstance(v, dict) and all(isinstance(k, str) and isinstance(x, str) for k, x in v.items()),
    "cwd": lambda v: isinstance(v, str) and v.startswith("/"),
    "binary": lambda v: isinstance(v, str) and v.startswith("/"),
    "binary_sha256": lambda v: isinstance(v, str) and HEX64.fullmatch(v) is not None,
    "stdin": lambda v: v is None or _stdin_ok(v),
}
META_OPTIONAL: dict[str, Callable[[Any], bool]] = {
    "det_version": lambda v: isinstance(v, str),
    "libdet_sha256": lambda v: isinstance(v, str) and HEX64.fullmatch(v) is not None,
    "libraries": lambda v: isinstance(v, list) and all(
        isinstance(x, list) and len(x) == 2 and isinstance(x[0], str) and isinstance(x[1], str)
        and HEX64.fullmatch(x[1]) is not None for x in v),
    "start_time": lambda v: isinstance(v, str),
    "start_unix_ns": lambda v: isinstance(v, int),
    "host": lambda v: isinstance(v, str),
    "kernel": lambda v: isinstance(v, str),
    "timeout": lambda v: v is None or (isinstance(v, (int, float)) and v > 0),
    "strict_quantum": lambda v: v is None or (isinstance(v, int) and v > 0),
    "chaos_seed": lambda v: v is None or (isinstance(v, int) and v > 0),
    "chaos": lambda v: v in (None, "pct", "delays"),
    "logical": lambda v: v in (None, True, 1),
    "ptrace_seed": lambda v: isinstance(v, int) and v > 0,  # detrec --ptrace: its scheduler's seed
    "pct_over": lambda v: v in (None, "memory points"),
    "pct_depth": lambda v: v is None or (isinstance(v, int) and 1 <= v <= 9),
    "pct_k": lambda v: v is None or (isinstance(v, int) and v > 0),
    "pct_change_points": lambda v: isinstance(v, list) and len(v) <= 8 and all(
        isinstance(x, int) and x > 0 for x in v),
    "ingest_events_per_s": lambda v: isinstance(v, (int, float)) and v >= 0,
    "preemptions": lambda v: isinstance(v, int) and v >= 0,
    "ran_last": lambda v: _int(v) and v >= 0,
    "content_sum": lambda v: isinstance(v, str) and HEX64.fullmatch(v) is not None,
    # detrec --verify, --until-fail, --runs, dethunt: did a replay right after recording reproduce it (det.verdict)
    "verified": lambda v: isinstance(v, dict) and isinstance(v.get("replays"), bool) and isinstance(v.get("why"), str),
    "schedule_digest": lambda v: isinstance(v, str) and HEX16.fullmatch(v) is not None,
    "scrubbed": lambda v: isinstance(v, str),
    "machine": lambda v: isinstance(v, str),
    "cpu_model": lambda v: isinstance(v, str),
    "cpu_flags": lambda v: isinstance(v, str),
    "files_lost": lambda v: isinstance(v, int) and v >= 0,
    "schedule_rows": lambda v: isinstance(v, list) and len(v) == 3 and all(_int(x) for x in v) and v[0] >= 0,
    "stdout": lambda v: v is None or _output_ok(v),
    "stderr": lambda v: v is None or _output_ok(v),
    # the thread a signal that ends the program killed, and where (det.record.engine, det.ending)
    "crash": lambda v: isinstance(v, dict) and _int(v.get("thread")) and _int(v.get("signal")) and all(
        _int(v[k]) for k in CRASH_FIELDS if k in v),
}
CRASH_FIELDS = ("thread", "signal", "code", "pc", "addr", "call_ra", "caller", "entry")
JSON_META = schema.JSON_META
OUTCOME_STATUS = ("exited", "signaled", "timeout", "stopped", "interrupted")
END_STATES = (None, "running", "blocked", "waiting", "exited")


def _stdin_ok(v: Any) -> bool:
    if not isinstance(v, dict) or v.get("kind") not in ("tty", "pty", "pipe", "file", "none"):
        return False
    if v["kind"] == "file":
        return (isinstance(v.get("path"), str) and isinstance(v.get("sha256"), str)
                and isinstance(v.get("offset", 0), int) and v.get("offset", 0) >= 0)
    return True


def _output_ok(v: Any) -> bool:
    if not isinstance(v, dict) or v.get("kind") not in ("tty", "pipe"):
        return False
    return v["kind"] == "pipe" or all(_int(v.get(k)) and 0 < v[k] < 10000 for k in ("rows", "cols"))


def _int(v: Any) -> bool:
    return type(v) is int


TABLE_CONSTRAINTS = ("PRIMARY", "UNIQUE", "FOREIGN", "CHECK", "CONSTRAINT")


def _columns() -> dict[str, list[str]]:
    """Each table of the schema and its columns, read from schema.SCHEMA."""
    out: dict[str, list[str]] = {}
    for name, body in re.findall(r"CREATE TABLE (\w+) \((.*?)\n\)(?: WITHOUT ROWID)?;", schema.SCHEMA, re.S):
        lines = [ln.strip() for ln in body.strip().splitlines()]
        out[name] = [ln.split()[0] for ln in lines
                     if ln and not ln.startswith("--") and ln.split()[0] not in TABLE_CONSTRAINTS]
    return out


COLUMNS = _columns()
# The views (their SQL as det writes it, spaces folded): sqlite3 users read
# events through one, so it must be det's.
VIEWS = {name: " ".join(sql.split()) for sql, name in re.findall(r"(CREATE VIEW (\w+) AS.*?);\n", schema.SCHEMA, re.S)}


# ---------------------------------------------------------------- the entry point


def validate(tr: Opened) -> None:
    """Raise TraceDamage naming what is wrong with the trace, if anything."""
    try:
        _schema(tr)
        meta = _meta(tr)
        outcome = _outcome(tr)
        threads, processes, objects = _tables(tr)
        if outcome is None and not tr.path.name.endswith(".incomplete"):
            raise TraceDamage("the trace has no outcome, so it is damaged (a recording that did not finish "
                              "is named NAME.incomplete)")
        ident = file_identity(tr.path)
        if os.environ.get("DET_VALIDATE") != "full" and ident is not None and ident in known_valid():
            return
        _pages(tr)
        _events(tr, threads, processes, objects, outcome)
        _data(tr)
        _files(tr)
        stale, rows_sum = _schedule(tr, meta)
        if outcome is not None:
            want = meta.get("content_sum")
            if want is None:
                raise TraceDamage("the trace has no content checksum (meta content_sum), so it cannot be "
                                  "trusted to be what was recorded")
            if content_sum(tr.db, sums_with(tr.db, rows_sum)) != want:
                raise TraceDamage("its contents differ from what was recorded (the checksum in meta "
                                  "content_sum does not match): the trace was modified or damaged")
        if stale:
            raise TraceDamage(stale)
        if outcome is not None and ident is not None:
            remember(tr.path)
    except sqlite3.DatabaseError as e:
        raise TraceDamage(f"the trace is damaged ({e})") from None
    except (UnicodeDecodeError, OverflowError, ValueError, TypeError) as e:
        raise TraceDamage(f"the trace is damaged ({type(e).__name__}: {e})") from None


# Tables read by key (through their index) as well as whole: a damaged index
# would make the two readings differ, so they are checked with it (small).
INDEXED_TABLES = ("meta", "packed", "marks")  # (marks: by window and thread, and by thread and idx)


def _schema(tr: Opened) -> None:
    tables = {r[0] for r in tr.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for table in INDEXED_TABLES:
        if table in tables:
            problems = [r[0] for r in tr.db.execute(f"PRAGMA integrity_check({table})")]
            if problems != ["ok"]:
                what = problems[0].replace("*** in database main ***", "").strip().splitlines()[0]
                raise TraceDamage(f"the trace is damaged (table {table}: {what})")
    for table, cols in COLUMNS.items():
        if table not in tables and table in schema.OPTIONAL_TABLES:
            continue
        if table not in tables:
            raise TraceDamage(f"the trace is damaged (no {table} table)")
        have = {r[1] for r in tr.db.execute(f"PRAGMA table_info({table})")}
        missing = [c for c in cols if c not in have]
        if missing:
            raise TraceDamage(f"the trace is damaged (table {table} has no column {missing[0]})")
    for name, sql in VIEWS.items():
        row = tr.db.execute("SELECT CAST(sql AS BLOB) FROM sqlite_master WHERE type = 'view' AND name = ?",
                            (name,)).fetchone()
        if row is None or not isinstance(row[0], bytes) or " ".join(row[0].decode(errors="replace").split()) != sql:
            raise TraceDamage(f"the trace is damaged (its {name} view is not det's)")


def _meta(tr: Opened) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for key, value in tr.db.execute("SELECT key, value FROM meta"):
        if not isinstance(key, str):
            raise TraceDamage(f"meta has a key that is not text ({key!r})")
        if key in JSON_META:
            if not isinstance(value, str):
                raise TraceDamage(f"meta {key} is not JSON text")
            try:
                value = load_json(value)
            except ValueError as e:
                raise TraceDamage(f"meta {key} is not valid JSON ({e})") from None
        meta[key] = value
    check_meta(meta)
    return meta


def check_meta(meta: dict[str, Any]) -> None:
    """The meta table's values, decoded (JSON_META's from their JSON)."""
    version = meta.get("format_version")
    if isinstance(version, (int, str)) and str(version).isdigit() and int(version) != schema.FORMAT_VERSION:
        newer = "a newer" if int(version) > schema.FORMAT_VERSION else "an older"
        raise TraceDamage(f"meta says trace format version {version}, made by {newer} det; this det reads "
                          f"version {schema.FORMAT_VERSION}")
    for key, ok in META_TYPES.items():
        if key not in meta:
            raise TraceDamage(f"meta has no {key}")
        if not ok(meta[key]):
            raise TraceDamage(f"meta {key} has an impossible value ({_show(meta[key])})")
    for key, ok in META_OPTIONAL.items():
        if key in meta and not ok(meta[key]):
            raise TraceDamage(f"meta {key} has an impossible value ({_show(meta[key])})")


def meta_of_log(text: str) -> dict[str, Any]:
    """The meta table that a capture log's META chunk (JSON text) gives its
    salvaged trace, checked as a trace's meta is; TraceDamage says what is
    wrong, as a phrase that follows "its META chunk"."""
    try:
        meta = load_json(text)
    except ValueError as e:
        raise TraceDamage(f"is not JSON ({e})") from None
    if not isinstance(meta, dict):
        raise TraceDamage(f"is not a JSON object ({_show(meta)})")
    for key, value in meta.items():
        if not _text(key) or not _storable(key, value):
            raise TraceDamage(f"is not a trace's meta table (meta {_show(key)} cannot hold {_show(value)})")
    try:
        check_meta(meta)
    except TraceDamage as e:
        raise TraceDamage(f"is not a trace's meta table ({e})") from None
    return meta


def _storable(key: str, value: Any) -> bool:
    """Can the meta table hold value as it is? (JSON_META's are stored as JSON text.)"""
    if key in JSON_META or value is None or isinstance(value, float):
        return True
    if isinstance(value, int):
        return -(2**63) <= value < 2**63
    return _text(value)


def _text(v: Any) -> bool:
    """A str SQLite can store: UTF-8, so no lone surrogate (which a JSON \\u escape can make)."""
    if not isinstance(v, str):
        return False
    try:
        v.encode()
    except UnicodeEncodeError:
        return False
    return True


# JSON that det reads from a file (meta values, a capture log's META chunk)
# nests at most this deep: det writes 3 levels, and a deeper text would
# exhaust Python's recursion in json.loads.
JSON_DEPTH = 32
_JSON_ESCAPE = re.compile(r"\\.", re.S)
_JSON_STRING = re.compile(r'"[^"]*"')  # (once escapes are out)
_NOT_BRACKET = re.compile(r"[^][{}]+")
_INNERMOST = re.compile(r"\[\]|\{\}")


def load_json(text: str) -> Any:
    """json.loads of JSON text read from a file, its nesting measured first,
    in linear time: ValueError for text nested deeper than JSON_DEPTH, whose
    brackets do not pair, or that holds NaN or an infinity (not JSON)."""
    # the brackets outside strings, then one level of pairs off a pass
    shape = _NOT_BRACKET.sub("", _JSON_STRING.sub("", _JSON_ESCAPE.sub("", text)))
    for _ in range(JSON_DEPTH):
        shape, pairs = _INNERMOST.subn("", shape)
        if not shape:
            return json.loads(text, parse_constant=_not_json, parse_float=_finite)
        if not pairs:
            raise ValueError("its brackets do not pair")
    raise ValueError(f"it nests deeper than {JSON_DEPTH} levels")


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    v = float(text)
    if v in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is beyond a double")
    return v


def _show(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


def _outcome(tr: Opened) -> dict[str, Any] | None:
    cur = tr.db.execute("SELECT * FROM outcome")
    rows = cur.fetchall()
    if not rows:
        return None
    if len(rows) > 1:
        raise TraceDamage(f"the outcome table has {len(rows)} rows (one is written)")
    o = dict(zip([d[0] for d in cur.description], rows[0], strict=True))

    def bad(col: str) -> TraceDamage:
        return TraceDamage(f"outcome {col} has an impossible value ({_show(o[col])})")

    if o["status"] not in OUTCOME_STATUS:
        raise bad("status")
    for col in ("stdout_bytes", "stderr_bytes", "duration_ns", "events"):
        if not _int(o[col]) or o[col] < 0:
            raise bad(col)
    for col in ("stdout_sha256", "stderr_sha256"):
        if not isinstance(o[col], str) or not HEX64.fullmatch(o[col]):
            raise bad(col)
    for col in ("stdout_tail", "stderr_tail"):
        if not isinstance(o[col], (bytes, str)) or len(o[col]) > 4096:
            raise bad(col)
    if not isinstance(o["message"], str):
        raise bad("message")
    code, sig = o["exit_code"], o["signal"]
    if code is not None and (not _int(code) or not 0 <= code <= 255):
        raise bad("exit_code")
    if sig is not None and (not _int(sig) or not 1 <= sig <= 64):
        raise bad("signal")
    if (code is None) == (sig is None):
        raise TraceDamage("the outcome has " + ("both an exit code and a signal" if code is not None
                                                else "neither an exit code nor a signal"))
    if o["status"] == "exited" and code is None or o["status"] == "signaled" and sig is None:
        raise TraceDamage(f"the outcome says {o['status']} without its " + ("exit code" if sig else "signal"))
    return o


def _rows(tr: Opened, table: str) -> Iterator[dict[str, Any]]:
    cur = tr.db.execute(f"SELECT * FROM {table}")
    names = [d[0] for d in cur.description]
    for r in cur:
        yield dict(zip(names, r, strict=True))


def _numbered(tr: Opened, table: str, key: str, prefix: str, ints: tuple[str, ...]) -> dict[int, dict]:
    """The rows of a table of processes or threads by number, each number
    in range and each of `ints` a number."""
    out: dict[int, dict] = {}
    for row in _rows(tr, table):
        n = row[key]
        if not _int(n) or not 0 <= n < 2**16:
            raise TraceDamage(f"{table} has an impossible number ({_show(n)})")
        for col in ints:
            if not _int(row[col]):
                raise TraceDamage(f"{table} {prefix}{n}: {col} is not a number ({_show(row[col])})")
        out[n] = row
    return out


def _tables(tr: Opened) -> tuple[dict[int, dict], dict[int, dict], dict[int, int]]:
    """threads, processes (by number) and objects (obj -> kind), checked
    against each other."""
    objects: dict[int, int] = {}
    for o in _rows(tr, "objects"):
        if not _int(o["obj"]) or not 1 <= o["obj"] <= MAX_ID:
            raise TraceDamage(f"objects has an impossible id ({_show(o['obj'])})")
        if not _int(o["kind"]) or o["kind"] not in ev.OBJ_BY_NUMBER or o["kind"] == 0:
            raise TraceDamage(f"object {o['obj']} has an impossible kind ({_show(o['kind'])})")
        if not _int(o["address"]) or not _int(o["first_seq"]):
            raise TraceDamage(f"object {o['obj']} has an impossible address or first event")
        objects[o["obj"]] = o["kind"]
    processes = _numbered(tr, "processes", "process", "P", ("parent", "pid", "create_seq", "thread", "execs"))
    for n, p in processes.items():
        if not isinstance(p["exe"], str):
            raise TraceDamage(f"process P{n}: exe is not text")
        if p["status"] is not None and (not _int(p["status"]) or not 0 <= p["status"] <= 0xFFFF):
            raise TraceDamage(f"process P{n}: impossible wait status ({_show(p['status'])})")
        if p["pid"] < 0 or p["execs"] < 0:
            raise TraceDamage(f"process P{n}: impossible pid or exec count")
    threads = _numbered(tr, "threads", "tid", "T", ("parent", "ktid", "create_seq", "obj", "process"))
    for n, t in threads.items():
        if t["events"] is not None and (not _int(t["events"]) or t["events"] < 0):
            raise TraceDamage(f"thread T{n}: impossible event count ({_show(t['events'])})")
        if t["end_state"] not in END_STATES:
            raise TraceDamage(f"thread T{n}: impossible end state ({_show(t['end_state'])})")
    if 0 not in threads:
        raise TraceDamage("the trace has no thread T0")
    if processes and 0 not in processes:
        raise TraceDamage("the trace has no process P0")
    for n, t in threads.items():
        if (t["parent"] == -1) != (n == 0) or (n and t["parent"] not in threads):
            raise TraceDamage(f"thread T{n}: its parent T{t['parent']} is not in the trace")
        if n and t["create_seq"] < 0:
            raise TraceDamage(f"thread T{n}: no creating event ({t['create_seq']})")
        if t["obj"] and objects.get(t["obj"]) != OBJKIND_NUMBER["THREAD"]:
            raise TraceDamage(f"thread T{n}: its object {t['obj']} is not a thread object")
        if processes and t["process"] not in processes:
            raise TraceDamage(f"thread T{n}: its process P{t['process']} is not in the trace")
    for n, p in processes.items():
        if (p["parent"] == -1) != (n == 0) or (n and p["parent"] not in processes):
            raise TraceDamage(f"process P{n}: its parent P{p['parent']} is not in the trace")
        if p["thread"] not in threads:
            raise TraceDamage(f"process P{n}: its first thread T{p['thread']} is not in the trace")
    for b in _rows(tr, "blocked"):
        if b["tid"] not in threads or not all(_int(b[c]) for c in ("kind", "obj", "ra")):
            raise TraceDamage(f"blocked has an impossible row (thread {_show(b['tid'])})")
    for s in _rows(tr, "sites"):
        if not _int(s["site"]) or not 1 <= s["site"] <= MAX_ID or not _int(s["address"]):
            raise TraceDamage(f"sites has an impossible row ({_show(s['site'])})")
    for m in _rows(tr, "modules"):
        if not isinstance(m["path"], str) or not _int(m["base"]):
            raise TraceDamage(f"modules has an impossible row ({_show(m['path'])})")
    return threads, processes, objects


# ---------------------------------------------------------------- the full pass


class _Order:
    """Each kind's order rules, checked event by event in seq order."""

    def __init__(self, threads: dict[int, dict], objects: dict[int, int]) -> None:
        self.threads = threads
        self.objects = objects
        self.by_obj = {t["obj"]: n for n, t in threads.items() if t["obj"]}
        self.count = dict.fromkeys(threads, 0)
        self.exited: dict[int, int] = {}           # tid -> seq of its exit
        self.joined: dict[int, tuple[int, int]] = {}  # tid -> (join seq, joiner) before its exit
        self.holders: dict[int, dict[int, int]] = {}  # obj -> {tid: depth}
        self.readers: dict[int, dict[int, int]] = {}  # rwlock -> {tid: depth}
        self.waiting: set[tuple[int, int]] = set()    # (tid, obj) in a cond wait or barrier
        self.created: dict[int, int] = {}           # child tid -> seq of its create

    def fail(self, seq: int, tid: int, kind: int, what: str) -> TraceDamage:
        return TraceDamage(f"impossible order at event {seq} (T{tid} {NAME.get(kind, kind)}): {what}")

    def event(self, seq: int, tid: int, idx: int, kind: int, obj: int, result: int, aux: int) -> None:
        n = self.count.get(tid)
        if n is None:
            raise TraceDamage(f"event {seq} names thread T{tid}, which is not in the trace")
        if idx != n:
            raise TraceDamage(f"event {seq} is T{tid}'s event {idx}, but T{tid} has had {n} events before it")
        self.count[tid] = n + 1
        role = ROLE.get(kind)
        if role is None:
            raise TraceDamage(f"event {seq} has an unknown kind ({kind})")
        objkind = OBJKIND_OF[kind]
        if obj and obj not in self.objects:
            raise TraceDamage(f"event {seq} names object {obj}, which is not in the trace")
        if objkind not in ("NONE",) and role not in ("CREATE",) and obj and \
                self.objects[obj] != OBJKIND_NUMBER[objkind]:
            raise TraceDamage(f"event {seq} ({NAME[kind]}) names object {obj}, which is not a {objkind.lower()}")
        self._result(seq, tid, kind, objkind, result)
        if idx == 0 and tid:
            created = self.threads[tid]["create_seq"]
            if created >= seq:
                raise self.fail(seq, tid, kind, f"T{tid} runs before the event that creates it ({created})")
        if role == "CREATE":
            child = self.threads.get(aux)
            if child is None or child["create_seq"] != seq:
                raise self.fail(seq, tid, kind, f"it creates T{aux}, whose creating event is not this one")
        elif role == "EXIT":
            self.exited[tid] = seq
            if tid in self.joined:
                at, joiner = self.joined[tid]
                raise TraceDamage(f"impossible order: T{joiner} joined T{tid} at event {at}, before T{tid} "
                                  f"exited at event {seq}")
        elif role == "JOIN" and result == 0:
            target = self.by_obj.get(obj)
            if target is not None and target not in self.exited:
                self.joined.setdefault(target, (seq, tid))
        elif role in ("ACQUIRE", "RELEASE") and self.objects.get(obj) in OWNED_NUMBERS:
            self._own(seq, tid, kind, role, obj, result)
        elif role == "WAIT":
            if (tid, obj) in self.waiting:
                raise self.fail(seq, tid, kind, f"T{tid} is already waiting on object {obj}")
            self.waiting.add((tid, obj))
            if objkind == "COND" and aux:
                self._release(aux, tid)
        elif role == "WAKE":
            if (tid, obj) not in self.waiting:
                arrive = "arrive" if objkind == "BARRIER" else "wait"
                raise self.fail(seq, tid, kind, f"T{tid} has no {arrive} on object {obj} before it")
            self.waiting.discard((tid, obj))
            if objkind == "COND" and aux:
                self._take(seq, tid, kind, aux, 1)

    def _result(self, seq: int, tid: int, kind: int, objkind: str, result: int) -> None:
        name = NAME[kind]
        if objkind in PTHREAD_RESULT and kind not in (KIND["PROC_FORK"], KIND["PROC_SPAWN"]):
            ok = 0 <= result <= MAX_ERRNO
        elif objkind == "SEM":
            ok = -MAX_ERRNO <= result <= 0
        elif kind == KIND["BARRIER_DEPART"]:
            ok = result in (0, -1)
        elif objkind == "BARRIER":
            ok = 0 <= result <= MAX_ERRNO
        elif objkind == "ONCE":
            ok = result in (0, 1) if kind == KIND["ONCE"] else result == 0
        elif kind in (KIND["PROC_FORK"], KIND["PROC_SPAWN"]):
            ok = result > 0 or -MAX_ERRNO <= result < 0
        else:
            return
        if not ok:
            raise TraceDamage(f"event {seq} (T{tid} {name}) has an impossible result ({result})")

    def _own(self, seq: int, tid: int, kind: int, role: str, obj: int, result: int) -> None:
        if role == "RELEASE":
            if result == 0:
                self._release(obj, tid)
            return
        if result not in (0, EOWNERDEAD):
            return  # EBUSY, ETIMEDOUT, EDEADLK: not taken
        if result == EOWNERDEAD:  # a robust mutex whose owner died: taken over
            self.holders.pop(obj, None)
        if kind in READ_LOCKS:
            w = {t: d for t, d in self.holders.get(obj, {}).items() if t != tid}
            if w:
                raise self.fail(seq, tid, kind, f"rwlock {obj} is write-locked by T{min(w)}")
            r = self.readers.setdefault(obj, {})
            r[tid] = r.get(tid, 0) + 1
            return
        if kind in RW_WRITE and any(t != tid for t in self.readers.get(obj, {})):
            other = min(t for t in self.readers[obj] if t != tid)
            raise self.fail(seq, tid, kind, f"rwlock {obj} is read-locked by T{other}")
        self._take(seq, tid, kind, obj, 1)

    def _take(self, seq: int, tid: int, kind: int, obj: int, n: int) -> None:
        h = self.holders.setdefault(obj, {})
        others = [t for t in h if t != tid]
        if others:
            raise self.fail(seq, tid, kind, f"object {obj} is held by T{others[0]}")
        h[tid] = h.get(tid, 0) + n

    def _release(self, obj: int, tid: int) -> None:
        for table in (self.readers, self.holders):
            h = table.get(obj)
            if h and tid in h:
                h[tid] -= 1
                if h[tid] <= 0:
                    del h[tid]
                return


OWNED_NUMBERS = {OBJKIND_NUMBER[k] for k in OWNED}
# Kinds with no order rule whose result still has a range (_Order._result).
RESULT_RULED = {KIND["PROC_FORK"], KIND["PROC_SPAWN"], KIND["ONCE"], KIND["ONCE_INIT"], KIND["THREAD_DETACH"]}
RW_WRITE = {KIND[n] for n in ("RWLOCK_WRLOCK", "RWLOCK_TRYWRLOCK", "RWLOCK_TIMEDWRLOCK", "RWLOCK_CLOCKWRLOCK")}


def _events(tr: Opened, threads: dict[int, dict], processes: dict[int, dict], objects: dict[int, int],
            outcome: dict[str, Any] | None) -> None:
    _event_tables(tr)
    order = _Order(threads, objects)
    count = order.count
    ruled = {k for k, r in ROLE.items() if r not in ("INPUT", "OUTPUT", "OTHER")} | set(RESULT_RULED)
    # The commonest events (a plain lock taken when free, released by its
    # holder, an input) are checked inline; the rest by _Order.event.
    holders = order.holders
    locks = {KIND[n] for n in ("MUTEX_LOCK", "MUTEX_TRYLOCK", "MUTEX_TIMEDLOCK", "MUTEX_CLOCKLOCK", "SPIN_LOCK",
                               "SPIN_TRYLOCK", "OMP_LOCK", "OMP_TESTLOCK")}
    unlocks = {KIND["MUTEX_UNLOCK"], KIND["SPIN_UNLOCK"], KIND["OMP_UNLOCK"]}
    mutexes = {o for o, k in objects.items()
               if k in (OBJKIND_NUMBER["MUTEX"], OBJKIND_NUMBER["SPIN"], OBJKIND_NUMBER["OMP_LOCK"])}
    last = -1
    marks = _Marks(tr)
    win = -1
    for seq, tid, idx, kind, obj, result, aux, dts in tr.event_rows():
        if seq // schema.MARK_WINDOW != win:
            if seq < 0:
                raise TraceDamage(f"event {seq} has a negative number (events count from 0)")
            marks.window(win)
            win = seq // schema.MARK_WINDOW
        marks.event(seq, tid, idx, dts)
        if count.get(tid, -1) == idx and seq > last:
            if kind in locks and result == 0 and obj in mutexes:
                h = holders.get(obj)
                if not h:
                    holders[obj] = {tid: 1}
                    count[tid] = idx + 1
                    last = seq
                    continue
            elif kind in unlocks and result == 0 and obj in mutexes:
                h = holders.get(obj)
                if h and len(h) == 1 and h.get(tid) == 1:
                    del holders[obj]
                    count[tid] = idx + 1
                    last = seq
                    continue
            elif kind not in ruled and kind in ROLE and (not obj or obj in objects):
                count[tid] = idx + 1
                last = seq
                continue
        if seq <= last:
            raise TraceDamage(f"event {seq} is out of order (after event {last})")
        order.event(seq, tid, idx, kind, obj, result, aux)
        last = seq
    marks.window(win)
    marks.end()
    if outcome is not None:
        for n, t in threads.items():
            if t["events"] is not None and t["events"] != count[n]:
                raise TraceDamage(f"thread T{n} says it has {t['events']} events, the trace holds {count[n]}")
        total = sum(count.values())
        if outcome["events"] < total:
            raise TraceDamage(f"the outcome says {outcome['events']} events, the trace holds {total}")
    for n, p in processes.items():
        if n and p["create_seq"] > last:
            raise TraceDamage(f"process P{n}: its creating event {p['create_seq']} is not in the trace")


def _pages(tr: Opened) -> None:
    """SQLite's own check of the file's pages: a damaged b-tree can read as
    fewer rows to one query and as an error to another."""
    row = tr.db.execute("PRAGMA quick_check(1)").fetchone()
    if row is None or row[0] != "ok":
        raise TraceDamage(f"the trace is damaged (SQLite's check: {_show(row[0] if row else None)})")


def _event_tables(tr: Opened) -> None:
    """The tables the events are stored in (event_rows, calls, marks): every
    value a number, every call and site referred to there."""
    for table in ("event_rows", "calls", "marks"):
        cols = COLUMNS[table]
        types = " OR ".join(f"typeof({c}) != 'integer'" for c in cols)
        bad = tr.db.execute(f"SELECT {', '.join(cols)} FROM {table} WHERE {types} LIMIT 1").fetchone()
        if bad is not None:
            name, v = next((n, v) for n, v in zip(cols, bad, strict=True) if type(v) is not int)
            raise TraceDamage(f"{table} row {_show(bad[0])}: {name} is not a number ({_show(v)})")
    bad = tr.db.execute("SELECT seq, call FROM event_rows e WHERE NOT EXISTS "
                        "(SELECT 1 FROM calls c WHERE c.call = e.call) LIMIT 1").fetchone()
    if bad is not None:
        raise TraceDamage(f"event {bad[0]}: its call {bad[1]} is not in the calls table")
    bad = tr.db.execute("SELECT call, site FROM calls WHERE site != 0 AND site NOT IN (SELECT site FROM sites) "
                        "LIMIT 1").fetchone()
    if bad is not None:
        raise TraceDamage(f"call {bad[0]}: its site {bad[1]} is not in the sites table")


MAX_TS = 2**62  # ns (146 years): a larger time is damage, and sums of them stay in SQLite's integers


class _Marks:
    """The marks table checked against the events, one window at a time:
    each thread with events in a window has one mark there, with the idx and
    ts of its first event in it (readers find an event's idx and ts from
    them), and there are no others."""

    def __init__(self, tr: Opened) -> None:
        self.cur = tr.db.execute("SELECT win, tid, idx, ts FROM marks ORDER BY win, tid")
        self.next = self.cur.fetchone()
        self.ts: dict[int, int] = {}
        self.want: dict[int, tuple[int, int]] = {}

    def event(self, seq: int, tid: int, idx: int, dts: int) -> None:
        t = self.ts.get(tid, 0) + dts
        if not -MAX_TS < t < MAX_TS:
            raise TraceDamage(f"event {seq}: its time is impossible (dts {_show(dts)})")
        self.ts[tid] = t
        if tid not in self.want:
            self.want[tid] = (idx, t)

    def window(self, win: int) -> None:
        """The events of window `win` are all seen: compare its marks."""
        if win < 0:
            return
        got: dict[int, tuple[int, int]] = {}
        while self.next is not None and self.next[0] <= win:
            w, tid, idx, ts = self.next
            if w < win:
                raise TraceDamage(f"marks has a row for window {w} (T{tid}), which holds no event of T{tid}")
            got[tid] = (idx, ts)
            self.next = self.cur.fetchone()
        if got != self.want:
            tid = min(t for t in set(got) | set(self.want) if got.get(t) != self.want.get(t))
            raise TraceDamage(f"marks row (window {win}, T{tid}) is {_show(got.get(tid))}, the events say "
                              f"{_show(self.want.get(tid))} (idx, ts)")
        self.want = {}

    def end(self) -> None:
        if self.next is not None:
            w, tid = self.next[0], self.next[1]
            raise TraceDamage(f"marks has a row for window {w} (T{tid}), which holds no event of T{tid}")


def _schedule(tr: Opened, meta: dict[str, Any]) -> tuple[str | None, list[Any] | None]:
    """The packed schedule against event_rows: (what is wrong with it or
    None, event_rows' checksum lanes when the scan read them all)."""
    from . import native

    have = tr.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schedule'").fetchone()
    made_from = meta.get("schedule_rows")
    if have is None:
        if made_from is not None:
            raise TraceDamage("meta schedule_rows names a packed schedule, but the trace has no schedule table")
        return None, None
    if made_from is None:
        if tr.db.execute("SELECT 1 FROM schedule LIMIT 1").fetchone() is not None:
            return ("the packed schedule (table schedule) does not say which rows it was made from (no meta "
                    "schedule_rows)"), None
        return None, None
    problem, rows_sum = native.schedule_check(db_file(tr.db))
    if problem:
        return f"{problem}: table schedule was edited, or made from other rows than event_rows", None
    if [x or 0 for x in rows_sum] != made_from:
        return (f"meta schedule_rows says the packed schedule was made from other rows ({_show(made_from)}) than "
                f"event_rows ({_show([x or 0 for x in rows_sum])})"), rows_sum
    return None, rows_sum


def _data(tr: Opened) -> None:
    bad = tr.db.execute(
        "SELECT seq FROM data WHERE typeof(seq) != 'integer' OR typeof(bytes) != 'blob' "
        "OR seq NOT IN (SELECT seq FROM event_rows) LIMIT 1").fetchone()
    if bad is not None:
        raise TraceDamage(f"the data of event {_show(bad[0])} is damaged (no such event, or not bytes)")
    bad = tr.db.execute("SELECT chunk FROM stdin WHERE typeof(chunk) != 'integer' OR typeof(bytes) != 'blob' "
                        "LIMIT 1").fetchone()
    if bad is not None:
        raise TraceDamage(f"stdin chunk {_show(bad[0])} is damaged")


# Rows of the tables of what the program read and what a pack holds (their
# contents are checked by hash when unpacked): each names what is wrong.
FILE_TABLES = {
    "files": ("path", "typeof(path) = 'text' AND substr(path, 1, 1) = '/' AND instr(path, char(0)) = 0 "
              "AND how IN ('opened', 'loaded', 'exec') AND typeof(size) = 'integer' AND size >= 0 "
              "AND typeof(mtime_ns) = 'integer' AND cut IN (0, 1)"),
    "packed": ("path", "typeof(path) = 'text' AND substr(path, 1, 1) = '/' AND instr(path, char(0)) = 0 "
               "AND type IN ('file', 'symlink', 'dir') AND typeof(mode) = 'integer' AND mode BETWEEN 0 AND 4095 "
               "AND typeof(mtime_ns) = 'integer' AND typeof(size) = 'integer' AND size >= 0 "
               "AND (type != 'file' OR (typeof(sha256) = 'text' AND length(sha256) = 64)) "
               "AND (type != 'symlink' OR (typeof(target) = 'text' AND instr(target, char(0)) = 0))"),
    "blobs": ("sha256", "typeof(sha256) = 'text' AND length(sha256) = 64 AND typeof(chunk) = 'integer' "
              "AND chunk >= 0 AND codec IN ('zlib', 'raw') AND typeof(size) = 'integer' AND size >= 0 "
              "AND typeof(bytes) = 'blob'"),
}


def _files(tr: Opened) -> None:
    for table, (key, ok) in FILE_TABLES.items():
        bad = tr.db.execute(f"SELECT {key} FROM {table} WHERE NOT coalesce({ok}, 0) LIMIT 1").fetchone()
        if bad is not None:
            raise TraceDamage(f"table {table} has a damaged row ({key} {_show(bad[0])})")
