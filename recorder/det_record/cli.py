"""detrec: record a program's synchronization order into a SQLite trace.

    detrec [options] [--] PROGRAM [ARGS...]
    detrec info|dump|ls|rm|salvage|scrub|pack ...

Rules: the command line only; det.record.engine records (every run leaves a
readable trace, whatever happens to the program or to detrec). Exit status:
the program's, as a shell reports it; 124 when --timeout stopped it; 125
when det had to stop it; 2 for bad usage. detrec's other commands are
modules of their own, imported when used (SUBCOMMANDS).
"""

from __future__ import annotations

import argparse
import contextlib
import random
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from det import __version__, tracedir
from det.errors import DetError
from det.launch import describe_status, is_static, output_source, read_own_stdin, resolve_program, stdin_source
from det.outpath import check_output_dir, check_trace_output
from det.tracefile import TraceLock
from det.watchdog import watched

from .atomics import patched_env
from .engine import INTERRUPT, OUTLIVE_S, PCT_K, Options, RunResult, RunTimeout, record_run
from .keep import keep_ran
from .replica import STANDBY_S

if TYPE_CHECKING:  # (annotations only: det.verdict is imported when a trace is verified)
    from det.verdict import Verifier

# Imported when used (each costs every recording's start-up, issue 25): det.check.patch
# (a program with atomics to patch), det.check.quick (.atomics: not with --ptrace or --isolated).

# detrec's other commands: name -> (module, its main, its parser), imported when used
SUBCOMMANDS = {
    "info": ("info", "main", "build_parser"),
    "dump": ("dump", "main", "build_parser"),
    "ls": ("tracels", "ls_main", "ls_parser"),
    "rm": ("tracels", "rm_main", "rm_parser"),
    "salvage": ("salvage", "main", "build_parser"),
    "scrub": ("scrub", "main", "build_parser"),
    "pack": ("pack", "main", "build_parser"),
}


def _subcommand(name: str, part: int):
    import importlib

    module = SUBCOMMANDS[name][0]
    return getattr(importlib.import_module(f".{module}", __package__), SUBCOMMANDS[name][part])


def subcommand_main(name: str):
    return _subcommand(name, 1)


def subcommand_parser(name: str) -> argparse.ArgumentParser:
    """The subcommand's parser (man page and completion generation)."""
    return _subcommand(name, 2)()


def kept(path: Path, ns: argparse.Namespace, status: int) -> int:
    """After a recording: make the trace kept the latest, and pack it if asked."""
    if path.exists():
        tracedir.note_latest(path)
        keep_ran(path, ns.no_keep_libs or ns.pack, ns.quiet)  # (a packed trace carries them)
        if ns.pack:
            from .pack import pack_trace

            pack_trace(path, quiet=ns.quiet)
    return status


def pass_output(out: Path) -> Path:
    """--until-fail: where the last passing run is kept."""
    return out.with_name(out.stem + "-pass" + out.suffix)


def runs_dir(out: Path) -> Path:
    """--until-fail: the work directory of the runs in progress."""
    return out.with_name(f".{out.name}.runs")


def ending_lines(path: Path) -> list[str]:
    """Which thread a kept failure's signal killed, where (det.ending), for
    a hunt's summary (its runs were judged without their traces)."""
    from det.ending import ending
    from det.trace import Trace

    try:
        with Trace(path) as tr:
            o = tr.outcome()
            if o is None or o["status"] != "signaled":
                return []
            end = ending(tr)
            return [end.line] + end.details
    except DetError:
        return []


def check_outputs(out: Path, exe: str, until_fail: bool) -> None:
    """Every file detrec will write, checked before the program starts."""
    check_trace_output(out, [exe], "trace")
    if until_fail:
        check_trace_output(pass_output(out), [exe], "passing trace")
        check_output_dir(runs_dir(out), "runs in progress", ("run",))


def say(msg: str) -> None:
    print(f"detrec: {msg}", file=sys.stderr, flush=True)


