"""Traces and fixtures for dettui's tests (imported by each test module).

Rules: recorded traces come from the real detrec; the synthetic ones (for
snapshots, which must not change between runs: no clocks, no paths of the
checkout) are written by det's own TraceWriter, with fixed times, and
opened by a relative path from the test's directory.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import detrec, sample_bin
from det import events as ev
from det import schema
from det.trace import TraceWriter

SIZE = (140, 40)
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()  # the outputs: none


def write_trace(path: Path, events: list[tuple[int, int, int, int, int]], threads: int,
                blocked: list[tuple[int, int, int, int]] = (), exit_code: int | None = 0,
                status: str = "exited", message: str = "", mode: str = "record") -> Path:
    """A trace of `threads` threads: events are (tid, kind, obj, result, aux)
    in order; objects 1..threads are the threads, the others mutexes, or
    condition variables from 100 on."""
    w = TraceWriter(path)
    w.set_meta({"format_version": schema.FORMAT_VERSION, "det_version": "test", "mode": mode,
                "argv": ["/demo/bank", "3"], "env": {}, "cwd": "/demo", "binary": "/demo/bank",
                "binary_sha256": "0" * 64, "stdin": {"kind": "pipe"}, "start_time": "2026-01-01T00:00:00+00:00"})
    idx: dict[int, int] = {}
    objs: set[int] = set()
    rows = []
    for seq, (tid, kind, obj, result, aux) in enumerate(events):
        i = idx.get(tid, 0)
        idx[tid] = i + 1
        rows.append((seq, tid, i, kind, obj, result, aux, 0, 1000 * seq))
        objs.add(obj)
    with w.db:
        w.db.executemany(schema.EVENT_INSERT_PREFIX + schema.EVENT_INSERT_ROW, rows)
        for o in sorted((objs | set(range(1, threads + 1))) - {0}):
            kind = 1 if o <= threads else (3 if o >= 100 else 2)
            w.db.execute(schema.OBJECT_INSERT, (o, kind, 0x4000 + 64 * o, 0))
    created = {aux: seq for seq, (_, kind, _, _, aux) in enumerate(events) if kind == ev.THREAD_CREATE}
    thread_rows = [{"tid": t, "parent": -1 if t == 0 else 0, "ktid": 100 + t, "create_seq": created.get(t, -1),
                    "obj": t + 1,
                    "events": idx.get(t, 0), "end_state": "blocked" if any(b[0] == t for b in blocked) else "exited"}
                   for t in range(threads)]
    # a program det stopped (timeout) ended by its SIGKILL, as in a real trace
    outcome = {"status": status, "exit_code": exit_code, "signal": 9 if exit_code is None else None,
               "stdout_bytes": 0, "stdout_sha256": EMPTY_SHA256, "stdout_tail": b"",
               "stderr_bytes": 0, "stderr_sha256": EMPTY_SHA256, "stderr_tail": b"",
               "duration_ns": 1000 * len(events), "events": len(events), "message": message}
    return w.finish(outcome, thread_rows, [], list(blocked))


def bank_events(rounds: int, swap: bool = False) -> list[tuple[int, int, int, int, int]]:
    """Three threads: T0 creates T1 and T2, which take mutex 4 in turns and
    signal condition 100; with swap, T2 goes first."""
    e = [(0, ev.THREAD_CREATE, 2, 0, 1), (0, ev.THREAD_CREATE, 3, 0, 2)]
    first, second = (2, 1) if swap else (1, 2)
    e += [(first, ev.THREAD_START, first + 1, 0, 0), (second, ev.THREAD_START, second + 1, 0, 0)]
    for r in range(rounds):
        for t in (first, second) if r % 2 == 0 else (second, first):
            e += [(t, ev.MUTEX_LOCK, 4, 0, 0), (t, ev.COND_SIGNAL, 100, 0, 0), (t, ev.MUTEX_UNLOCK, 4, 0, 0)]
    e += [(0, ev.COND_WAIT, 100, 0, 4), (1, ev.COND_SIGNAL, 100, 0, 0), (0, ev.COND_WAKE, 100, 0, 4)]
    e += [(1, ev.THREAD_EXIT, 2, 0, 0), (2, ev.THREAD_EXIT, 3, 0, 0), (0, ev.THREAD_JOIN, 2, 0, 0),
          (0, ev.THREAD_JOIN, 3, 0, 0)]
    return e


def deadlock_events() -> list[tuple[int, int, int, int, int]]:
    """T1 takes mutex 4 then waits for 5; T2 takes 5 then waits for 4."""
    e = [(0, ev.THREAD_CREATE, 2, 0, 1), (0, ev.THREAD_CREATE, 3, 0, 2), (1, ev.THREAD_START, 2, 0, 0)]
    for _ in range(6):
        e += [(1, ev.MUTEX_LOCK, 4, 0, 0), (1, ev.MUTEX_LOCK, 5, 0, 0), (1, ev.MUTEX_UNLOCK, 5, 0, 0),
              (1, ev.MUTEX_UNLOCK, 4, 0, 0)]
    e += [(2, ev.THREAD_START, 3, 0, 0), (1, ev.MUTEX_LOCK, 4, 0, 0), (2, ev.MUTEX_LOCK, 5, 0, 0)]
    return e


@pytest.fixture
def in_tmp(tmp_path: Path) -> Iterator[Path]:
    """Run in tmp_path, so traces are named relatively (snapshots show no temporary paths)."""
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(old)


@pytest.fixture
def bank(in_tmp: Path) -> str:
    write_trace(in_tmp / "bank.db", bank_events(12), 3)
    return "bank.db"


@pytest.fixture
def bank_swapped(in_tmp: Path) -> str:
    write_trace(in_tmp / "bank-b.db", bank_events(12, swap=True), 3, exit_code=1)
    return "bank-b.db"


@pytest.fixture
def deadlock(in_tmp: Path) -> str:
    blocked = [(0, ev.THREAD_JOIN, 2, 0), (1, ev.MUTEX_LOCK, 5, 0), (2, ev.MUTEX_LOCK, 4, 0)]
    write_trace(in_tmp / "hang.db", deadlock_events(), 3, blocked=blocked, exit_code=None, status="timeout",
                message="timeout after 2 s")
    return "hang.db"


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real recording of a sample (bank_check_then_act: 3 threads, locks, a barrier, output)."""
    out = tmp_path_factory.mktemp("tui") / "bank.db"
    r = detrec("-q", "-o", out, "--", sample_bin("bank_check_then_act"), "20")
    assert r.returncode in (0, 1), r.stderr.decode()
    return out


def run_ok(cmd: list[str]) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, f"{cmd}: {r.stderr}"
    return r
