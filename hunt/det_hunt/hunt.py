"""det.hunt.hunt: run a program under many chaos schedules, and say where the
hunt has been: runs, failures by kind, distinct schedules, runs per second.
The first failing trace of each kind is kept with a passing run next to it,
for detdiff.

Rules of this module:
 - It is det's one loop for running a program many times: dethunt, and
   detrec's --until-fail and --chaos --runs (a hunt that stops at its first
   failure) use it (det.record.huntcli, det.record.cli).
 - Run i of a hunt from seed S takes seed S+i. Under PCT (--strict) its k is
   the median step count (events; det-cc memory points for a program built
   with them) of the runs that had finished when it started
   (unless --pct-k fixes it); the trace stores it, and the command printed to
   repeat a run names it.
 - Results are merged by seed, whatever order runs finish in: the trace kept
   for a kind is that of its lowest seed.
 - It records nothing itself: how one seed is run, a kept run fetched and
   another dropped (Runs) is handed in by the caller (det.record.seeds,
   which says how runs wait as capture logs until kept). An engine says
   where runs happen: LocalEngine here, det.hunt.cluster's DaskEngine on a
   cluster; this module never imports that one (the command chooses).
"""

from __future__ import annotations

import concurrent.futures
import functools
import json
import os
import shutil
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from det.errors import DetError
from det.trace import Trace
from det.tracefile import WORK_SUFFIX, private_dir
from det.trust import sha256_file

DEFAULT_RUNS = 100
DEFAULT_TIMEOUT = 10.0
PARTNER_RUNS = 20  # at most this many more runs to find a passing partner, within the hunt's runs
LAST_PASS = "last-pass.db"  # a run's name for the last passing run of its scratch directory


@dataclass
class RunSpec:
    """What every run of a hunt needs (sent to cluster workers as it is)."""

    exe: str
    exe_sha256: str
    argv: list[str]
    opts: Any  # det.record's Options; opts.seed: the hunt's first seed (0: plain reruns, no chaos)


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


@dataclass(frozen=True)
class Runs:
    """How a hunt's runs are recorded, fetched and dropped, handed in by
    whoever hunts (det.record.seeds): module-level functions, so that a
    cluster's workers get them by name."""

    run: Callable[..., RunSummary]  # (spec, index, pct_k, scratch, stop): record run `index` into scratch/
    use_kept: Callable[..., tuple[Any, bool]]  # (path, use): use(trace) of a kept run, and converted now?
    drop: Callable[[str | os.PathLike[str]], None]  # a run the hunt does not keep
    drop_all: Callable[[Path], None]  # every run still waiting under scratch/


class Engine(Protocol):
    """Where runs happen: this machine (LocalEngine) or a cluster (det.hunt.cluster)."""

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

    def __init__(self, jobs: int, scratch: Path, runs: Runs) -> None:
        self.slots = jobs
        self.runs = runs
        self.scratch = private_dir(scratch, "runs in progress")
        for stale in (*scratch.glob("run-*"), *scratch.glob("last-pass.db*")):  # left by a hunt that was killed
            stale.unlink(missing_ok=True)
        for stale in scratch.glob(".*" + WORK_SUFFIX):
            shutil.rmtree(stale, ignore_errors=True)
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs) if jobs > 1 else None
        self.stop = threading.Event()

    def submit(self, spec: RunSpec, index: int, pct_k: int) -> Any:
        if self.pool is None:
            return functools.partial(self.runs.run, spec, index, pct_k, self.scratch, self.stop)  # run by wait()
        return self.pool.submit(self.runs.run, spec, index, pct_k, self.scratch, self.stop)

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
            _, converted = self.runs.use_kept(run.path, lambda path: shutil.copyfile(path, dest))
            os.chmod(dest, 0o600)
        else:
            _, converted = self.runs.use_kept(run.path, lambda path: os.replace(path, dest))
        return converted

    def discard(self, run: RunSummary) -> None:
        if Path(run.path).name != LAST_PASS:
            self.runs.drop(run.path)

    def cancel(self) -> None:
        self.stop.set()
        self.stop = threading.Event()  # for runs submitted from now on

    def close(self) -> None:
        self.stop.set()
        if self.pool is not None:
            self.pool.shutdown(wait=True)
        self.runs.drop_all(self.scratch)
        shutil.rmtree(self.scratch, ignore_errors=True)


