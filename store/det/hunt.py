"""dethunt: run a program under many chaos schedules, and say where the hunt
has been: runs, failures by kind, distinct schedules, runs per second. The
first failing trace of each kind is kept with a passing run next to it, for
detdiff.

    dethunt [options] [--] PROGRAM [ARGS...]

Rules of this module:
 - It is det's one engine for running a program many times: dethunt, and
   detrec's --until-fail and --chaos --runs (a hunt that stops at its first
   failure) use it.
 - Run i of a hunt from seed S takes seed S+i. Under PCT (--strict) its k is
   the median step count (events; det-cc memory points for a program built
   with them) of the runs that had finished when it started
   (unless --pct-k fixes it); the trace stores it, and the command printed to
   repeat a run names it.
 - Results are merged by seed, whatever order runs finish in: the trace kept
   for a kind is that of its lowest seed.
 - run_seed() is all one run needs, here or on a cluster worker
   (det/cluster.py): it records one seed where it runs and judges it from its
   capture log (events, schedule digest: the converter's own merge, no
   trace written). Only the runs the hunt keeps become traces, when it
   fetches them (use_kept): the first failure of a kind, the passing
   partner, the last pass. A run is converted at once only when judging it
   takes its trace (record.needs_trace: a wait-for graph). Other runs' logs
   are deleted unconverted: earlier passes as a newer one comes, failures
   the hunt discards, runs it abandons.
 - Exit status (dethunt): 0 if no run failed, 1 if some did, 130 when
   interrupted, 2 for bad usage.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from . import __version__
from .errors import DetError
from .launch import read_own_stdin, resolve_program, stdin_source
from .outpath import check_output_dir
from .record import (
    INTERRUPT,
    PCT_K,
    Captured,
    Options,
    RunResult,
    capture_run,
    finish_run,
    hung_run,
    judge_run,
    needs_trace,
)
from .trace import Trace
from .tracefile import WORK_SUFFIX, TraceLock, private_dir
from .trust import sha256_file
from .watchdog import watched

DEFAULT_RUNS = 100
DEFAULT_TIMEOUT = 10.0
PARTNER_RUNS = 20  # at most this many more runs to find a passing partner
_ASSERTION = re.compile(r"Assertion [`'](.+?)' failed")


@dataclass
class RunSpec:
    """What every run of a hunt needs (sent to cluster workers as it is)."""

    exe: str
    exe_sha256: str
    argv: list[str]
    opts: Options  # opts.seed: the hunt's first seed (0: plain reruns, no chaos)


@dataclass
class RunSummary:
    """What one run tells the hunt."""

    index: int
    seed: int
    pct_k: int
    status: str          # as RunResult.status
    exit_status: int
    kind: str | None     # failure kind (None: passed)
    detail: str          # the line that shows it (assertion, last output, deadlock report)
    events: int
    steps: int           # PCT's steps: events, or det-cc memory points (RunResult.pct_steps)
    schedule: str        # Trace.schedule_digest()
    seconds: float
    path: str            # the trace, where the run was recorded
    host: str = ""       # "" here; a cluster worker's address
    abandoned: bool = False  # the hunt stopped it: not a result
    hung: bool = False       # it never ended by itself (record.hung_run)
    converted: bool = False  # made into a trace where it ran (judging it took one); else its log waits
    message: str = ""
    report: list[str] = field(default_factory=list)
    tail: list[str] = field(default_factory=list)


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
        return ("deadlock" if "deadlock" in res.message else "timeout"), res.message
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
LAST_PASS = "last-pass.db"


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
    c = capture_run(spec.exe, spec.argv, scratch / f"run-{index}.db", opts, stop)
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


class Engine(Protocol):
    """Where runs happen: this machine (LocalEngine) or a cluster (det.cluster)."""

    slots: int  # runs worth having under way at once

    def submit(self, spec: RunSpec, index: int, pct_k: int) -> Any: ...
    def wait(self, handles: list[Any], timeout: float) -> list[tuple[Any, RunSummary | BaseException]]: ...
    def fetch(self, run: RunSummary, dest: Path) -> bool: ...  # True: the run was converted for it
    def discard(self, run: RunSummary) -> None: ...
    def cancel(self) -> None: ...
    def close(self) -> None: ...


class LocalEngine:
    """J recordings at once on this machine, each in a thread of its own;
    with one job, each in the thread that waits for it (handing every run to
    a thread and its result back cost a run most of a millisecond on a busy
    machine)."""

    def __init__(self, jobs: int, scratch: Path) -> None:
        self.slots = jobs
        self.scratch = private_dir(scratch, "runs in progress")
        for stale in (*scratch.glob("run-*"), *scratch.glob("last-pass.db*")):  # left by a hunt that was killed
            stale.unlink(missing_ok=True)
        for stale in scratch.glob(".*" + WORK_SUFFIX):
            shutil.rmtree(stale, ignore_errors=True)
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs) if jobs > 1 else None
        self.stop = threading.Event()

    def submit(self, spec: RunSpec, index: int, pct_k: int) -> Any:
        if self.pool is None:
            return functools.partial(run_seed, spec, index, pct_k, self.scratch, self.stop)  # run by wait()
        return self.pool.submit(run_seed, spec, index, pct_k, self.scratch, self.stop)

    def wait(self, handles: list[Any], timeout: float) -> list[tuple[Any, RunSummary | BaseException]]:
        if self.pool is None:
            run = handles[0]
            try:
                return [(run, run())]
            except BaseException as e:  # noqa: BLE001 (handed to the hunt, as a pool's future would)
                return [(run, e)]
        done, _ = concurrent.futures.wait(handles, timeout, return_when=concurrent.futures.FIRST_COMPLETED)
        return [(f, f.exception() or f.result()) for f in done]

    def fetch(self, run: RunSummary, dest: Path) -> bool:
        if Path(run.path).name == LAST_PASS:  # copied: a newer pass may replace it, or another kind want it
            _, converted = use_kept(run.path, lambda path: shutil.copyfile(path, dest))
            os.chmod(dest, 0o600)
        else:
            _, converted = use_kept(run.path, lambda path: os.replace(path, dest))
        return converted

    def discard(self, run: RunSummary) -> None:
        if Path(run.path).name != LAST_PASS:
            drop_run(run.path)

    def cancel(self) -> None:
        self.stop.set()
        self.stop = threading.Event()  # for runs submitted from now on

    def close(self) -> None:
        self.stop.set()
        if self.pool is not None:
            self.pool.shutdown(wait=True)
        drop_runs(self.scratch)
        shutil.rmtree(self.scratch, ignore_errors=True)


@dataclass
class KindStats:
    runs: int = 0
    first: RunSummary | None = None  # its run with the lowest seed
    kept: Path | None = None         # where that run's trace is kept (stop_at_first: the first one's)
    partner: Path | None = None
    partner_seed: int | None = None


@dataclass
class HuntReport:
    runs: int = 0                      # runs done (abandoned ones not counted)
    failed: int = 0
    seconds: float = 0.0
    kinds: dict[str, KindStats] = field(default_factory=dict)
    schedules: set[str] = field(default_factory=set)
    first_failure_at: int | None = None  # runs done when the first failure came in
    interrupted: bool = False
    last_pass: Path | None = None
    by_seed: dict[int, RunSummary] = field(default_factory=dict)  # by run index (seed = first seed + index)
    pct_k: int | None = None           # the last k used (strict chaos)
    converted: int = 0                 # runs made into traces (kept ones, and those judged by their trace)

    @property
    def rate(self) -> float:
        return self.runs / self.seconds if self.seconds > 0 else 0.0


class Hunt:
    """Runs spec `runs` times on `engine` and merges what the runs say.

    keep(kind) names the files for a kind's failing trace and its passing
    partner. With stop_at_first, no run starts after the first failure but
    to find it a passing partner, and only that failure is kept. keep_pass:
    where the last passing run goes when no run failed."""

    def __init__(self, spec: RunSpec, runs: int, engine: Engine, keep: Callable[[str], tuple[Path, Path]], *,
                 stop_at_first: bool = False, learn_k: bool = True, keep_pass: Path | None = None,
                 progress: Callable[[HuntReport, bool], None] | None = None) -> None:
        self.spec = spec
        self.runs = runs
        self.engine = engine
        self.keep = keep
        self.stop_at_first = stop_at_first
        self.learn_k = learn_k and spec.opts.pct
        self.keep_pass = keep_pass
        self.progress = progress or (lambda rep, final: None)
        self.report = HuntReport()
        self.steps: list[int] = []
        self.last_pass: RunSummary | None = None
        self.stopped = False               # stop_at_first: the failure came
        self.partner_from: int | None = None  # the first run started only to find a passing partner

    def pct_k(self) -> int:
        """PCT's k for the next run: the median step count of the runs so far."""
        if self.learn_k and self.steps:
            return max(1, int(statistics.median_low(self.steps)))
        return self.spec.opts.pct_k

    def run(self) -> HuntReport:
        rep = self.report
        t0 = time.monotonic()
        pending: dict[Any, int] = {}
        index = 0
        try:
            while True:
                if INTERRUPT.signal is not None and not rep.interrupted:
                    rep.interrupted = True
                    self.engine.cancel()
                while len(pending) < self.engine.slots and self._may_start(index):
                    pending[self.engine.submit(self.spec, index, self.pct_k())] = index
                    index += 1
                if not pending:
                    break
                for handle, res in self.engine.wait(list(pending), 0.2):
                    which = pending.pop(handle)
                    if isinstance(res, BaseException):
                        self.engine.cancel()
                        if isinstance(res, (DetError, KeyboardInterrupt)):
                            raise res
                        raise DetError(f"run {which + 1} (seed {self.spec.opts.seed + which}) failed in det: "
                                       f"{type(res).__name__}: {res}", status=1) from res
                    self._merge(res)
                    rep.seconds = time.monotonic() - t0
                    self.progress(rep, False)
            if self.keep_pass is not None and self.last_pass is not None and not rep.failed:
                rep.converted += self.engine.fetch(self.last_pass, self.keep_pass)
                rep.last_pass = self.keep_pass
        finally:
            rep.seconds = time.monotonic() - t0
            self.engine.close()
        self.progress(rep, True)
        rep.pct_k = self.pct_k() if self.spec.opts.pct else None
        return rep

    def _may_start(self, index: int) -> bool:
        if self.report.interrupted:
            return False
        if not self.stopped and index < self.runs:
            return True
        if self.partner_from is None:
            self.partner_from = index
        return self._needs_partner() and index < self.partner_from + PARTNER_RUNS

    def _needs_partner(self) -> bool:
        return any(k.kept is not None and k.partner is None for k in self.report.kinds.values())

    def _merge(self, run: RunSummary) -> None:
        rep = self.report
        if run.abandoned:
            return
        rep.runs += 1
        rep.converted += run.converted
        rep.schedules.add(run.schedule)
        rep.by_seed[run.index] = run
        self.steps.append(run.steps)
        if run.kind is None:
            if self.spec.opts.auto_timeout is not None:  # detrec's per-run timeout learns from passes
                self.spec.opts.auto_timeout.passed(run.seconds)
            self.last_pass = run
            for k in rep.kinds.values():
                if k.kept is not None and k.partner is None:
                    self._partner(k)
            return
        rep.failed += 1
        if rep.first_failure_at is None:
            rep.first_failure_at = rep.runs
        k = rep.kinds.setdefault(run.kind, KindStats())
        k.runs += 1
        if self.stop_at_first and self.stopped:  # only the failure that stopped the hunt is kept
            k.first = k.first or run
            self.engine.discard(run)
            return
        if k.first is not None and run.index > k.first.index:
            self.engine.discard(run)
            return
        k.first = run
        if self.stop_at_first:
            self.stopped = True
            self.engine.cancel()  # the runs under way are not needed
        k.kept = self.keep(run.kind)[0]
        self.report.converted += self.engine.fetch(run, k.kept)
        if self.last_pass is not None and k.partner is None:
            self._partner(k)

    def _partner(self, k: KindStats) -> None:
        assert k.first is not None and k.first.kind is not None and self.last_pass is not None
        dest = self.keep(k.first.kind)[1]
        self.report.converted += self.engine.fetch(self.last_pass, dest)
        k.partner = dest
        with Trace(dest) as tr:
            seed = tr.meta.get("chaos_seed")
        k.partner_seed = int(seed) if seed else None


