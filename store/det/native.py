"""ctypes binding to libdetsup.so (include/det/sup.h) and the paths of det's
native libraries: loading it, the shared region (Region), and the trace
store's C functions (convert, digests, sums, the packed schedule, file
identity). The region's two uses are bound where they are used:
det.record.native's Recorder and det.replay.native's Replayer.

Rules: the SQL passed to the library comes from schema.py; struct layouts
mirror include/det/sup.h and are checked against det_sup_abi() on load.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import sqlite3
from pathlib import Path

from . import paths, schema
from .constants import DET_FILE_CUT, DET_FILE_EXEC, DET_FILE_LOADED, DET_FILE_OPENED
from .errors import DetError


def libdir() -> Path:
    """Where libdet.so and libdetsup.so are: $DET_LIBDIR, else det.paths.LIB_DIR."""
    return _libdir(os.environ.get("DET_LIBDIR"))


@functools.lru_cache(maxsize=4)
def _libdir(env: str | None) -> Path:
    """(Checked once per process: each of a hunt's runs asks twice.)"""
    d = Path(env) if env else paths.LIB_DIR
    for name in ("libdet.so", "libdetsup.so"):
        if not (d / name).exists():
            hint = "reinstall det" if paths.INSTALLED and not env else "run `make` first"
            raise DetError(f"{d / name} is missing: {hint}", status=2)
    return d


def libdet_path() -> Path:
    return libdir() / "libdet.so"


class ThreadInfo(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_uint64)
        for name in (
            "num", "parent", "ktid", "create_seq", "obj", "state",
            "blocked_kind", "blocked_obj", "blocked_ra", "events", "planned", "sleeping", "proc", "yielded",
            "crash_sig",
        )
    ] + [("crash_code", ctypes.c_int64)] + [
        (name, ctypes.c_uint64) for name in ("crash_pc", "crash_addr", "crash_call_ra", "crash_caller", "crash_entry")
    ]


class ProcInfo(ctypes.Structure):
    _fields_ = [
        ("pid", ctypes.c_int64), ("rec_pid", ctypes.c_int64), ("parent", ctypes.c_int64),
        ("first_thread", ctypes.c_uint64), ("create_seq", ctypes.c_uint64), ("state", ctypes.c_uint64),
        ("execs", ctypes.c_uint64), ("status", ctypes.c_int64), ("exe", ctypes.c_char * 72),
    ]


# struct det_file.how
FILE_HOW = {DET_FILE_OPENED: "opened", DET_FILE_LOADED: "loaded", DET_FILE_EXEC: "exec"}


class CaptureStats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in ("entries", "bytes", "threads", "passes", "busy_ns")]


class TableSum(ctypes.Structure):
    """A table's rows and its content-checksum lanes (supervisor/sums.h)."""

    _fields_ = [("rows", ctypes.c_uint64), ("lane", ctypes.c_int64 * 2)]

    def value(self) -> list[int | None]:
        """As SQL's count(*), sum(), sum() gave it: no sums for no rows."""
        return [self.rows, self.lane[0], self.lane[1]] if self.rows else [0, None, None]


class ConvertStats(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_uint64)
        for name in ("events", "objects", "sites", "calls", "threads", "processes", "data_bytes", "forced", "cut",
                     "log_bytes", "torn_bytes", "complete", "ns", "schedule")
    ] + [("event_sum", TableSum), ("call_sum", TableSum)]


_lib: ctypes.CDLL | None = None


class FollowState(ctypes.Structure):
    """struct det_follow_state (include/det/sup.h): a live replica's progress."""
    _fields_ = [("captured", ctypes.c_uint64), ("fed", ctypes.c_uint64), ("done", ctypes.c_uint64),
                ("lag_ns", ctypes.c_uint64), ("ready", ctypes.c_uint32), ("all_fed", ctypes.c_uint32),
                ("stopped", ctypes.c_uint32), ("pad", ctypes.c_uint32)]


