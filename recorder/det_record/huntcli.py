"""dethunt: run a program under many chaos schedules, and say where the hunt
has been: runs, failures by kind, distinct schedules, runs per second. The
first failing trace of each kind is kept with a passing run next to it, for
detdiff. By default the hunt escalates (det.hunt.escalate): parallel chaos,
then PCT, and says which found the failure, or what to try next.

    dethunt [options] [--] PROGRAM [ARGS...]

Rules of this module: the command line only; the hunt is det.hunt's, each
run det.record.seeds'. It chooses where runs happen (LocalEngine, or
DaskEngine with --cluster) and hands the engine the run functions.
Exit status: 0 if no run failed, 1 if some did, 130 when interrupted, 2 for
bad usage.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from det import __version__
from det.errors import DetError
from det.hunt.escalate import describe, next_step, plan
from det.hunt.hunt import (
    DEFAULT_RUNS,
    DEFAULT_TIMEOUT,
    Engine,
    Hunt,
    LocalEngine,
    RunSpec,
    make_spec,
    summary_lines,
    tty_progress,
    write_summary,
)
from det.launch import read_own_stdin, resolve_program, stdin_source
from det.outpath import check_output_dir
from det.tracefile import TraceLock
from det.verdict import Verifier
from det.watchdog import watched

from .atomics import patched_env
from .engine import INTERRUPT, PCT_K, Options
from .seeds import RUNS
from .verifykept import check_kept

# --- the dethunt command ---------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dethunt",
        description="Run a program under many chaos schedules (seeds S, S+1, ...); report failures by kind and "
                    "keep the first failing trace of each kind with a passing run next to it.",
        epilog="A failure's trace is kept once a replay reproduces it: a default-mode trace that does not is "
               "recorded again in strict mode (PCT seeds from the failing run's), else kept marked unverified "
               "(`detrec info` says so). Exit status: 0 when no run failed, 1 when some did, 130 when interrupted, "
               "2 for bad usage. docs/hunting.md has sessions.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s (det) {__version__}")
    p.add_argument("-o", "--output", metavar="DIR",
                   help="where kept traces go (default: PROGRAM.hunt); a directory holding anything but det traces "
                        "and a hunt's summary is refused").complete = "dir"
    p.add_argument("--runs", type=int, default=DEFAULT_RUNS, metavar="N", help=f"runs (default {DEFAULT_RUNS})")
    p.add_argument("-j", "--jobs", type=int, default=1, metavar="J", help="runs at once on this machine")
    p.add_argument("--seed", type=int, metavar="S", help="first seed (default: a random one)")
    p.add_argument("--mode", choices=["escalate", "chaos", "pct"], default=None,
                   help="escalate (the default): parallel chaos for a quarter of the runs, then PCT for the rest "
                        "once no run failed; chaos: threads in parallel with seeded delays; pct: --strict")
    p.add_argument("--strict", action="store_true", help="one thread at a time, PCT priorities (--mode pct)")
    p.add_argument("--depth", type=int, default=3, metavar="D", help="--strict: PCT's bug depth (default 3)")
    p.add_argument("--pct-k", type=int, metavar="K",
                   help="--strict: the expected number of steps (events; det-cc memory points for a program built "
                        "with --sched-points=memory) (default: learned from the runs so far)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="S",
                   help=f"stop a run after S seconds: a timeout, or a deadlock (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--stop-at-first", action="store_true", help="start no run after the first failure")
    p.add_argument("--no-patch-atomics", action="store_true",
                   help="leave the atomic instructions of the program's own code to the CPU (by default each is an "
                        "event, which PCT can schedule and replay orders)")
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
    if ns.strict and ns.mode not in (None, "pct"):
        p.error(f"--strict is --mode pct, not --mode {ns.mode}")
    ns.mode = "pct" if ns.strict else ns.mode or "escalate"
    ns.strict = ns.mode == "pct"
    return ns


def slug(kind: str) -> str:
    """A file name for a failure kind."""
    s = re.sub(r"[^A-Za-z0-9]+", "-", kind).strip("-").lower()
    return s[:60] or "failure"


def say(msg: str) -> None:
    print(f"dethunt: {msg}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None, verify: Verifier | None = None) -> int:
    """dethunt; verify: what replays a kept failure's trace to verify it
    (handed in by the dethunt command, det.replay.verify)."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        ns = parse_args(argv)
        exe = resolve_program(ns.program)
        prog_argv = [ns.program] + ns.args
        out = Path(ns.output) if ns.output else Path(f"{os.path.basename(ns.program)}.hunt")
        with TraceLock(out, "dethunt"):  # one hunt per directory
            return _start(ns, exe, prog_argv, out, verify)
    except DetError as e:
        say(str(e))
        return e.status
    except KeyboardInterrupt:
        say("interrupted")
        return 130


