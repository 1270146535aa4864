"""det.record.seeds: one run of a hunt, recorded where it runs (here, or on a
cluster worker: det.hunt.cluster), and what the hunt does with it after.

Rules of this module:
 - run_seed() is all one run needs: it records one seed and judges it from
   its capture log (events, schedule digest: the converter's own merge, no
   trace written). Only the runs the hunt keeps become traces, when it
   fetches them (use_kept): the first failure of a kind, the passing
   partner, the last pass. A run is converted at once only when judging it
   takes its trace (engine.needs_trace: a wait-for graph). Other runs' logs
   are deleted unconverted: earlier passes as a newer one comes, failures
   the hunt discards, runs it abandons.
 - RUNS hands these functions to det.hunt (which never imports det.record).
"""

from __future__ import annotations

import os
import re
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from det.errors import DetError
from det.hunt.hunt import LAST_PASS, Runs, RunSpec, RunSummary

from .engine import Captured, RunResult, capture_run, finish_run, hung_run, judge_run, needs_trace

_ASSERTION = re.compile(r"Assertion [`'](.+?)' failed")


def classify(res: RunResult) -> tuple[str | None, str]:
    """A failed run's kind (exit N, signal NAME, assertion text, deadlock,
    timeout, det) and the line that shows it; (None, "") for a pass."""
    if not res.failed:
        return None, ""
    out = (res.stdout_tail + res.stderr_tail).decode(errors="replace")
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    m = _ASSERTION.search(out)
    if m:
        return f"assertion `{m.group(1)}' failed", next((ln for ln in lines if m.group(0) in ln), m.group(0))
    last = lines[-1] if lines else ""
    if hung_run(res):  # stopped by the timeout, or interrupted in a wait-for cycle
        if "deadlock" in res.message:
            return "deadlock", res.message
        return ("all threads blocked" if res.message.startswith("all threads blocked") else "timeout"), res.message
    if res.status == "stopped":
        return "det stopped it", res.message
    if res.status in ("signaled", "interrupted"):
        try:
            name = signal.Signals(-res.returncode).name
        except ValueError:
            name = str(-res.returncode)
        return f"signal {name}", last
    return f"exit {res.exit_status}", last


# Runs not converted yet, in this process (a cluster worker's runs are in
# the worker's), by the path their trace gets: use_kept converts one when
# the hunt fetches it, drop_run deletes one unconverted.
_WAITING: dict[str, Captured] = {}
_WAITING_LOCK = threading.Lock()
T = TypeVar("T")


def _wait(path: Path, c: Captured | None = None, trace: Path | None = None) -> None:
    """The run path stands for from now on: its capture log waits (c), or
    its trace, converted already, moves there; what waited there before (an
    earlier pass) goes unconverted."""
    with _WAITING_LOCK:
        old = _WAITING.pop(str(path), None)
        if c is not None:
            _WAITING[str(path)] = c
            path.unlink(missing_ok=True)  # a pass converted before this one
        elif trace is not None:
            os.replace(trace, path)
    if old is not None:
        old.discard()


def use_kept(path: str | os.PathLike[str], use: Callable[[Path], T]) -> tuple[T, bool]:
    """use(trace) of a run the hunt keeps, converted first if its log
    waits; and whether it was converted now. Under the lock, since a newer
    pass may replace the last one meanwhile."""
    path = Path(path)
    with _WAITING_LOCK:
        c = _WAITING.pop(str(path), None)
        if c is not None:
            res = finish_run(c)
            if res.path != path:
                os.replace(res.path, path)
        return use(path), c is not None


def drop_run(path: str | os.PathLike[str]) -> None:
    """A run the hunt does not keep: its trace, or its log unconverted."""
    with _WAITING_LOCK:
        c = _WAITING.pop(str(path), None)
    if c is not None:
        c.discard()
    Path(path).unlink(missing_ok=True)


def drop_runs(scratch: Path) -> None:
    """Every run waiting under scratch/ (the hunt is over)."""
    with _WAITING_LOCK:
        gone = [p for p in _WAITING if Path(p).parent == scratch]
        runs = [_WAITING.pop(p) for p in gone]
    for c in runs:
        c.discard()


def run_seed(spec: RunSpec, index: int, pct_k: int, scratch: Path, stop: Any = None) -> RunSummary:
    """Record run `index` of the hunt into scratch/: a failing run waits as
    run-INDEX.db, a passing one as last-pass.db (replacing the one before),
    each as its capture log until the hunt fetches it (use_kept) or drops
    it (drop_run). `stop` (anything with is_set()) kills the run when set."""
    seed = spec.opts.seed + index if spec.opts.seed else 0
    opts = spec.opts.for_seed(seed, pct_k) if seed else spec.opts
    c = capture_run(spec.exe, spec.argv, scratch / f"run-{index}.db", opts, stop, marker=False)
    if c.log_failed:  # a full disk: no run can be recorded, the hunt ends
        c.discard()
        raise DetError(f"run {index + 1}: {c.message}", status=1)
    converted = needs_trace(c)
    res = finish_run(c) if converted else judge_run(c)
    hung = hung_run(res)
    abandoned = not hung and (bool(stop is not None and stop.is_set()) or res.status == "interrupted")
    kind, detail = classify(res)
    if abandoned:
        if converted:
            res.path.unlink(missing_ok=True)
        else:
            c.discard()
    elif kind is None:
        last = scratch / LAST_PASS
        if converted:
            _wait(last, trace=res.path)
        else:
            _wait(last, c)
        res.path = last
    elif not converted:
        _wait(res.path, c)
    tail = (res.stdout_tail + res.stderr_tail).decode(errors="replace").strip().splitlines()[-5:]
    return RunSummary(index, seed, opts.pct_k, res.status, res.exit_status, kind, detail, res.events, res.pct_steps,
                      "" if abandoned else res.schedule, res.duration, str(res.path), abandoned=abandoned, hung=hung,
                      converted=converted and not abandoned, message=res.message, report=res.report, tail=tail)


RUNS = Runs(run_seed, use_kept, drop_run, drop_runs)