def lib() -> ctypes.CDLL:
    global _lib
    if _lib is not None:
        return _lib
    path = libdir() / "libdetsup.so"
    try:
        L = ctypes.CDLL(str(path))
    except OSError as e:
        raise DetError(f"cannot load {path}: {e}") from None
    P, I, U32, U64, C = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_char_p
    sig = {
        "det_sup_abi": (U64, []),
        "det_sup_error": (C, [P]),
        "det_sup_fd": (I, [P]),
        "det_sup_free": (None, [P]),
        "det_sup_record_new": (P, [U32, U32, U64, U32]),
        "det_capture_open": (I, [P, C, C]),
        "det_capture_start": (I, [P]),
        "det_capture_finish": (I, [P]),
        "det_capture_failed": (I, [P]),
        "det_capture_stats": (None, [P, ctypes.POINTER(CaptureStats)]),
        "det_capture_stopped": (I, [P]),
        "det_convert": (I, [C, C, ctypes.POINTER(C), U32, ctypes.POINTER(ConvertStats), C, U32]),
        "det_log_meta": (I, [C, C, U32]),
        "det_log_digest": (I, [C, ctypes.POINTER(ConvertStats), C, U32]),
        "det_trace_digest": (I, [C, C, ctypes.POINTER(U64), C, U32]),
        "det_table_sums": (I, [C, C, ctypes.POINTER(TableSum), C, U32]),
        "det_sup_threads": (U32, [P]),
        "det_sup_thread": (I, [P, U32, ctypes.POINTER(ThreadInfo)]),
        "det_sup_attached": (ctypes.c_int64, [P]),
        "det_sup_failed": (I, [P, C, U32]),
        "det_sup_divergence": (I, [P, ctypes.POINTER(U64 * 10), C, U32]),
        "det_sup_module": (I, [P, U32, ctypes.POINTER(U64), C, U32]),
        "det_sup_file": (I, [P, U32, C, U32, ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64)]),
        "det_sup_files_lost": (U32, [P]),
        "det_sup_replay_new": (P, [C, C, C, C, C, C, U64, C, C, U32, C, U32]),
        "det_sup_replay_packed": (I, [P]),
        "det_sup_follow_new": (P, [C, U32, U32, U64, U64, C, U32]),
        "det_sup_follow_run": (I, [P]),
        "det_sup_follow_stop": (None, [P]),
        "det_sup_follow_hold": (None, [P]),
        "det_sup_follow_release": (None, [P]),
        "det_sup_follow_state": (None, [P, ctypes.POINTER(FollowState)]),
        "det_file_identity": (I, [C, C, U32]),
        "det_schedule_build": (I, [C, ctypes.POINTER(C), U32, ctypes.POINTER(TableSum), C, U32]),
        "det_schedule_check": (I, [C, C, C, ctypes.POINTER(TableSum), C, U32]),
        "det_sup_events_done": (U64, [P]),
        "det_sup_feed_run": (I, [P]),
        "det_sup_feed_stop": (None, [P]),
        "det_sup_add_flags": (None, [P, U32]),
        "det_sup_schedule": (None, [P, U32, U32, U64, U32]),
        "det_sup_preemptions": (U32, [P]),
        "det_sup_pct": (None, [P, ctypes.POINTER(U64), U32, U32]),
        "det_sup_cc_points": (U64, [P]),
        "det_sup_procs": (U32, [P]),
        "det_sup_proc": (I, [P, U32, ctypes.POINTER(ProcInfo)]),
        "det_sup_replay_process": (I, [P, U32, ctypes.c_int64, ctypes.c_int64]),
        "det_sup_replay_thread": (I, [P, U32, U32, ctypes.c_int64, U32]),
        "det_sup_replay_ran_last": (I, [P, U32]),
        "det_sup_strict_owner": (U32, [P]),
        "det_sup_crashed": (U32, [P]),
        "det_sup_turns_name": (C, [U32]),
        "det_sup_turns": (I, [P, C]),
        "det_sup_turns_describe": (I, [P, C, U32]),
    }
    for name, (res, args) in sig.items():
        try:
            f = getattr(L, name)
        except AttributeError:
            raise DetError(f"{path} is out of date ({name} is missing): run `make`") from None
        f.restype = res
        f.argtypes = args
    want = (ctypes.sizeof(ThreadInfo) * 1000000 + ctypes.sizeof(ProcInfo) * 1000 + ctypes.sizeof(CaptureStats) * 10
            + ctypes.sizeof(ConvertStats))
    if L.det_sup_abi() != want:
        raise DetError(f"{path} does not match this det's Python code: run `make`")
    _lib = L
    return L


def c_string(s: str | os.PathLike[str] | None) -> bytes | None:
    """A str or path as a C string argument (None: NULL)."""
    return None if s is None else os.fsencode(s)