def _start(ns: argparse.Namespace, exe: str, prog_argv: list[str], out: Path, verify: Verifier | None) -> int:
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
    mode = "strict" if ns.strict else "default"
    opts.env = patched_env(exe, ns.program, mode, opts.env, say, opt_out=ns.no_patch_atomics,
                           quiet=ns.quiet) or opts.env
    if opts.stdin and opts.stdin["kind"] == "pipe":
        opts.stdin_bytes = list(read_own_stdin())
    spec = make_spec(exe, prog_argv, opts)
    INTERRUPT.install()
    # Before any thread: whatever ends dethunt, no process of a run outlives it.
    with watched(runs):
        return _hunt(ns, spec, out, prog_argv, verify)


def _hunt(ns: argparse.Namespace, spec: RunSpec, out: Path, prog_argv: list[str], verify: Verifier | None) -> int:
    """The hunt itself, once its options and output directory are checked;
    then each kept failure verified (verifykept: recorded again in strict
    mode when its default-mode trace does not replay it). The hunt's runs
    are spent by then: a failure that does not replay stays, unverified."""
    opts = spec.opts
    if ns.cluster or ns.cluster_file:
        from det.hunt.cluster import DaskEngine

        engine: Engine = DaskEngine(ns.cluster, ns.cluster_file, RUNS)
        where = f"{engine.slots // 2} worker thread(s) of {engine.describe()}"
    else:
        engine = LocalEngine(ns.jobs, out / ".runs", RUNS)  # (main's `runs`)
        where = f"{ns.jobs} at a time on this machine"
    if ns.mode == "escalate":
        stages = [(st.name, replace(spec, opts=replace(opts, strict=st.strict)), st.runs)
                  for st in plan(ns.runs, ns.depth)]
        mode = describe(plan(ns.runs, ns.depth))
    else:
        stages = None
        mode = f"PCT (--strict), depth {ns.depth}" if ns.strict else "seeded delays (threads in parallel)"
    if not ns.quiet:
        say(f"{ns.runs} runs of {' '.join(prog_argv)}: {mode}, seeds {opts.seed}..{opts.seed + ns.runs - 1}, "
            f"{where}")

    def keep(kind: str) -> tuple[Path, Path]:
        name = slug(kind)
        return out / f"{name}.db", out / f"{name}-pass.db"

    hunt = Hunt(spec, ns.runs, engine, keep, stop_at_first=ns.stop_at_first, learn_k=ns.pct_k is None,
                progress=None if ns.quiet else tty_progress("dethunt", ns.runs),
                interrupted=lambda: INTERRUPT.signal is not None, stages=stages)
    rep = hunt.run()
    pct_ran = any(hunt.spec_of(i).opts.pct for i in rep.by_seed)
    repeats: dict[str, str] = {}  # kind -> the flags that repeat its kept run, when recorded again strict
    unverified = []
    for name, k in sorted(rep.kinds.items()):
        if verify is None or k.kept is None or k.first is None or INTERRUPT.signal is not None:
            continue
        kept = check_kept(k.kept, keep(name)[1], name, k.first, hunt.spec_of(k.first.index), verify, out / ".runs",
                          ns.jobs, lambda msg, name=name: say(f"{name}: {msg}"))
        if kept.strict_run is not None:
            run = kept.strict_run
            repeats[name] = kept.strict_opts.for_seed(run.seed, run.pct_k).repeat_flags()
            k.partner = keep(name)[1] if kept.strict_partner else k.partner
        k.verified = kept.verdict.replays
        if not kept.verdict.replays:
            unverified.append(name)
    write_summary(rep, spec, out / "summary.json")
    for line in summary_lines(rep, pct_ran):
        say(line)
    if stages and rep.found_by:
        say(f"found by {rep.found_by}: stage {rep.stages.index(rep.found_by) + 1} of {len(stages)} "
            f"({describe(plan(ns.runs, ns.depth))})")
    for name, k in sorted(rep.kinds.items()):
        if k.kept and k.partner:
            say(f"{name}: detdiff {k.partner} {k.kept}")
        if name in repeats:
            say(f"{name}: repeat it with: detrec {repeats[name]} -- {' '.join(prog_argv)}")
    for name in unverified:
        say(f"{name}: the trace kept does not replay the failure; the hunt's {ns.runs} runs are spent, so it is "
            "kept marked unverified")
    if rep.kinds and not ns.quiet:
        first = min((k.first for k in rep.kinds.values() if k.first), key=lambda r: r.seed)
        if first.kind not in repeats:  # (one recorded again in strict mode: its line is above)
            run_opts = hunt.spec_of(first.index).opts.for_seed(first.seed, first.pct_k)
            say(f"repeat seed {first.seed}: detrec {run_opts.repeat_flags()} -- {' '.join(prog_argv)}")
    if not rep.failed and not rep.interrupted:
        tried = describe(plan(ns.runs, ns.depth)) if stages else mode
        say(next_step(spec.exe, prog_argv, rep.runs, tried, ns.depth, "dethunt",
                      "PCT: --mode pct" if ns.mode == "chaos" else ""))
    say(f"summary in {out / 'summary.json'}")
    if rep.interrupted:
        say(f"interrupted after {rep.runs} run(s)")
        return 130
    return 1 if rep.failed else 0


if __name__ == "__main__":
    sys.exit(main())