# --- reporting -------------------------------------------------------------

def summary_lines(rep: HuntReport, strict: bool) -> list[str]:
    """Where the hunt has been, in a few lines."""
    kinds = sorted(rep.kinds.items(), key=lambda kv: (-kv[1].runs, kv[0]))
    head = (f"{rep.runs} run(s) in {rep.seconds:.1f} s ({rep.rate:.1f} runs/s), {rep.failed} failed"
            f"{' in ' + str(len(kinds)) + ' kind(s)' if kinds else ''}; {len(rep.schedules)} distinct schedule(s)")
    if strict and rep.pct_k is not None:
        head += f"; PCT k = {rep.pct_k}"
    lines = [head]
    for name, k in kinds:
        first = k.first
        where = f"first at seed {first.seed}" if first and first.seed else f"first in run {first.index + 1}" \
            if first else ""
        lines.append(f"  {k.runs:5d} x {name} ({where})")
        if first and first.detail and first.detail not in name:
            lines.append(f"          | {first.detail}")
        if k.kept:
            partner = f", passing run: {k.partner}" if k.partner else ", no passing run found"
            lines.append(f"          kept: {k.kept}{partner}")
    return lines


def slug(kind: str) -> str:
    """A file name for a failure kind."""
    s = re.sub(r"[^A-Za-z0-9]+", "-", kind).strip("-").lower()
    return s[:60] or "failure"


