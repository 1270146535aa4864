"""Reading and writing det trace files (SQLite).

Rules: standard library only (gdb's Python imports this module). Opening a
trace validates it and turns every way a file can be wrong into a DetError
whose message names what is wrong; no sqlite3 exception escapes a Trace
method.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
import time
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from . import events as ev
from . import schema
from .errors import DetError
from .outpath import check_trace_output
from .paths import user_cache
from .seal import seal
from .tracefile import INCOMPLETE, SQLITE_SIDE, WorkDir, check_not_being_written, check_side_files, read_only

SQLITE_MAGIC = b"SQLite format 3\x00"


class TraceError(DetError):
    """The file is not a trace this det can read."""


class OutOfTime(Exception):
    """A query ran past the time Trace.deadline gave it."""


@dataclass
class Event:
    """One event of a trace, as Trace reads it."""

    seq: int
    tid: int
    idx: int
    kind: int
    obj: int
    result: int
    aux: int
    site: int
    ts: int

    @property
    def name(self) -> str:
        k = ev.BY_NUMBER.get(self.kind)
        return k.name.lower() if k else f"kind{self.kind}"


EVENT_COLUMNS = "seq, tid, idx, kind, obj, result, aux, site, ts"


def kind_name(kind: int) -> str:
    k = ev.BY_NUMBER.get(kind)
    return k.name.lower() if k else f"kind{kind}"


def outcome_words(o: dict[str, Any] | None) -> str:
    """A trace's outcome row (Trace.outcome()) in words, det's one wording
    of it: `exit 1`, `signal 6`, `timeout`, `incomplete` (no outcome row)."""
    if o is None:
        return "incomplete"
    if o["status"] == "exited":
        return f"exit {o['exit_code']}"
    if o["status"] == "signaled":
        return f"signal {o['signal']}"
    return str(o["status"])


def objkind_name(kind: int) -> str:
    k = ev.OBJ_BY_NUMBER.get(kind)
    return k.name.lower() if k else f"kind{kind}"


class Trace:
    """A validated, read-only trace."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.db = _open_validated(self.path)
        self._meta: dict[str, Any] | None = None
        self._late = False  # Trace.deadline's time ran out
        from .validate import validate  # (here: a recording writes traces, never reads one; start-up, issue 25)

        try:
            validate(self)
        except DetError as e:
            self.db.close()
            raise TraceError(f"{self.path}: {e}") from None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Trace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def deadline(self, seconds: float) -> Iterator[None]:
        """Queries inside stop with OutOfTime once seconds have passed (what
        a tool says at once must not wait for a scan of millions of events)."""
        end = time.monotonic() + seconds
        self._late = False

        def late() -> bool:
            self._late = time.monotonic() > end
            return self._late

        self.db.set_progress_handler(late, 20000)
        try:
            yield
        finally:
            self.db.set_progress_handler(None, 0)

    def q(self, sql: str, args: tuple = ()) -> list[tuple]:
        try:
            return self.db.execute(sql, args).fetchall()
        except (sqlite3.Error, UnicodeDecodeError) as e:
            if self._late:
                raise OutOfTime() from None
            raise TraceError(f"{self.path}: the trace is damaged ({e})") from None

    def q1(self, sql: str, args: tuple = ()) -> Any:
        rows = self.q(sql, args)
        return rows[0][0] if rows else None

    @property
    def meta(self) -> dict[str, Any]:
        if self._meta is None:
            m = {}
            for k, v in self.q("SELECT key, value FROM meta"):
                m[k] = json.loads(v) if k in schema.JSON_META else v
            self._meta = m
        return self._meta

    @property
    def complete(self) -> bool:
        return not self.path.name.endswith(INCOMPLETE) and self.outcome() is not None

    def outcome(self) -> dict[str, Any] | None:
        cur = self.db.execute("SELECT * FROM outcome LIMIT 1")
        row = cur.fetchone()
        if row is None:
            return None
        return dict(zip([d[0] for d in cur.description], row, strict=True))

    def event_count(self) -> int:
        o = self.outcome()
        if o is not None:
            return int(o["events"])
        return int(self.q1("SELECT count(*) FROM event_rows") or 0)

    def threads(self) -> list[dict[str, Any]]:
        cur = self.db.execute("SELECT * FROM threads ORDER BY tid")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def processes(self) -> list[dict[str, Any]]:
        cur = self.db.execute("SELECT * FROM processes ORDER BY process")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]

    def events(self, where: str = "", args: tuple = (), order: str = "seq", *, tid: int | None = None,
               first: int = 0, last: int | None = None) -> Iterator[Event]:
        """Events in seq order (of thread `tid`, from seq `first` to `last`),
        streamed: memory does not grow with the trace. `where`/`order` are
        SQL over the events view's columns: that reads the whole trace
        through the view (idx and ts by window functions), so prefer the
        keywords, or Trace.seqs() and the windowed readers below."""
        if where or order != "seq":
            sql = f"SELECT {EVENT_COLUMNS} FROM events {where} ORDER BY {order}"
            try:
                for row in self.db.execute(sql, args):
                    yield Event(*row)
            except sqlite3.DatabaseError as e:
                raise TraceError(f"{self.path}: the trace is damaged ({e})") from None
            return
        for rows in self.event_batches(tid=tid, first=first, last=last):
            for row in rows:
                yield Event(*row)

    def event_batches(self, *, tid: int | None = None, first: int = 0, last: int | None = None,
                      size: int = 4096, first_size: int = 256) -> Iterator[list[tuple[int, ...]]]:
        """What events() yields, as lists of Event's fields (tuples in its
        order) of up to `size` rows (the first list `first_size`, so a
        reader shows something at once): for readers of millions of events
        (detrec dump) that pay for neither an Event per row nor a
        generator step per row."""
        sql = schema.EVENT_ROWS + " WHERE e.seq >= ?"
        args: list[int] = [first]
        if last is not None:
            sql += " AND e.seq <= ?"
            args.append(last)
        if tid is not None:
            sql += " AND e.tid = ?"
            args.append(tid)
        at: dict[int, list[int]] = {}  # tid -> [idx, ts] of its last event read
        try:
            cur = self.db.execute(sql + " ORDER BY e.seq", args)
            n = first_size
            while rows := cur.fetchmany(n):
                n = size
                out = []
                append = out.append
                for seq, t, kind, obj, result, aux, site, dts in rows:
                    p = at.get(t)
                    if p is None:
                        p = at[t] = list(self._position(t, seq))
                    else:
                        p[0] += 1
                        p[1] += dts
                    append((seq, t, p[0], kind, obj, result, aux, site, p[1]))
                yield out
        except (sqlite3.Error, UnicodeDecodeError) as e:
            raise TraceError(f"{self.path}: the trace is damaged ({e})") from None

    def _position(self, tid: int, seq: int) -> tuple[int, int]:
        """idx and ts of thread tid's event at seq: from the mark of the
        thread's first event in seq's window, and its rows since (less than
        a window of rows to read)."""
        win = seq // schema.MARK_WINDOW
        rows = self.q(schema.MARK_AT, (win, tid))
        if not rows:
            raise TraceError(f"{self.path}: the trace is damaged (no mark for T{tid} at event {seq})")
        i, t = rows[0]
        dts = self.q("SELECT dts FROM event_rows WHERE seq >= ? AND seq <= ? AND tid = ? ORDER BY seq",
                     (win * schema.MARK_WINDOW, seq, tid))
        return i + len(dts) - 1, t + sum(d for (d,) in dts[1:])

    def event_rows(self) -> Iterator[tuple[int, int, int, int, int, int, int, int]]:
        """(seq, tid, idx, kind, obj, result, aux, dts) of every event, in seq
        order, from the tables (idx counted here): for passes over a whole
        trace (validation), without an Event per row."""
        cur = self.db.execute(schema.EVENT_ROWS + " ORDER BY e.seq")
        count: dict[int, int] = {}
        while rows := cur.fetchmany(4096):
            for seq, tid, kind, obj, result, aux, _site, dts in rows:
                i = count.get(tid, 0)
                count[tid] = i + 1
                yield seq, tid, i, kind, obj, result, aux, dts

    def event(self, seq: int) -> Event | None:
        rows = self.q(schema.EVENT_ROWS + " WHERE e.seq = ?", (seq,))
        if not rows:
            return None
        _, t, kind, obj, result, aux, site, _ = rows[0]
        i, ts = self._position(t, seq)
        return Event(seq, t, i, kind, obj, result, aux, site, ts)

    def seq_of(self, tid: int, idx: int) -> int | None:
        """The seq of thread tid's event idx."""
        rows = self.q(schema.MARK_OF_INDEX, (tid, idx))
        if not rows:
            return None
        win, i, _ = rows[0]
        for (seq,) in self.q("SELECT seq FROM event_rows WHERE seq >= ? AND tid = ? ORDER BY seq LIMIT ?",
                             (win * schema.MARK_WINDOW, tid, idx - i + 1)):
            if i == idx:
                return int(seq)
            i += 1
        return None

    def objects(self) -> dict[int, tuple[int, int]]:
        """obj -> (kind, address)"""
        return {o: (k, a) for o, k, a in self.q("SELECT obj, kind, address FROM objects")}

    def sites(self) -> dict[int, int]:
        return dict(self.q("SELECT site, address FROM sites"))

    def modules(self) -> list[tuple[str, int]]:
        return [(p, b) for p, b in self.q("SELECT path, base FROM modules ORDER BY base")]

    def stdin_chunks(self) -> Iterator[bytes]:
        """What the program read on stdin, when det fed it (a pipe, a
        terminal), chunk by chunk, through a connection of its own: the
        thread that feeds the program may outlive this Trace's."""
        db = read_only(self.path, check_same_thread=False)
        try:
            last = -1
            while True:
                row = db.execute("SELECT chunk, bytes FROM stdin WHERE chunk > ? ORDER BY chunk LIMIT 1",
                                 (last,)).fetchone()
                if row is None:
                    return
                last = row[0]
                yield row[1]
        except sqlite3.Error as e:
            raise TraceError(f"{self.path}: the trace is damaged ({e})") from None
        finally:
            db.close()

    def blocked(self) -> list[tuple[int, int, int, int]]:
        return self.q("SELECT tid, kind, obj, ra FROM blocked ORDER BY tid")

    def kind_counts(self) -> list[tuple[int, int]]:
        return self.q("SELECT c.kind, count(*) FROM event_rows e JOIN calls c ON c.call = e.call "
                      "GROUP BY c.kind ORDER BY 2 DESC")

    def schedule_digest(self) -> str:
        """A hash of the schedule: which thread did which ordered event on
        which object, in order (inputs are left out: their values, a
        clock's say, differ between runs of the same schedule). The
        converter stores it (meta schedule_digest, the value a hunt takes
        from the run's capture log); a trace without it is hashed from its
        rows by the same C function (native.trace_digest)."""
        stored = self.meta.get("schedule_digest")
        if isinstance(stored, str):
            return stored
        from .native import trace_digest

        try:
            return trace_digest(self.path)
        except DetError as e:
            raise TraceError(f"{self.path}: the trace is damaged ({e})") from None

    # ---- windows: how a viewer reads a large trace (a few rows at a time, never all rows as objects)

    def seq_bounds(self) -> tuple[int, int] | None:
        """The first and last seq, None when the trace has no events."""
        # Two queries: SQLite answers a lone min() or max() from the key, both at once by a scan.
        lo, hi = self.q1("SELECT min(seq) FROM event_rows"), self.q1("SELECT max(seq) FROM event_rows")
        return None if lo is None else (int(lo), int(hi))

    def events_between(self, lo: int, hi: int) -> list[Event]:
        """The events with lo <= seq < hi, in order."""
        return list(self.events(first=lo, last=hi - 1)) if hi > lo else []

    def events_at(self, seqs: Sequence[int]) -> list[Event]:
        """The events with these seqs, in seq order."""
        out = [self.event(s) for s in sorted(set(seqs))]
        return [e for e in out if e is not None]

    def thread_event(self, tid: int, idx: int) -> Event | None:
        """A thread's idx-th event (from 0)."""
        seq = self.seq_of(tid, idx)
        return None if seq is None else self.event(seq)

    def last_before(self, tid: int, seq: int) -> Event | None:
        """The thread's last event before seq."""
        found = self.q1("SELECT seq FROM event_rows WHERE seq < ? AND tid = ? ORDER BY seq DESC LIMIT 1", (seq, tid))
        return None if found is None else self.event(found)

    def lanes(self, lo: int | None = None, hi: int | None = None) -> str:
        """Every event (with lo <= seq < hi, when given) as one code point,
        tid * LANE_KINDS + kind, in order: a whole schedule in a few MB,
        scanned at C speed (a timeline's columns are slices of it).
        TraceError when a thread number is too large for that."""
        top = self.q1("SELECT max(tid) FROM threads") or 0
        if top > MAX_LANE_TID:
            raise TraceError(f"{self.path}: thread T{top}: too many threads to draw (at most {MAX_LANE_TID + 1})")
        where = " AND ".join(w for w, v in (("e.seq >= ?", lo), ("e.seq < ?", hi)) if v is not None)
        args = tuple(v for v in (lo, hi) if v is not None)
        old = self.db.text_factory
        self.db.text_factory = bytes
        try:
            # CROSS JOIN: a scan of event_rows itself, in seq order.
            raw = self.db.execute(f"SELECT group_concat(char(e.tid * {LANE_KINDS} + c.kind), '') "
                                  "FROM event_rows e CROSS JOIN calls c ON c.call = e.call "
                                  f"{'WHERE ' + where if where else ''}", args).fetchone()[0] or b""
        except sqlite3.DatabaseError as e:
            raise TraceError(f"{self.path}: the trace is damaged ({e})") from None
        finally:
            self.db.text_factory = old
        return raw.decode("utf-8", "surrogatepass")

    def seqs(self, tids: Iterable[int] | None = None, kinds: Iterable[int] | None = None,
             objs: Iterable[int] | None = None, sites: Iterable[int] | None = None) -> array:
        """The seqs of the events that pass every filter given (None: any), in order."""
        where, args = _filters(tids, kinds, objs, sites)
        try:
            cur = self.db.execute(f"SELECT seq FROM {schema.EVENTS_PLAIN} {where} ORDER BY seq", args)
            out = array("q")
            while rows := cur.fetchmany(65536):
                out.extend(r[0] for r in rows)
            return out
        except sqlite3.DatabaseError as e:
            raise TraceError(f"{self.path}: the trace is damaged ({e})") from None

    def next_seq(self, seq: int, forward: bool = True, tids: Iterable[int] | None = None,
                 kinds: Iterable[int] | None = None, objs: Iterable[int] | None = None,
                 sites: Iterable[int] | None = None) -> int | None:
        """The first event after seq (before it, if not forward) that passes
        every filter given, or None."""
        where, args = _filters(tids, kinds, objs, sites)
        where = (where + " AND " if where else "WHERE ") + ("seq > ?" if forward else "seq < ?")
        return self.q1(f"SELECT seq FROM {schema.EVENTS_PLAIN} {where} ORDER BY seq {'' if forward else 'DESC'} "
                       "LIMIT 1", (*args, seq))

    def data(self, seq: int) -> bytes | None:
        """The bytes recorded with an event (inputs, exec arguments), if any."""
        return self.q1("SELECT bytes FROM data WHERE seq = ?", (seq,))


