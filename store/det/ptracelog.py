"""What detrec --ptrace and its replay share: running build/detptrace
(ptracer/detptrace.c) on a program, and the event log it reads and writes.

Rules: the log's record layout is ptracer/detptrace.c's struct ptr_rec, spelled
once here (REC); the program's outputs are captured as every det launch does
(det.launch's Capture: forwarded, counted, hashed). A supervisor's failure is a
DetError of one line. Standard library only.
"""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import DetError
from .launch import Capture, Outputs, output_pair
from .native import libdir

# struct ptr_rec: thread, kind, aux, result, ns, len, ktid; then len bytes
REC = struct.Struct("<IIqqQII")


@dataclass
class LogEvent:
    thread: int
    kind: int
    aux: int
    result: int
    ns: int
    ktid: int
    data: bytes
    obj: int = 0  # the object's address (det.isolog's records; detptrace's have none)


def read_log(path: Path, cut_ok: bool = False, layout: struct.Struct = REC) -> Iterator[LogEvent]:
    """cut_ok: the supervisor was killed (a timeout): a last record cut
    short ends the log. layout: REC's fields, then optionally the object's
    address (det.isolog.REC)."""
    with open(path, "rb") as f:
        while head := f.read(layout.size):
            data = b""
            if len(head) == layout.size:
                thread, kind, aux, result, ns, n, ktid, *obj = layout.unpack(head)
                data = f.read(n)
            if len(head) < layout.size or len(data) < n:
                if cut_ok:
                    return
                raise DetError(f"{path}: the supervisor's log is cut short")
            yield LogEvent(thread, kind, aux, result, ns, ktid, data, obj[0] if obj else 0)


def write_log(path: Path, events: Iterator[tuple[int, int, int, int, bytes]]) -> None:
    """events: (thread, kind, aux, result, data) in the schedule's order."""
    with open(path, "wb") as f:
        for thread, kind, aux, result, data in events:
            f.write(REC.pack(thread, kind, aux, result, 0, len(data), 0))
            f.write(data)


def detptrace_path() -> Path:
    path = libdir() / "detptrace"
    if not os.access(path, os.X_OK):
        raise DetError(f"{path}: det's ptrace supervisor is not built (make)", status=2)
    return path


@dataclass
class Supervised:
    """How a run under detptrace (or isolated, det.isolog) ended: its
    RESULT line split in two (exited|signaled|stopped|diverged|error, or
    timeout; the rest), the outputs, the time, the log."""
    how: str
    what: str
    stdout: dict
    stderr: dict
    duration_ns: int
    log: Path


def supervise(mode: str, work: Path, exe: str, argv: list[str], env: dict[str, str], cwd: str,
              outputs: tuple[dict | None, dict | None], forward: bool, timeout: float | None,
              seed: int = 0) -> Supervised:
    """Run the program under detptrace in `mode` (record: the log is made in
    `work`; replay, replay-cut: work/events.log is the schedule)."""
    log, result = work / "events.log", work / "result"
    cmd = [str(detptrace_path()), mode, str(log), str(result)] + ([str(seed)] if mode == "record" else [])
    cmd += ["--", exe] + argv
    out_r, out_w, _ = output_pair(outputs[0])
    err_r, err_w, _ = output_pair(outputs[1])
    start = time.monotonic_ns()
    try:
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out_w, stderr=err_w)
    except FileNotFoundError:
        raise DetError(f"{cwd}: working directory is gone", status=2) from None
    finally:
        os.close(out_w)
        os.close(err_w)
    pump = Outputs(Capture(out_r, sys.stdout.buffer if forward else None),
                   Capture(err_r, sys.stderr.buffer if forward else None))
    try:
        proc.wait(timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)  # (it kills the program and writes its log)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)  # (the program dies with it: PTRACE_O_EXITKILL)
            proc.wait()
        timed_out = True
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        raise
    duration = time.monotonic_ns() - start
    out, err = pump.finish()
    if timed_out:
        how, what = "timeout", f"stopped after {timeout:g} s"
    else:
        try:
            how, _, what = result.read_text().strip().partition(" ")
        except OSError:
            how, what = "error", f"the supervisor ended without a word (exit status {proc.returncode})"
    if how == "error":
        raise DetError(f"ptrace supervisor: {what}", status=2)
    return Supervised(how, what, out, err, duration, log)


def work_dir() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix="det-ptrace-")