def say(msg: str) -> None:
    print(f"dethunt: {msg}", file=sys.stderr, flush=True)


def tty_progress(prefix: str, total: int) -> Callable[[HuntReport, bool], None]:
    tty = sys.stderr.isatty()

    def show(rep: HuntReport, final: bool) -> None:
        if not tty:
            return
        sys.stderr.write(f"\r{prefix}: run {rep.runs}/{total}, {rep.failed} failed, {len(rep.schedules)} schedules, "
                         f"{rep.rate:.1f} runs/s" + ("\n" if final else ""))
        sys.stderr.flush()

    return show


def write_summary(rep: HuntReport, spec: RunSpec, path: Path) -> None:
    """DIR/summary.json: the hunt's figures, and every run by seed."""
    runs = [dict(asdict(r), path=None, host=None) for _, r in sorted(rep.by_seed.items())]
    doc = {
        "argv": spec.argv,
        "strict": spec.opts.strict,
        "first_seed": spec.opts.seed,
        "pct_depth": spec.opts.pct_depth if spec.opts.strict else None,
        "runs": rep.runs,
        "failed": rep.failed,
        "seconds": round(rep.seconds, 3),
        "runs_per_s": round(rep.rate, 2),
        "distinct_schedules": len(rep.schedules),
        "traces_converted": rep.converted,
        "kinds": {name: {"runs": k.runs, "first_seed": k.first.seed if k.first else None,
                         "trace": str(k.kept) if k.kept else None,
                         "passing": str(k.partner) if k.partner else None,
                         "passing_seed": k.partner_seed}
                  for name, k in sorted(rep.kinds.items())},
        "by_seed": runs,
        "host": socket.gethostname(),
    }
    fd = os.open(path, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


# --- the dethunt command ---------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dethunt",
        description="Run a program under many chaos schedules (seeds S, S+1, ...); report failures by kind and "
                    "keep the first failing trace of each kind with a passing run next to it.",
        epilog="Exit status: 0 when no run failed, 1 when some did, 130 when interrupted, 2 for bad usage. "
               "docs/hunting.md has sessions.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s (det) {__version__}")
    p.add_argument("-o", "--output", metavar="DIR",
                   help="where kept traces go (default: PROGRAM.hunt); a directory holding anything but det traces "
                        "and a hunt's summary is refused").complete = "dir"
    p.add_argument("--runs", type=int, default=DEFAULT_RUNS, metavar="N", help=f"runs (default {DEFAULT_RUNS})")
    p.add_argument("-j", "--jobs", type=int, default=1, metavar="J", help="runs at once on this machine")
    p.add_argument("--seed", type=int, metavar="S", help="first seed (default: a random one)")
    p.add_argument("--strict", action="store_true", help="one thread at a time, PCT priorities (default: threads "
                                                         "in parallel with seeded delays)")
    p.add_argument("--depth", type=int, default=3, metavar="D", help="--strict: PCT's bug depth (default 3)")
    p.add_argument("--pct-k", type=int, metavar="K",
                   help="--strict: the expected number of steps (events; det-cc memory points for a program built "
                        "with --sched-points=memory) (default: learned from the runs so far)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="S",
                   help=f"stop a run after S seconds: a timeout, or a deadlock (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--stop-at-first", action="store_true", help="start no run after the first failure")
    p.add_argument("--cluster", metavar="ADDRESS",
                   help="run on a Dask cluster: its scheduler's address (tcp://HOST:PORT)")
    p.add_argument("--cluster-file", metavar="FILE",
                   help="run on a Dask cluster: its scheduler file").complete = "file"
    p.add_argument("-q", "--quiet", action="store_true", help="only the summary")
    p.add_argument("program", help="the program to run").complete = "command"
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return p


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = build_parser()
    ns = p.parse_args(argv)
    if ns.runs < 1 or ns.jobs < 1:
        p.error("--runs and -j need positive numbers")
    if ns.seed is not None and ns.seed < 1:
        p.error("--seed must be a positive number")
    if not 1 <= ns.depth <= 9:
        p.error("--depth must be between 1 and 9")
    if ns.pct_k is not None and ns.pct_k < 1:
        p.error("--pct-k needs a positive number of steps")
    if ns.timeout <= 0:
        p.error("--timeout needs a positive number of seconds")
    if ns.cluster and ns.cluster_file:
        p.error("use --cluster or --cluster-file, not both")
    return ns


