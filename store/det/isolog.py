"""What detrec --isolated and its replay share: running a program under
build/libdetiso.so (isolated/) with its trace log on, the log's records, and
the one order of them a trace keeps.

Rules: the record layout is isolated/trace.c's struct iso_rec, spelled once
here (REC: det.ptracelog's fields, then the object's address); the log is read
by det.ptracelog.read_log. `canonical` is the only order a trace or a
replay's check uses: the synchronization events in token order as written,
and each run of inputs between them (written in parallel, in real time's
order) sorted by thread, each thread's own in their order. The program's
outputs are captured as every det launch does (det.launch's Capture).
Standard library only.
"""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from . import events as ev
from .errors import DetError
from .launch import Capture, Outputs, StdinFeed, output_pair, spawn
from .native import libdir
from .ptracelog import LogEvent, Supervised, read_log

# struct iso_rec: thread, kind, aux, result, ns, len, pid, obj; then len bytes
REC = struct.Struct("<IIqqQIIQ")
# inputs replay hands back from the recording (isolated/trace.c take_input)
SERVED = frozenset({ev.READ, ev.RECV, ev.CLOCK_GETTIME, ev.GETRANDOM})
# what a thread writes in a parallel phase: those, and regular files' reads (read again)
PARALLEL = SERVED | {ev.FILE_READ}
TRACE_VAR = "DET_ISO_TRACE"
VAR_SIZE = 256  # its value's size, record and replay alike (the stack's addresses)


def canonical(events: Iterable[LogEvent]) -> list[LogEvent]:
    out: list[LogEvent] = []
    run: list[LogEvent] = []
    for e in events:
        if e.kind in PARALLEL:
            run.append(e)
            continue
        out += sorted(run, key=lambda r: r.thread)  # (stable: a thread's own stay in order)
        run = []
        out.append(e)
    return out + sorted(run, key=lambda r: r.thread)


def read(path: Path, cut_ok: bool = False) -> list[LogEvent]:
    return canonical(read_log(path, cut_ok, REC))


def modules(work: Path) -> list[tuple[str, int]]:
    """(path, load bias) of the objects the run loaded at its start (the program first)."""
    try:
        text = (work / "modules").read_text()
    except OSError:
        return []
    return [(path, int(base)) for base, _, path in (ln.partition(" ") for ln in text.splitlines())]


def write_inputs(path: Path, events: Iterable[tuple[int, int, int, int, bytes]]) -> None:
    """events: (thread, kind, aux, result, data) in the trace's order; the
    served inputs among them go to replay (isolated/trace.c take_input)."""
    with open(path, "wb") as f:
        for thread, kind, aux, result, data in events:
            if kind in SERVED:
                f.write(REC.pack(thread, kind, aux, result, 0, len(data), 0, 0))
                f.write(data)


def iso_library() -> Path:
    lib = libdir() / "libdetiso.so"
    if not lib.exists():
        raise DetError(f"{lib} is missing: run `make` first", status=2)
    return lib


def run(mode: str, work: Path, exe: str, argv: list[str], env: dict[str, str], cwd: str,
        outputs: tuple[dict | None, dict | None], forward: bool, timeout: float | None,
        stdin: StdinFeed | int | None = None) -> Supervised:
    """Run the program isolated with its log in `work` (mode record, or
    replay: work/inputs holds the recorded inputs), without ASLR (the trace
    names objects by address)."""
    value = f"{mode}:{work}"
    if len(value) > VAR_SIZE:
        raise DetError(f"{work}: too long a path for det's work directory", status=2)
    env = dict(env)
    prior = env.pop("LD_PRELOAD", "")
    env["LD_PRELOAD"] = str(iso_library()) + (":" + prior if prior else "")
    env["LD_BIND_NOW"] = "1"  # no lazy binding: the GOT is in the isolated globals
    env[TRACE_VAR] = value.ljust(VAR_SIZE, "/")
    env.pop("DET_ISO_STDIN_FED", None)
    if isinstance(stdin, StdinFeed):
        env["DET_ISO_STDIN_FED"] = "1"
    out_r, out_w, _ = output_pair(outputs[0])
    err_r, err_w, _ = output_pair(outputs[1])
    start = time.monotonic_ns()
    proc = spawn([exe] + argv[1:], argv[0], cwd, stdin, out_w, err_w, executable=exe, env=env, cwd=cwd,
                 process_group=0)
    pump = Outputs(Capture(out_r, sys.stdout.buffer if forward else None),
                   Capture(err_r, sys.stderr.buffer if forward else None))
    timed_out = False
    try:
        rc = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # (every thread-process: its own group)
        rc = proc.wait()
        timed_out = True
    except KeyboardInterrupt:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    finally:
        if isinstance(stdin, StdinFeed):
            stdin.close()
    duration = time.monotonic_ns() - start
    out, err = pump.finish()
    if timed_out:
        how, what = "timeout", f"stopped after {timeout:g} s"
    elif rc < 0:
        how, what = "signaled", str(-rc)
    else:
        how, what = "exited", str(rc)
    return Supervised(how, what, out, err, duration, work / "log")


def work_dir() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix="det-iso-")
