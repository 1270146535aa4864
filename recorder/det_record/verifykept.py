"""det.record.verifykept: a failing run is kept only once its trace has
reproduced the failure in a replay (detrec --until-fail and --runs, dethunt).

Rules of this module:
 - The replay is the verifier handed in by the command's entry point
   (det.replay.verify; det.record never imports det.replay), and its verdict
   is kept in the trace (det.verdict).
 - A default-mode trace that does not replay is recorded again in strict
   mode (which orders races between events too): a hunt for the same kind
   of failure, PCT seeds from the failing run's seed (else a random one), at
   most STRICT_RUNS runs; the first strict trace that fails so and replays
   takes the failing trace's place (and its passing partner's, when one
   passed). What happened is said in one line each.
 - Otherwise the trace stays where it is, marked unverified; the caller
   says whether it hunts on or its runs are spent.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from det.hunt.hunt import Hunt, LocalEngine, RunSpec, RunSummary
from det.verdict import Verdict, Verifier, write_verdict

from .engine import INTERRUPT
from .seeds import RUNS

STRICT_RUNS = 20  # strict runs to reproduce a failure that did not replay


@dataclass
class Kept:
    verdict: Verdict                     # of the trace kept in the end
    strict_run: RunSummary | None = None  # the strict run now kept in its place, if one is
    strict_opts: Any = None               # its hunt's Options (det.record's), to repeat it
    strict_partner: bool = False          # a strict passing run took the partner's place
    strict_runs: int = 0                  # runs recorded in strict mode to reproduce it


def check_kept(trace: Path, partner: Path, kind: str, run: RunSummary, spec: RunSpec, verify: Verifier,
               scratch: Path, jobs: int, note: Callable[[str], None], budget: int | None = None) -> Kept:
    """Verify the kept failing trace (of `run`, recorded with `spec`);
    record the failure again in strict mode when it was a default-mode
    trace that does not replay, in at most STRICT_RUNS runs and at most
    `budget` (the runs left of those asked for)."""
    verdict = verify(trace)
    write_verdict(trace, verdict)
    if verdict.replays:
        note(f"verified: the failing run's trace replays the failure ({kind})")
        return Kept(verdict)
    note(f"the failing run's trace does not replay: {verdict.why}")
    if spec.opts.strict or INTERRUPT.signal is not None:
        return Kept(verdict)
    tries = STRICT_RUNS if budget is None else min(STRICT_RUNS, budget)
    if tries < 1:
        note("no run is left of those asked for to record it again in strict mode; the trace kept is unverified")
        return Kept(verdict)
    strict_seed = run.seed or random.randrange(1, 2**31)
    opts = replace(spec.opts, strict=True, logical=False, seed=strict_seed, forward=False)
    note(f"recording the failure ({kind}) again in strict mode: up to {tries} runs, PCT seeds "
         f"{strict_seed}..{strict_seed + tries - 1}")
    again = trace.with_name(f".{trace.stem}-strict{trace.suffix}")
    again_pass = trace.with_name(f".{trace.stem}-strict-pass{trace.suffix}")
    try:
        hunt = Hunt(replace(spec, opts=opts), tries, LocalEngine(jobs, scratch, RUNS),
                    lambda _kind: (again, again_pass), stop_at_first=True, wanted=kind,
                    partner_runs=0,  # (a passing run on the way is its partner: no runs just for one)
                    interrupted=lambda: INTERRUPT.signal is not None)
        rep = hunt.run()
        k = rep.kinds.get(kind)
        if k is None or k.kept is None:
            note(f"strict mode did not reproduce it in {rep.runs} run(s); the trace kept is unverified")
            return Kept(verdict, strict_runs=rep.runs)
        assert k.first is not None
        strict_verdict = verify(again)
        write_verdict(again, strict_verdict)
        if not strict_verdict.replays:
            note(f"the strict trace (seed {k.first.seed}) does not replay either: {strict_verdict.why}; "
                 "the trace kept is unverified")
            return Kept(verdict, strict_runs=rep.runs)
        os.replace(again, trace)
        partnered = k.partner is not None
        if partnered:
            os.replace(again_pass, partner)
        note(f"verified: recorded again in strict mode (seed {k.first.seed}), its trace replays the failure")
        return Kept(strict_verdict, k.first, opts, partnered, rep.runs)
    finally:
        again.unlink(missing_ok=True)
        again_pass.unlink(missing_ok=True)