def print_result(res: RunResult, quiet: bool) -> None:
    if quiet:
        return
    say(f"{res.message or describe_status(res.returncode)}; {res.events} events; program ran {res.duration:.2f} s, "
        f"trace written in {res.write_s:.2f} s after it; trace saved to {res.path}")
    for line in res.report:
        say("  " + line)


def until_fail(exe: str, argv: list[str], out: Path, opts: Options, runs: int, jobs: int, quiet: bool,
               learn_k: bool = True, verify: Verifier | None = None, escalate: bool = False,
               plain: bool = False) -> int:
    """Rerun until a run fails (a hunt that stops at its first failure, see
    det.hunt); keep it as `out` and a passing run as NAME-pass.db. With a
    chaos seed S, run i uses seed S+i, so every run can be repeated. With a
    verifier, a failure is kept once its trace replays it (verifykept:
    perhaps recorded again in strict mode); else the hunt goes on with the
    runs left, and when none are left the last failure stays, unverified.
    escalate: the runs go through det.hunt.escalate's stages (opts.seed set);
    once one failed, the hunt goes on in its mode."""
    from det.hunt.escalate import describe, next_step, plan
    from det.hunt.hunt import PARTNER_RUNS, Hunt, LocalEngine, make_spec, summary_lines, tty_progress

    from .seeds import RUNS
    from .verifykept import check_kept

    pass_path = pass_output(out)
    opts.forward = False
    if opts.timeout is None:
        opts.auto_timeout = RunTimeout()
    spec = make_spec(exe, argv, opts)
    note = say if not quiet else (lambda _msg: None)
    used = 0  # runs done by the hunts so far (never more than `runs`: a partner's and strict runs included)
    failures = 0  # failed runs among them
    schedules: set[str] = set()
    t0 = time.monotonic()
    failed, failed_opts, failed_at, partner = None, opts, 0, False  # the failure kept at `out`, if any
    stages = [(st.name, replace(spec, opts=replace(opts, strict=st.strict)), st.runs)
              for st in plan(runs, opts.pct_depth)] if escalate else None
    found_by = None
    # a passing partner for a default-mode failure: from plain reruns (the
    # chaos that made it fail may make every run fail)
    partner_spec = (replace(spec, opts=replace(opts, seed=0, strict=False)) if opts.seed and not opts.logical
                    else None)
    while True:
        hunt_spec = replace(spec, opts=opts.for_seed(opts.seed + used)) if used and opts.seed else spec
        # (a passing partner may take half the runs left: the rest may be
        # needed to record the failure again in strict mode, verifykept)
        hunt = Hunt(hunt_spec, runs - used, LocalEngine(jobs, runs_dir(out), RUNS), lambda kind: (out, pass_path),
                    stop_at_first=True, learn_k=learn_k, keep_pass=pass_path,
                    partner_runs=min(PARTNER_RUNS, (runs - used) // 2),
                    progress=None if quiet else tty_progress("detrec", runs),
                    interrupted=lambda: INTERRUPT.signal is not None, stages=stages if not used else None,
                    partner_spec=partner_spec)
        rep = hunt.run()
        kind = next((name for name, k in rep.kinds.items() if k.kept is not None), None)
        if kind is not None:
            first = rep.kinds[kind].first
            assert first is not None
            if not used:  # (hunting on after it, if it does not replay: in the mode that found it)
                found_by, spec = rep.found_by, hunt.spec_of(first.index)
                hunt_spec, opts = spec, spec.opts
            failed, failed_opts = first, opts
            failed_at, partner = used + (rep.first_failure_at or 0), rep.kinds[kind].partner is not None
        used += rep.runs
        failures += rep.failed
        schedules |= rep.schedules
        if kind is None or verify is None:
            break
        kept = check_kept(out, pass_path, kind, failed, hunt_spec, verify, runs_dir(out), jobs,
                          note, budget=runs - used)
        used += kept.strict_runs  # (they count: N runs in all)
        if kept.strict_run is not None:
            failed, failed_opts = kept.strict_run, kept.strict_opts
            partner = partner or kept.strict_partner
        if kept.verdict.replays or rep.interrupted or INTERRUPT.signal is not None:
            break
        if used >= runs:
            say(f"no failure that replays in {runs} run(s): the last one's trace, {out}, is kept marked unverified")
            break
        note(f"hunting on for a failure whose trace replays: {runs - used} run(s) left")
    if not quiet:  # (the figures of every run, the last hunt's and those before it)
        total = replace(rep, runs=used, failed=failures, seconds=time.monotonic() - t0, schedules=schedules)
        for line in summary_lines(total, opts.strict)[:1]:
            say(line)
        if stages and found_by:
            say(f"found by {found_by}: stage {[name for name, _, _ in stages].index(found_by) + 1} of "
                f"{len(stages)} ({describe(plan(runs, opts.pct_depth))})")
    if failed is not None:
        what, msg = "failure", failed.message or failed.kind
        if failed.hung:
            what, msg = "hung run", msg.removeprefix("hung: ")
        after = f" ({used} in all)" if used != failed_at else ""
        # (the search for a passing partner stays within the runs asked for)
        no_pass = (f"; no run passed within the {runs} run(s) asked for"
                   if min(runs // 2, runs - failed_at) < PARTNER_RUNS else "; no run passed")
        note(f"{what} after {failed_at} run(s){after}: {msg}; trace saved to {out}"
             + (f", a passing run to {pass_path}" if partner else no_pass))
        for line in failed.report or ending_lines(out):
            note("  " + line)
        for line in failed.tail:
            note("  | " + line)
        note(f"replay it with: detreplay {out}")
        if failed.seed:
            note(f"record it again with: detrec {failed_opts.for_seed(failed.seed, failed.pct_k).repeat_flags()} "
                 f"-o {out} -- " + " ".join(shlex.quote(a) for a in argv))
        return failed.exit_status
    if rep.interrupted:
        if not quiet:
            say(f"interrupted after {used} run(s), none failed")
        return 130
    if not quiet:
        say(f"the last passing trace is {pass_path}")
        tried = (describe(plan(runs, opts.pct_depth)) if stages else "plain reruns" if plain
                 else "logical time" if opts.logical else f"PCT depth {opts.pct_depth}" if opts.strict
                 else "parallel chaos")
        stronger = ("escalating hunts (parallel chaos, then PCT): drop --mode plain" if plain
                    else "PCT: --mode pct" if not stages and opts.seed and not opts.strict else "")
        say(next_step(exe, argv, used, tried, opts.pct_depth, "detrec", stronger))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="detrec",
        usage="detrec [options] [--] PROGRAM [ARGS...]\n       detrec {" + ",".join(SUBCOMMANDS) + "} ...",
        description="Record a multithreaded program's synchronization order into a SQLite trace.",
        epilog="Commands: `detrec info TRACE` prints what a trace holds and how the run ended; `detrec dump "
               "TRACE` lists its events (--thread, --from/--to, --kind, --json); `detrec ls` lists the traces in the "
               "trace directory and `detrec rm TRACE` removes them; `detrec salvage LOG` turns the capture log "
               "of a killed detrec into a trace (info, detreplay and detdiff do that by themselves); `detrec pack "
               "TRACE` puts into the trace the program, its libraries and the files it read, so that it replays on "
               "another machine; `detrec scrub TRACE -o OUT` copies a trace to share, its environment's values "
               "blanked. To record a program named like a command, write `detrec -- info`. Without -o, traces go "
               "to $DET_TRACE_DIR, else $XDG_DATA_HOME/det/traces, else ~/.local/share/det/traces, as PROGRAM-N.db. "
               "Exit status: the program's (128+N for signal N), 124 when --timeout stopped it, 125 when det "
               "stopped it, 2 for bad usage.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s (det) {__version__}")
    p.add_argument("-o", "--output", metavar="TRACE",
                   help="trace file (default: PROGRAM-N.db in the trace directory); an existing det trace there is "
                        "replaced, any other existing file, directory, device or link is refused").complete = "file"
    p.add_argument("--verify", action="store_true",
                   help="then replay the trace once, as detreplay would, and say \"verified: replays\" or why not "
                        "(the first divergence); a trace that does not replay says so on stderr and in `detrec info`. "
                        "--until-fail and --runs always verify the failure they keep (recording it again in strict "
                        "mode when a default-mode trace does not replay it)")
    p.add_argument("--pack", action="store_true",
                   help="then pack the trace kept (see `detrec pack`), so it replays on another machine")
    p.add_argument("--no-keep-libs", action="store_true",
                   help="do not keep copies of the program, libraries and loader beside the trace (in .det-objects/, "
                        "shared by the traces there; DET_KEEP_LIBS=0 does the same): replay then needs them unchanged")
    p.add_argument("--timeout", type=float, metavar="S",
                   help="stop the program after S seconds, saving the trace and what blocked threads wait for")
    p.add_argument("--outlive", type=float, metavar="S", default=OUTLIVE_S,
                   help="once the program's first process has ended, wait at most S seconds (default "
                        f"{OUTLIVE_S:g}) for the processes it started (a daemon) to end, then stop them")
    p.add_argument("--until-fail", type=int, metavar="N",
                   help="rerun up to N times until a run fails; keep it, and the last passing run as NAME-pass.db. "
                        "By default the runs escalate: parallel chaos for a quarter of them, then PCT (--mode). "
                        "A run whose threads all wait for each other ends at once, a deadlock. Without --timeout, "
                        f"a run that takes {RunTimeout.FACTOR}x as long as the longest passing run (at least "
                        f"{RunTimeout.FLOOR:g} s; {RunTimeout.FIRST:g} s before one passed) is a hung run, a "
                        "failure of its own")
    p.add_argument("-j", "--jobs", type=int, default=1, metavar="J", help="with --until-fail: J recordings at once")
    p.add_argument("--mode", choices=["escalate", "plain", "chaos", "pct"],
                   help="with --until-fail: escalate (the default: parallel chaos, then PCT), plain reruns, chaos "
                        "(--chaos: seeded delays) or pct (--strict: one thread at a time, PCT priorities)")
    p.add_argument("--strict", action="store_true",
                   help="one thread at a time, switching only at events: replays exactly even with data races")
    p.add_argument("--quantum", type=int, default=64, metavar="N",
                   help="--strict: events a thread runs before it offers its turn (default 64)")
    p.add_argument("--logical", action="store_true",
                   help="logical time: threads run in parallel and synchronize in an order fixed by logical clocks "
                        "(deterministic for the same input; --seed picks another order)")
    p.add_argument("--ptrace", action="store_true",
                   help="see the program's system calls at the kernel boundary (seccomp + ptrace) instead of "
                        "preloading libdet.so: for statically linked programs (chosen for them by itself) and raw "
                        "system calls; threads run one at a time, switching at system calls")
    p.add_argument("--isolated", action="store_true",
                   help="threads as processes with private memory, committed in a fixed order at each pthreads "
                        "call (DTHREADS, like detrun --isolated): the trace holds that order and the inputs, and "
                        "replays by running isolated again")
    p.add_argument("--patch-atomics", action="store_true",
                   help="by default the lock-prefixed instructions in the program's own code (not built with det-cc) "
                        "are events, patched at load time: their order is recorded and replayed, strict mode and "
                        "PCT schedule them (~0.5 us each; 6.5 us where one is too short to patch and is trapped). "
                        "This option takes xchg too (gcc's seq_cst stores, whose old value is rarely read), and "
                        "is an error if the instructions cannot be found (capstone missing)")
    p.add_argument("--no-patch-atomics", action="store_true",
                   help="leave the program's own atomic instructions to the CPU: faster where they are many, but "
                        "the order of what they guard is not recorded")
    p.add_argument("--chaos", action="store_true",
                   help="perturb the schedule from a seed: PCT priorities with --strict, seeded delays without")
    p.add_argument("--seed", type=int, metavar="S", help="--chaos: the seed (default: a random one)")
    p.add_argument("--depth", type=int, default=3, metavar="D",
                   help="--chaos --strict: PCT's bug depth, d-1 priority change points per run (default 3)")
    p.add_argument("--pct-k", type=int, metavar="K",
                   help="--chaos --strict: the expected number of steps (events; det-cc memory points for a program "
                        "built with --sched-points=memory), over which change points are drawn "
                        f"(default: learned from the hunt's previous runs; {PCT_K} before the first one ends)")
    p.add_argument("--runs", type=int, metavar="N",
                   help="--chaos: explore up to N runs (seeds S, S+1, ...) until one fails")
    p.add_argument("--follow", action="store_true",
                   help="a live replica: replay the run beside it as it is recorded (detreplay --follow); a "
                        "divergence is said the moment it happens, the replica's lag at the end (and on SIGUSR1)")
    p.add_argument("--follow-max-lag", type=int, default=0, metavar="N",
                   help="with --follow: stop the replica once it is more than N events behind (default: never)")
    p.add_argument("--standby", type=float, nargs="?", const=STANDBY_S, default=None, metavar="SECONDS",
                   help="with --follow: a warm standby: when the program dies (killed, crashed, timed out), the "
                        "replica holds its state at the recording's last event (a crash: at its fault) for "
                        f"`detreplay --follow --gdb` for SECONDS (default {STANDBY_S:g}), then ends")
    p.add_argument("-q", "--quiet", action="store_true", help="no messages from detrec itself")
    p.add_argument("--max-threads", type=int, default=4096, metavar="N", help="threads a run may create (default 4096)")
    p.add_argument("--max-objects", type=int, default=1 << 20, metavar="N",
                   help="synchronization objects alive at once (default 1048576; a destroyed one's room and id "
                        "are taken again, so a program may make any number over its life)")
    p.add_argument("--rings", type=int, default=1024, metavar="N",
                   help="threads alive at once before a new one waits for an event ring (default 1024; each "
                        "ring is 4 MiB of shared memory, used as the thread writes)")
    p.add_argument("program", nargs="?", help="the program to record").complete = "command"
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return p


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = build_parser()
    ns = p.parse_args(argv)
    if ns.program is None:
        p.error("name the program to record: detrec [options] [--] PROGRAM [ARGS...]")
    if ns.until_fail is not None and ns.until_fail < 1:
        p.error("--until-fail needs a positive number of runs")
    if ns.jobs < 1:
        p.error("-j needs a positive number")
    if ns.timeout is not None and not 0 < ns.timeout < float("inf"):
        p.error("--timeout needs a positive number of seconds")
    if not 0 <= ns.outlive < float("inf"):
        p.error("--outlive needs a number of seconds, 0 or more")
    if not 1 <= ns.max_threads <= 65535:
        p.error("--max-threads must be between 1 and 65535")
    if not 1024 <= ns.max_objects <= 1 << 20:
        p.error("--max-objects must be between 1024 and 1048576")
    if not 1 <= ns.rings <= 65535:
        p.error("--rings must be between 1 and 65535")
    if ns.logical and ns.strict:
        p.error("--logical and --strict are two different schedulers: pick one")
    if ns.logical and ns.chaos and ns.seed is None and ns.runs is None:
        p.error("--logical takes --seed S (another deterministic order), not --chaos alone")
    if ns.patch_atomics and ns.no_patch_atomics:
        p.error("--patch-atomics and --no-patch-atomics: pick one")
    if ns.quantum < 1:
        p.error("--quantum needs a positive number of events")
    if not 1 <= ns.depth <= 9:
        p.error("--depth must be between 1 and 9")
    if ns.pct_k is not None and ns.pct_k < 1:
        p.error("--pct-k needs a positive number of steps")
    if ns.mode is not None:
        if not ns.until_fail:
            p.error("--mode goes with --until-fail")
        if ns.chaos or ns.strict or ns.logical:
            p.error("--mode says the schedule itself: not with --chaos, --strict or --logical")
        if ns.mode == "plain" and ns.seed is not None:
            p.error("--mode plain reruns take no --seed")
        ns.chaos, ns.strict = ns.mode in ("chaos", "pct"), ns.mode == "pct"
    elif ns.until_fail and not (ns.chaos or ns.strict or ns.logical or ns.seed is not None):
        ns.mode = "escalate"
    if ns.seed is not None:
        ns.chaos = True
        if ns.seed <= 0:
            p.error("--seed must be a positive number")
    if ns.follow_max_lag and not ns.follow:
        p.error("--follow-max-lag goes with --follow")
    if ns.standby is not None and not ns.follow:
        p.error("--standby goes with --follow")
    if ns.standby is not None and ns.standby <= 0:
        p.error("--standby needs a number of seconds, more than 0")
    if ns.follow_max_lag < 0:
        p.error("--follow-max-lag needs a number of events, 0 or more")
    if ns.follow and (ns.until_fail or ns.runs is not None or ns.logical or ns.strict or ns.chaos):
        p.error("--follow replays one recording in the default mode: not with --until-fail, --runs, --strict, "
                "--logical or --chaos")
    if ns.runs is not None:
        if not ns.chaos:
            p.error("--runs goes with --chaos (for plain reruns, use --until-fail)")
        if ns.runs < 1:
            p.error("--runs needs a positive number of runs")
        if ns.until_fail:
            p.error("use --runs or --until-fail, not both")
    return ns


def main(argv: list[str] | None = None, verify: Verifier | None = None) -> int:
    """detrec; verify: what replays a trace to verify it (handed in by the
    detrec command, det.replay.verify: det.record does not import det.replay)."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        if argv and argv[0] in SUBCOMMANDS:
            return subcommand_main(argv[0])(argv[1:])
        ns = parse_args(argv)
        if ns.verify and verify is None:
            raise DetError("--verify needs the detrec command (det.replay.verify), which can replay", status=2)
        exe = resolve_program(ns.program, static_ok=True)
        prog_argv = [ns.program] + ns.args
        out = Path(ns.output) if ns.output else tracedir.new_trace_path(ns.program)
        check_outputs(out, exe, bool(ns.until_fail or ns.runs))
        if ns.isolated and is_static(exe, ns.program):
            raise DetError(f"{ns.program}: statically linked, so libdetiso.so cannot enter it: --isolated needs a "
                           "dynamically linked program", status=2)
        if not ns.ptrace and not ns.isolated and is_static(exe, ns.program):
            ns.ptrace = True
            if not ns.quiet:
                say(f"{ns.program}: statically linked, so libdet.so cannot enter it: recording with --ptrace "
                    "(its system calls, seen at the kernel boundary)")
        if ns.ptrace and ns.isolated:
            raise DetError("--ptrace and --isolated are two different runtimes: pick one", status=2)
        if ns.ptrace:
            return _record_ptrace(ns, exe, prog_argv, out)
        if ns.isolated:
            return _record_isolated(ns, exe, prog_argv, out)
        mode = "logical" if ns.logical else "strict" if ns.strict else "default"
        opts = Options(timeout=ns.timeout, outlive=ns.outlive, max_threads=ns.max_threads, objects=ns.max_objects,
                       rings=min(ns.rings, ns.max_threads), forward=True, stdin=stdin_source(),
                       outputs=(output_source(1), output_source(2)),
                       strict=ns.strict or ns.logical, logical=ns.logical, quantum=ns.quantum,
                       pct_depth=ns.depth, pct_k=ns.pct_k or PCT_K, follow=ns.follow,
                       follow_max_lag=ns.follow_max_lag, standby=ns.standby or 0.0)
        patched = patched_env(exe, ns.program, mode, None, say, opt_out=ns.no_patch_atomics, asked=ns.patch_atomics,
                              quiet=ns.quiet)
        if patched is not None:
            opts.env = patched
        if ns.chaos or ns.mode == "escalate":
            opts.seed = ns.seed or random.randrange(1, 2**31)
            if ns.runs:
                ns.until_fail = ns.runs
        elif ns.strict and ns.until_fail and not ns.logical:
            # strict scheduling is deterministic: reruns would all take the
            # same schedule, so each run explores with its own PCT seed
            opts.seed = random.randrange(1, 2**31)
        INTERRUPT.install()
        outputs = [out, pass_output(out)] if ns.until_fail else [out]
        with contextlib.ExitStack() as locks:
            for path in outputs:  # one writer per trace name, for the whole recording
                locks.enter_context(TraceLock(path))
            # Before any thread: whatever ends detrec, no process of the program outlives it.
            with watched(runs_dir(out) if ns.until_fail else None, outputs):
                status = _record(ns, exe, prog_argv, out, opts, verify)
        return status
    except DetError as e:
        say(str(e))
        return e.status
    except KeyboardInterrupt:
        say("interrupted")
        return 130


PTRACE_ALONE = ("until_fail", "runs", "chaos", "strict", "logical", "follow", "patch_atomics", "verify", "pack")


def _record_ptrace(ns: argparse.Namespace, exe: str, prog_argv: list[str], out: Path) -> int:
    """detrec --ptrace (det.record.ptrace): one recording, nothing else."""
    from .ptrace import record_ptrace

    taken = [f"--{name.replace('_', '-')}" for name in PTRACE_ALONE if getattr(ns, name, None)]
    if taken:
        raise DetError(f"--ptrace records one run under its own scheduler: not with {', '.join(taken)}", status=2)
    opts = Options(timeout=ns.timeout, forward=True, outputs=(output_source(1), output_source(2)))
    INTERRUPT.install()
    with TraceLock(out), watched(None, [out]):
        res = record_ptrace(exe, prog_argv, out, opts)
    print_result(res, ns.quiet)
    kept(res.path, ns, res.exit_status)
    return res.exit_status


def _record_isolated(ns: argparse.Namespace, exe: str, prog_argv: list[str], out: Path) -> int:
    """detrec --isolated (det.record.isolated): one recording, nothing else."""
    from .isolated import REFUSED, record_isolated

    taken = [f"--{name.replace('_', '-')}" for name in PTRACE_ALONE if getattr(ns, name, None)]
    if taken:
        raise DetError(f"--isolated records one run in its own fixed order: not with {', '.join(taken)}", status=2)
    opts = Options(timeout=ns.timeout, forward=True, stdin=stdin_source(),
                   outputs=(output_source(1), output_source(2)))
    INTERRUPT.install()
    with TraceLock(out), watched(None, [out]):
        res = record_isolated(exe, prog_argv, out, opts)
    if res is None:  # (libdetiso.so said why, in one line)
        return REFUSED
    print_result(res, ns.quiet)
    kept(res.path, ns, res.exit_status)
    return res.exit_status


def _record(ns: argparse.Namespace, exe: str, prog_argv: list[str], out: Path, opts: Options,
            verify: Verifier | None) -> int:
    """The recording itself, once the options and outputs are known; then
    its verification, when asked for (the program's exit status stays
    detrec's: a trace that does not replay is said on stderr and noted in
    the trace)."""
    if ns.until_fail:
        if opts.stdin["kind"] == "pipe":  # every run reads the same input
            opts.stdin_bytes = list(read_own_stdin())
        status = until_fail(exe, prog_argv, out, opts, ns.until_fail, ns.jobs, ns.quiet, learn_k=ns.pct_k is None,
                            verify=verify, escalate=ns.mode == "escalate", plain=ns.mode == "plain")
        return kept(out if out.exists() else pass_output(out), ns, status)
    res = record_run(exe, prog_argv, out, opts)
    print_result(res, ns.quiet)
    if res.follow and not ns.quiet:
        say(res.follow)
    if ns.verify and verify is not None and res.path.exists():
        from det.verdict import write_verdict

        verdict = verify(res.path)
        write_verdict(res.path, verdict)
        if not ns.quiet or not verdict.replays:
            say(verdict.line())
    kept(res.path, ns, res.exit_status)
    if opts.seed and not ns.quiet:
        say(f"seed {opts.seed}: `detrec {opts.repeat_flags()}` repeats this schedule")
    return res.exit_status


if __name__ == "__main__":
    sys.exit(main())