# Code points per thread in Trace.lanes(): every event kind is below it.
LANE_KINDS = 256
MAX_LANE_TID = 0x10FFFF // LANE_KINDS - 1
assert max(e.number for e in ev.EVENTS) < LANE_KINDS


def _filters(tids: Iterable[int] | None, kinds: Iterable[int] | None, objs: Iterable[int] | None,
             sites: Iterable[int] | None) -> tuple[str, tuple[int, ...]]:
    """A WHERE clause (or "") and its arguments: each filter given is a set of allowed values."""
    parts: list[str] = []
    args: list[int] = []
    for col, values in (("tid", tids), ("kind", kinds), ("obj", objs), ("site", sites)):
        if values is None:
            continue
        vs = sorted({int(v) for v in values})
        # A long list goes in as literals (they are ints): SQLite limits bound parameters.
        parts.append(f"{col} IN ({','.join(map(str, vs))})" if len(vs) > 200 else
                     f"{col} IN ({','.join('?' * len(vs))})")
        if len(vs) <= 200:
            args.extend(vs)
    return ("WHERE " + " AND ".join(parts)) if parts else "", tuple(args)


def _open_validated(path: Path) -> sqlite3.Connection:
    """An immutable connection (det.tracefile) to the trace at path, once
    the file, what lies beside it and its SQLite identity say it is one."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise TraceError(f"{path}: no such trace") from None
    except OSError as e:
        raise TraceError(f"{path}: cannot read ({e.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise TraceError(f"{path}: not a file")
    size = st.st_size
    if path.name.endswith(INCOMPLETE):
        try:
            check_not_being_written(path)
        except DetError as e:
            raise TraceError(str(e)) from None
    if size == 0:
        raise TraceError(f"{path}: empty file, not a det trace")
    try:
        check_side_files(path, st.st_uid)
    except DetError as e:
        raise TraceError(str(e)) from None
    try:  # (without blocking: a named pipe put in its place meanwhile is refused, not waited on)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise TraceError(f"{path}: not a file")
            head = os.pread(fd, 100, 0)
        finally:
            os.close(fd)
    except OSError as e:
        raise TraceError(f"{path}: cannot read ({e.strerror})") from None
    if not head.startswith(SQLITE_MAGIC):
        raise TraceError(f"{path}: not a det trace (not an SQLite database)")
    if len(head) < 100:
        raise TraceError(f"{path}: truncated ({size} bytes): not a complete det trace")
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    wal = head[18] == 2
    if not wal and page_size and pages and size < pages * page_size:
        raise TraceError(
            f"{path}: truncated: {size} bytes, its header says {pages * page_size}: the trace is damaged"
        )
    db = None
    try:
        db = read_only(path, check_same_thread=False)
        app_id, version = _ids(db)
        if app_id != schema.APPLICATION_ID:
            raise TraceError(f"{path}: an SQLite database, but not a det trace")
        if version != schema.FORMAT_VERSION:
            newer = "a newer" if version > schema.FORMAT_VERSION else "an older"
            raise TraceError(
                f"{path}: trace format version {version}, made by {newer} det; "
                f"this det reads version {schema.FORMAT_VERSION}"
            )
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    except (sqlite3.Error, UnicodeDecodeError) as e:
        if db is not None:
            db.close()
        raise TraceError(f"{path}: the trace is damaged ({e})") from None
    except TraceError:
        if db is not None:
            db.close()
        raise
    missing = [t for t in schema.REQUIRED_TABLES if t not in tables]
    if missing:
        db.close()
        raise TraceError(f"{path}: the trace is damaged (no {', '.join(missing)} table)")
    return db


def _ids(db: sqlite3.Connection) -> tuple[int, int]:
    return db.execute("PRAGMA application_id").fetchone()[0], db.execute("PRAGMA user_version").fetchone()[0]


class TraceWriter:
    """Makes the trace NAME. While the program runs, its events go to the
    capture log NAME.incomplete.log, and NAME.incomplete (an empty trace,
    mode 0600) says that a recording is under way or was cut short;
    det_convert (recorder/convert.c) moves the events into the trace after
    the run. SQLite writes only `path`, a file in a private work directory
    (det.tracefile's rules) made when the trace is written, sealed by finish() and renamed into place by
    publish(). The caller holds NAME's TraceLock wherever another writer
    could meet it. No connection stays open between calls, so the converter
    has the file to itself.

    incomplete: salvage's NAME.incomplete, made from the log already there
    (publish() then renames the work file to it). marker=False: no
    NAME.incomplete while the run goes on (a hunt's run, in a private
    directory nobody lists, removed with the hunt: det.watchdog); writing
    and removing one cost each run most of a millisecond."""

    def __init__(self, final_path: str | os.PathLike[str], incomplete: Path | None = None,
                 marker: bool = True) -> None:
        self.final = Path(final_path) if incomplete else check_trace_output(final_path, what="trace")
        self.salvage = incomplete is not None
        self.visible = incomplete or self.final.with_name(self.final.name + INCOMPLETE)
        self.log = log_path(self.visible)
        old = [Path(str(self.visible) + s) for s in SQLITE_SIDE]
        for p in old + ([] if self.salvage else [self.visible, self.log]):  # (a salvage reads the log)
            try:
                p.unlink()
            except FileNotFoundError:
                pass
            except OSError as e:
                raise DetError(f"cannot replace {p}: {e.strerror}") from None
        self._work: WorkDir | None = None
        self._path: Path | None = None
        if self.salvage:
            self._make_work()
        elif marker:
            _create_empty(self.visible)

    def _make_work(self) -> None:
        self._work = WorkDir(self.final)
        self._path = self._work.file(self.visible.name)
        try:
            _create_empty(self._path)
        except DetError:
            self.remove_work()
            raise

    @property
    def path(self) -> Path:
        """The file SQLite writes, in the work directory, made when first
        needed: a run a hunt judges from its capture log never makes it."""
        if self._path is None:
            self._make_work()
        assert self._path is not None
        return self._path

    def remove_work(self) -> None:
        """The work directory goes (with the written trace, unless published)."""
        if self._work is not None:
            self._work.remove()

    def _db(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path)
        db.execute("PRAGMA synchronous = OFF")
        return db

    def set_meta(self, items: dict[str, Any]) -> None:
        db = self._db()
        try:
            with db:
                db.executemany(
                    "INSERT OR REPLACE INTO meta VALUES (?,?)",
                    [(k, json.dumps(v) if k in schema.JSON_META else v) for k, v in items.items()],
                )
        finally:
            db.close()

    def set_files(self, files: list[dict[str, Any]]) -> None:
        """What the program read, loaded or exec'd (det.native.Region.files, of a Recorder)."""
        db = self._db()
        try:
            with db:
                db.executemany("INSERT INTO files(path, how, size, mtime_ns, cut) VALUES (?,?,?,?,?)",
                               [(f["path"], f["how"], f["size"], f["mtime_ns"], f["cut"]) for f in files])
        finally:
            db.close()

    def modules(self) -> list[tuple[str, int]]:
        """The modules the converted run loaded, the program first."""
        db = self._db()
        try:
            return [(p, b) for p, b in db.execute("SELECT path, base FROM modules ORDER BY rowid")]
        finally:
            db.close()

    def finish(self, *args: Any, **kw: Any) -> Path:
        """seal_outcome(*args, **kw), then publish(): the finished trace, at its name."""
        self.seal_outcome(*args, **kw)
        return self.publish()

    def seal_outcome(
        self,
        outcome: dict[str, Any],
        end_states: dict[int, str],
        blocked: list[tuple[int, int, int, int]],
        stdin: IO[bytes] | None = None,
        sums: tuple[list[Any], list[Any]] | None = None,
    ) -> Path:
        """The run's end, once its events are in: how each thread ended, who
        was blocked, the outcome, and the seal; returns the sealed file, still
        in the work directory (publish() gives it its name). `sums`:
        the converter's checksum lanes of event_rows and calls (else the
        seal reads them from the file)."""
        db = self._db()
        try:
            with db:
                if stdin is not None:
                    stdin.seek(0)
                    for i, chunk in enumerate(iter(lambda: stdin.read(1 << 20), b"")):
                        db.execute("INSERT INTO stdin VALUES (?,?)", (i, chunk))
                db.executemany("UPDATE threads SET end_state = ? WHERE tid = ?",
                               [(state, tid) for tid, state in end_states.items()])
                db.executemany("INSERT INTO blocked VALUES (?,?,?,?)", blocked)
                cols = ", ".join(outcome)
                db.execute(
                    f"INSERT INTO outcome({cols}) VALUES ({', '.join('?' * len(outcome))})", tuple(outcome.values())
                )
            seal(db, sums)
        finally:
            db.close()
        return self.path

    def publish(self) -> Path:
        """The written trace takes its name (NAME, or a salvage's
        NAME.incomplete); the work directory goes."""
        dest = self.visible if self.salvage else self.final
        try:
            os.replace(self.path, dest)
        except OSError as e:
            self.remove_work()
            raise DetError(f"cannot write {dest}: {e.strerror}", status=1) from None
        if not self.salvage:
            self.visible.unlink(missing_ok=True)
        self.remove_work()
        return dest

    def discard(self) -> None:
        """A run nobody keeps, or one that failed: its files go, the log too."""
        self.remove_work()
        if not self.salvage:
            for p in (self.log, self.visible):
                p.unlink(missing_ok=True)


_EMPTY: bytes | None = None


def _create_empty(path: Path) -> None:
    """A new file (mode 0600) holding the empty trace."""
    try:
        with open(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600), "wb") as f:
            f.write(_empty_trace())  # (all of it, or an OSError: a full disk says so here)
    except OSError as e:
        raise DetError(f"cannot create {path}: {e.strerror}") from None