def make_spec(exe: str, argv: list[str], opts: Options) -> RunSpec:
    return RunSpec(exe, sha256_file(exe), argv, opts)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        ns = parse_args(argv)
        exe = resolve_program(ns.program)
        prog_argv = [ns.program] + ns.args
        out = Path(ns.output) if ns.output else Path(f"{os.path.basename(ns.program)}.hunt")
        with TraceLock(out, "dethunt"):  # one hunt per directory
            return _start(ns, exe, prog_argv, out)
    except DetError as e:
        say(str(e))
        return e.status
    except KeyboardInterrupt:
        say("interrupted")
        return 130


def _start(ns: argparse.Namespace, exe: str, prog_argv: list[str], out: Path) -> int:
    """Check and prepare the output directory (its lock held), then hunt."""
    runs = out / ".runs"  # LocalEngine's runs in progress: a killed dethunt's watchdog removes them,
    if runs.is_dir() and not runs.is_symlink():  # unless it was killed too
        check_output_dir(runs, "runs in progress", ("run-",))
        shutil.rmtree(runs)
    check_output_dir(out, "hunt's traces", ("summary.json",))  # before any run
    out.mkdir(exist_ok=True)
    opts = Options(timeout=ns.timeout, forward=False, stdin=stdin_source(), strict=ns.strict,
                   seed=ns.seed or random.randrange(1, 2**31), pct_depth=ns.depth, pct_k=ns.pct_k or PCT_K,
                   env=dict(os.environ), cwd=os.getcwd())
    if opts.stdin and opts.stdin["kind"] == "pipe":
        opts.stdin_bytes = list(read_own_stdin())
    spec = make_spec(exe, prog_argv, opts)
    INTERRUPT.install()
    # Before any thread: whatever ends dethunt, no process of a run outlives it.
    with watched(runs):
        return _hunt(ns, spec, out, prog_argv)