class Region:
    """The shared region of one run (record or replay)."""

    def __init__(self, handle: int) -> None:
        self.h = handle
        self._failure: tuple[str, str] | None = None  # failed(): as read, and with its code named

    def close(self) -> None:
        if self.h:
            lib().det_sup_free(self.h)
            self.h = 0

    @property
    def fd(self) -> int:
        return lib().det_sup_fd(self.h)

    def add_flags(self, flags: int) -> None:
        lib().det_sup_add_flags(self.h, flags)

    def schedule(self, quantum: int, watchdog_ms: int, seed: int, delay_us: int) -> None:
        lib().det_sup_schedule(self.h, quantum, watchdog_ms, seed, delay_us)

    def pct(self, points: list[int], spin_steps: int) -> None:
        """PCT's change points (d-1 of them) and the starvation bound."""
        arr = (ctypes.c_uint64 * max(len(points), 1))(*points)
        lib().det_sup_pct(self.h, arr, len(points), spin_steps)

    def preemptions(self) -> int:
        return lib().det_sup_preemptions(self.h)

    def strict_owner(self) -> int:
        """Strict mode: the thread number + 1 holding the run token (0: free)."""
        return lib().det_sup_strict_owner(self.h)

    def crashed(self) -> int:
        """The thread number + 1 that last took a fault or an abort (0: none)."""
        return lib().det_sup_crashed(self.h)

    def cc_points(self) -> int:
        """det-cc memory points the program passed (counted under PCT only)."""
        return lib().det_sup_cc_points(self.h)

    def attached(self) -> int:
        return lib().det_sup_attached(self.h)

    def failed(self) -> str | None:
        """Why det stopped the program (its runtime, or the capture), if it did."""
        buf = ctypes.create_string_buffer(300)
        if not lib().det_sup_failed(self.h, buf, 300):
            return None
        raw = buf.value.decode(errors="replace")
        if self._failure is None or self._failure[0] != raw:
            from .symbols import name_code_sites  # (a stopped program only: not on detrec's start-up)

            self._failure = (raw, name_code_sites(raw, self.modules()))
        return self._failure[1]

    def threads(self) -> list[ThreadInfo]:
        out = []
        for i in range(lib().det_sup_threads(self.h)):
            info = ThreadInfo()
            if lib().det_sup_thread(self.h, i, ctypes.byref(info)) == 0:
                out.append(info)
        return out

    def processes(self) -> list[ProcInfo]:
        out = []
        for i in range(lib().det_sup_procs(self.h)):
            info = ProcInfo()
            if lib().det_sup_proc(self.h, i, ctypes.byref(info)) == 0:
                out.append(info)
        return out

    def modules(self) -> list[tuple[str, int]]:
        out = []
        base = ctypes.c_uint64()
        buf = ctypes.create_string_buffer(256)
        i = 0
        while lib().det_sup_module(self.h, i, ctypes.byref(base), buf, 256):
            out.append((os.fsdecode(buf.value), base.value))
            i += 1
        return out

    def files(self) -> tuple[list[dict[str, object]], int]:
        """The files the program read, loaded or exec'd (include/det/shm.h
        struct det_file), and how many more the table had no room for."""
        out = []
        size, mtime = ctypes.c_int64(), ctypes.c_int64()
        buf = ctypes.create_string_buffer(512)
        i = 0
        while (how := lib().det_sup_file(self.h, i, buf, 512, ctypes.byref(size), ctypes.byref(mtime))) >= 0:
            if how:
                out.append({"path": os.fsdecode(buf.value), "how": FILE_HOW.get(how & 0xff, "?"),
                            "size": size.value, "mtime_ns": mtime.value, "cut": int(bool(how & DET_FILE_CUT))})
            i += 1
        return out, lib().det_sup_files_lost(self.h)

    def divergence(self) -> tuple[dict[str, int], str] | None:
        arr = (ctypes.c_uint64 * 10)()
        what = ctypes.create_string_buffer(200)
        if not lib().det_sup_divergence(self.h, ctypes.byref(arr), what, 200):
            return None
        keys = ("thread", "idx", "seq", "reason", "want_kind", "want_obj", "got_kind", "got_obj", "got_addr", "ra")
        return dict(zip(keys, arr, strict=True)), what.value.decode(errors="replace")


def convert(log_path: Path, db_path: Path) -> ConvertStats:
    """Build the trace at db_path (det's tables, no events yet) from a capture log."""
    sql = (ctypes.c_char_p * len(schema.CONVERT_SQL))(*[q.encode() for q in schema.CONVERT_SQL])
    st = ConvertStats()
    err = ctypes.create_string_buffer(600)
    if lib().det_convert(c_string(log_path), c_string(db_path), sql, len(schema.CONVERT_SQL), ctypes.byref(st),
                         err, 600) != 0:
        raise DetError(err.value.decode(errors="replace"))
    return st


def digest_hex(value: int) -> str:
    """A schedule digest as the trace's meta schedule_digest spells it."""
    return f"{value:016x}"