def _empty_trace() -> bytes:
    """The bytes of a trace with det's tables and kinds and nothing else,
    made once per process (--until-fail starts many traces), and kept in
    the user's cache under a name from everything they depend on, with
    their SHA-256 after them (a damaged copy is made again): making them
    cost detrec's start-up ~10 ms."""
    global _EMPTY
    if _EMPTY is None:
        import hashlib

        key = hashlib.sha256(repr((schema.PAGE_SIZE, schema.APPLICATION_ID, schema.FORMAT_VERSION, schema.SCHEMA,
                                   [(o.number, o.name, o.description) for o in ev.OBJKINDS],
                                   [(e.number, e.name, e.objkind, e.role, e.description) for e in ev.EVENTS],
                                   sqlite3.sqlite_version)).encode()).hexdigest()[:16]
        cached = user_cache(f"empty-trace-{key}.db")
        try:
            data = cached.read_bytes() if cached is not None else b""
        except OSError:
            data = b""
        if len(data) > 32 and hashlib.sha256(data[:-32]).digest() == data[-32:]:
            _EMPTY = data[:-32]
        else:
            _EMPTY = _make_empty_trace()
            if cached is not None:
                try:
                    cached.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                    tmp = cached.with_name(f"{cached.name}.{os.getpid()}")
                    tmp.write_bytes(_EMPTY + hashlib.sha256(_EMPTY).digest())
                    os.replace(tmp, cached)
                except OSError:
                    pass  # no cache: the next detrec makes it again
    return _EMPTY


def _make_empty_trace() -> bytes:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="det-empty-") as d:
        path = Path(d) / "empty.db"
        db = sqlite3.connect(path)
        try:
            db.executescript(
                f"""PRAGMA page_size = {schema.PAGE_SIZE};
                PRAGMA synchronous = OFF;
                PRAGMA journal_mode = MEMORY;
                PRAGMA application_id = {schema.APPLICATION_ID};
                PRAGMA user_version = {schema.FORMAT_VERSION};
                BEGIN;
                {schema.SCHEMA}
                COMMIT;"""
            )
            with db:
                db.executemany(
                    "INSERT INTO object_kinds VALUES (?,?,?)",
                    [(o.number, o.name.lower(), o.description) for o in ev.OBJKINDS],
                )
                db.executemany(
                    "INSERT INTO event_kinds VALUES (?,?,?,?,?)",
                    [(e.number, e.name.lower(), e.objkind.lower(), e.role.lower(), e.description)
                     for e in ev.EVENTS],
                )
        finally:
            db.close()
        return path.read_bytes()


def log_path(trace_path: Path) -> Path:
    """The capture log beside a trace being written (NAME.incomplete.log)."""
    return trace_path.with_name(trace_path.name + ".log")