def _hunt(ns: argparse.Namespace, spec: RunSpec, out: Path, prog_argv: list[str]) -> int:
    """The hunt itself, once its options and output directory are checked."""
    opts = spec.opts
    if ns.cluster or ns.cluster_file:
        from .cluster import DaskEngine

        engine: Engine = DaskEngine(ns.cluster, ns.cluster_file)
        where = f"{engine.slots // 2} worker thread(s) of {engine.describe()}"
    else:
        engine = LocalEngine(ns.jobs, out / ".runs")  # (main's `runs`)
        where = f"{ns.jobs} at a time on this machine"
    mode = f"PCT (--strict), depth {ns.depth}" if ns.strict else "seeded delays (threads in parallel)"
    if not ns.quiet:
        say(f"{ns.runs} runs of {' '.join(prog_argv)}: {mode}, seeds {opts.seed}..{opts.seed + ns.runs - 1}, "
            f"{where}")

    def keep(kind: str) -> tuple[Path, Path]:
        name = slug(kind)
        return out / f"{name}.db", out / f"{name}-pass.db"

    hunt = Hunt(spec, ns.runs, engine, keep, stop_at_first=ns.stop_at_first, learn_k=ns.pct_k is None,
                progress=None if ns.quiet else tty_progress("dethunt", ns.runs))
    rep = hunt.run()
    write_summary(rep, spec, out / "summary.json")
    for line in summary_lines(rep, ns.strict):
        say(line)
    for name, k in sorted(rep.kinds.items()):
        if k.kept and k.partner:
            say(f"{name}: detdiff {k.partner} {k.kept}")
    if rep.kinds and not ns.quiet:
        first = min((k.first for k in rep.kinds.values() if k.first), key=lambda r: r.seed)
        run_opts = opts.for_seed(first.seed, first.pct_k)
        say(f"repeat seed {first.seed}: detrec {run_opts.repeat_flags()} -- {' '.join(prog_argv)}")
    say(f"summary in {out / 'summary.json'}")
    if rep.interrupted:
        say(f"interrupted after {rep.runs} run(s)")
        return 130
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