@dataclass
class KindStats:
    runs: int = 0
    first: RunSummary | None = None  # its run with the lowest seed
    kept: Path | None = None         # where that run's trace is kept (stop_at_first: the first one's)
    partner: Path | None = None
    partner_seed: int | None = None
    verified: bool | None = None     # did a replay reproduce the kept trace's failure (None: not checked)


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
    stages: list[str] = field(default_factory=list)  # the modes runs were started in (escalation), in order
    found_by: str | None = None        # the mode of the stage whose run failed first
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
    where the last passing run goes when no run failed. wanted: only a
    failure of that kind is kept and stops the hunt (another is counted and
    dropped): a failure re-recorded in strict mode (det.record.verifykept).
    partner_runs: how many more runs may look for a passing partner (never
    more than `runs` in all); partner_spec: how they run for a default-mode
    failure (else as the stage that failed). stages: an escalation (det.hunt.escalate):
    (mode, spec, runs) in order, their runs summing to `runs`; runs start
    in the next stage once every run of the stage before has ended without
    a failure, and a stage in which a run failed takes the runs left."""

    def __init__(self, spec: RunSpec, runs: int, engine: Engine, keep: Callable[[str], tuple[Path, Path]], *,
                 stop_at_first: bool = False, learn_k: bool = True, keep_pass: Path | None = None,
                 wanted: str | None = None, partner_runs: int = PARTNER_RUNS,
                 progress: Callable[[HuntReport, bool], None] | None = None,
                 interrupted: Callable[[], bool] = lambda: False,
                 stages: list[tuple[str, RunSpec, int]] | None = None,
                 partner_spec: RunSpec | None = None) -> None:
        self.spec = spec
        self.stages = stages or [("", spec, runs)]
        self.stage = 0  # the stage runs start in
        self.stage_end = self.stages[0][2] if stages else runs  # its runs end before this index
        self.stage_of: dict[int, int] = {}  # run index -> its stage
        self.partner_spec = partner_spec
        self.run_spec: dict[int, RunSpec] = {}  # run index -> the spec it was started with
        self.runs = runs
        self.engine = engine
        self.keep = keep
        self.stop_at_first = stop_at_first
        self.learn_k = learn_k and any(st.opts.pct for _, st, _ in self.stages)
        self.keep_pass = keep_pass
        self.wanted = wanted
        self.partner_runs = partner_runs
        self.progress = progress or (lambda rep, final: None)
        self.interrupted = interrupted  # Ctrl-C or another stopping signal came (det.record's INTERRUPT)
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

    def spec_of(self, index: int) -> RunSpec:
        """The spec run `index` was started with (its stage's, or a partner's)."""
        return self.run_spec.get(index) or self.stages[self.stage_of.get(index, self.stage)][1]

    def _spec_for(self, index: int) -> RunSpec:
        """The spec to start run `index` with: its stage's; a run started
        only to find a passing partner for a default-mode failure takes
        partner_spec (plain reruns: chaos that made every run fail would
        seldom let one pass), for a strict one its stage's (a partner in
        the same mode)."""
        spec = self.stages[self.stage][1]
        if self.partner_from is None or index < self.partner_from or self.partner_spec is None:
            return spec
        failing = [k.first for k in self.report.kinds.values() if k.kept is not None and k.first is not None]
        return spec if any(self.spec_of(r.index).opts.strict for r in failing) else self.partner_spec

    def _escalate(self, index: int, pending: dict[Any, int]) -> bool:
        """May run `index` start, as far as the stages go? At the end of a
        stage: once its runs have ended, in the same stage if one failed
        (the runs left are its), else in the next."""
        if index < self.stage_end or self.stage + 1 >= len(self.stages):
            return True
        if any(i < self.stage_end for i in pending.values()):
            return False  # (wait: one of them may fail yet)
        if self.report.failed:
            self.stage_end = self.runs
        else:
            self.stage += 1
            self.stage_end += self.stages[self.stage][2]
        return True

    def run(self) -> HuntReport:
        rep = self.report
        t0 = time.monotonic()
        pending: dict[Any, int] = {}
        index = 0
        try:
            while True:
                if self.interrupted() and not rep.interrupted:
                    rep.interrupted = True
                    self.engine.cancel()
                while len(pending) < self.engine.slots and self._escalate(index, pending) and self._may_start(index):
                    self.stage_of[index] = self.stage
                    self.run_spec[index] = self._spec_for(index)
                    mode = self.stages[self.stage][0]
                    if mode and mode not in rep.stages and self.run_spec[index] is self.stages[self.stage][1]:
                        rep.stages.append(mode)
                    pending[self.engine.submit(self.run_spec[index], index, self.pct_k())] = index
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
        rep.pct_k = self.pct_k() if any(self.spec_of(i).opts.pct for i in self.stage_of) else None
        return rep

    def _may_start(self, index: int) -> bool:
        if self.report.interrupted:
            return False
        if not self.stopped and index < self.runs:
            return True
        if self.partner_from is None:
            self.partner_from = index
        # (within the hunt's runs: a failure near its end may go without a partner)
        return self._needs_partner() and index < min(self.partner_from + self.partner_runs, self.runs)

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
        first = min((k.first.index for k in rep.kinds.values() if k.first), default=run.index)
        if run.index <= first:
            rep.found_by = self.stages[self.stage_of.get(run.index, 0)][0] or None
        k = rep.kinds.setdefault(run.kind, KindStats())
        k.runs += 1
        if self.wanted is not None and run.kind != self.wanted:
            self.engine.discard(run)
            return
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
        "stages": rep.stages,      # an escalating hunt's modes, in the order its runs used them
        "found_by": rep.found_by,  # the mode whose run failed first
        "traces_converted": rep.converted,
        "kinds": {name: {"runs": k.runs, "first_seed": k.first.seed if k.first else None,
                         "trace": str(k.kept) if k.kept else None,
                         "passing": str(k.partner) if k.partner else None,
                         "passing_seed": k.partner_seed, "verified": k.verified}
                  for name, k in sorted(rep.kinds.items())},
        "by_seed": runs,
        "host": socket.gethostname(),
    }
    fd = os.open(path, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def make_spec(exe: str, argv: list[str], opts: Any) -> RunSpec:
    return RunSpec(exe, sha256_file(exe), argv, opts)