def log_digest(log_path: Path) -> ConvertStats:
    """The schedule digest of a capture log (stats.schedule; digest_hex
    spells it) and the merge's counts, without making the trace: the value
    its trace would store. The log is left as it is."""
    st = ConvertStats()
    err = ctypes.create_string_buffer(600)
    if lib().det_log_digest(c_string(log_path), ctypes.byref(st), err, 600) != 0:
        raise DetError(err.value.decode(errors="replace"))
    return st


def trace_digest(db_path: Path) -> str:
    """The schedule digest of a trace, from its rows (for a trace made
    without one in its meta): the same function as log_digest."""
    value = ctypes.c_uint64()
    err = ctypes.create_string_buffer(600)
    if lib().det_trace_digest(c_string(db_path), schema.SCHEDULE_ROWS.encode(), ctypes.byref(value), err, 600) != 0:
        raise DetError(err.value.decode(errors="replace"))
    return digest_hex(value.value)
def table_sums(db_path: str | os.PathLike[str], events: bool = True) -> tuple[list[int | None], list[int | None]]:
    """The checksum lanes of event_rows and calls, read from the (committed)
    trace file: what det_convert hands over as it writes them (events=False:
    calls only, event_rows' come back as [])."""
    out: list[list[int | None]] = [] if events else [[]]
    for table, select in (("event_rows", schema.EVENT_SUM_ROWS), ("calls", schema.CALL_SUM_ROWS))[0 if events else 1:]:
        s = TableSum()
        err = ctypes.create_string_buffer(300)
        if lib().det_table_sums(c_string(db_path), select.encode(), ctypes.byref(s), err, 300) != 0:
            raise sqlite3.DatabaseError(f"{table} {err.value.decode(errors='replace')}")
        out.append(s.value())
    return out[0], out[1]


def schedule_build(db_path: str | os.PathLike[str]) -> list[int | None]:
    """Make the trace's packed schedule again from its event_rows (in a
    transaction of its own: commit first), with meta schedule_rows; returns
    event_rows' checksum lanes, read in the same scan."""
    sql = (ctypes.c_char_p * len(schema.SCHEDULE_SQL))(*[q.encode() for q in schema.SCHEDULE_SQL])
    s = TableSum()
    err = ctypes.create_string_buffer(300)
    if lib().det_schedule_build(c_string(db_path), sql, len(schema.SCHEDULE_SQL), ctypes.byref(s), err, 300) != 0:
        raise sqlite3.DatabaseError(err.value.decode(errors="replace"))
    return s.value()


def schedule_check(db_path: str | os.PathLike[str]) -> tuple[str | None, list[int | None]]:
    """Does the trace's packed schedule hold exactly its event_rows? (None,
    event_rows' checksum lanes) if so, else (what differs first, [])."""
    s = TableSum()
    err = ctypes.create_string_buffer(300)
    r = lib().det_schedule_check(c_string(db_path), schema.REPLAY_EVENTS.encode(), schema.REPLAY_SCHEDULE.encode(),
                                 ctypes.byref(s), err, 300)
    if r < 0:
        raise sqlite3.DatabaseError(err.value.decode(errors="replace"))
    return (err.value.decode(errors="replace"), []) if r else (None, s.value())


def file_identity(path: str | os.PathLike[str]) -> str:
    """A file's identity (supervisor/identity.c: all its bytes, 256 bits, read
    at memory speed): det.seal's key for traces known to be valid."""
    buf = ctypes.create_string_buffer(400)
    if lib().det_file_identity(c_string(path), buf, len(buf)) != 0:
        raise OSError(buf.value.decode(errors="replace"))
    return buf.value.decode()


def log_meta(log_path: Path) -> str:
    """The META chunk of a capture log (JSON text)."""
    buf = ctypes.create_string_buffer(1 << 22)
    if lib().det_log_meta(c_string(log_path), buf, len(buf)) < 0:
        raise DetError(buf.value.decode(errors="replace"))
    return buf.value.decode()


def turns_backends() -> list[str]:
    """Replay's enforcement backends, the default first (include/det/turns.def)."""
    out = []
    while (name := lib().det_sup_turns_name(len(out))) is not None:
        out.append(name.decode())
    return out


def schedule_events(value: object) -> int | None:
    """The event count of meta schedule_rows ("[rows, lane 0, lane 1]": the
    rows the packed schedule was made from), None when it says none."""
    try:
        v = json.loads(value) if isinstance(value, str) else None
    except ValueError:
        return None
    ok = isinstance(v, list) and len(v) == 3 and all(type(x) is int for x in v) and v[0] >= 0
    return v[0] if ok else None
