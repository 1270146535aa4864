"""detreplay: replay a trace, enforcing its schedule.

Rules: see det.replay's docstring. Everything the user sees from detreplay
itself is one `detreplay: ...` line per fact on stderr; the program's own
output goes where it went when recorded.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from det import __version__, tracedir
from det.command_end import end_command
from det.constants import DET_F_STDIN_FED, THREAD_STATES
from det.errors import DetError
from det.launch import (
    EXIT_STOPPED,
    EXIT_TIMEOUT,
    FED_KINDS,
    Program,
    StdinFeed,
    describe_status,
    process_alive,
    shell_status,
)
from det.native import turns_backends
from det.record.salvage import ensure_trace
from det.symbols import Symbolizer
from det.trace import Trace, kind_name
from det.trust import sha256_file
from det.watchdog import watched

from .checks import check_binary, replay_order, say, stops_processes
from .native import Replayer
from .view import PackedView, open_view

if TYPE_CHECKING:
    from det.names import ObjectNames

EXIT_DIVERGED = EXIT_STOPPED
EXIT_INCOMPLETE = EXIT_STOPPED  # the recording has no outcome to compare with
UNFINISHED = "detrec was killed before it wrote the outcome"

@dataclass
class ReplayResult:
    exit_status: int
    events: int
    matched: bool
    lines: list[str] = field(default_factory=list)  # what detreplay says
    diverged: bool = False
    run_s: float = 0.0  # the program's run time, from its start to its end
    said: int = 0  # how many of lines were already said as they came (replay's say_now)


def replay(trace_path: str, relaxed: bool = False, force: bool = False, forward: bool = True,
           stall: float | None = None, trust: bool = False, backend: str = "futex", host_files: bool = False,
           quiet: bool = False, say_now: Callable[[str], None] | None = None) -> ReplayResult:
    """say_now: where a divergence's lines go the moment it is known, before
    detreplay looks for its cause in the trace (those lines are also the
    first ReplayResult.said of its lines)."""
    with Trace(trace_path) as tr:
        mode = tr.meta.get("mode")
    ptrace = mode == "ptrace"
    if mode == "isolated":  # recorded by detrec --isolated: run isolated again (det.replay.isolated)
        from .isolated import replay_isolated

        if relaxed:
            raise DetError("--relaxed: an --isolated trace replays in its one recorded order", status=2)
        status, lines, div = replay_isolated(trace_path, force, trust, forward)
        if div and say_now is not None:
            for line in lines:
                say_now(line)
        return ReplayResult(status, 0, not div, lines, diverged=div, said=len(lines) if div and say_now else 0)
    if ptrace:  # recorded by detrec --ptrace: replayed under its supervisor (det.replay.ptrace)
        from .ptrace import replay_ptrace

        if relaxed:
            raise DetError("--relaxed: a --ptrace trace replays in its one recorded order", status=2)
        status, lines, div = replay_ptrace(trace_path, force, trust, forward)
        if div and say_now is not None:
            for line in lines:
                say_now(line)
        return ReplayResult(status, 0, not div, lines, diverged=div, said=len(lines) if div and say_now else 0)
    with Trace(trace_path) as tr, contextlib.ExitStack() as cleanup:
        view = open_view(tr, host_files)
        if view is not None:
            cleanup.callback(view.close)
        exe = check_binary(tr, force, trust, view, quiet)
        m = tr.meta
        rec = tr.outcome()
        total = tr.event_count()
        if rec is None:
            say(f"warning: {trace_path} is incomplete: {UNFINISHED}; replaying the {total} events it has")
        relaxed, strict = replay_order(m, relaxed, relaxed and stops_processes(tr))
        rep = Replayer(Path(trace_path), tr.complete, relaxed, strict, backend)
        sym = Symbolizer(tr.modules())
        try:
            gaps = recorded_gaps(tr) if stall is not None and not relaxed else None
            return _run(tr, rep, exe, m, rec, total, forward, sym, stall, view, gaps, say_now)
        finally:
            rep.close()


# With --stall S (detdiff --bisect passes it), an ordered replay also stalls
# once it has waited for its next event STALL_FACTOR times as long as the
# recording took for that thread's stretch up to it (at least STALL_FLOOR
# seconds, a margin for a loaded machine): a hybrid order that cannot go on
# is told in about half a second, not in S.
STALL_FLOOR = 0.5
STALL_FACTOR = 20


def recorded_gaps(tr: Trace) -> list[float]:
    """For each event in the recorded order: the seconds its thread spent
    between its previous event (or the event before, for its first) and it."""
    gaps: list[float] = []
    last: dict[int, int] = {}
    prev = 0
    clock: dict[int, int] = {}  # each thread's ts, from its events' deltas
    for tid, dts in tr.q("SELECT tid, dts FROM event_rows ORDER BY seq"):
        ts = clock[tid] = clock.get(tid, 0) + dts
        gaps.append(max(0, ts - last.get(tid, prev)) / 1e9)
        last[tid] = prev = ts
    return gaps


def _run(tr: Trace, rep: Replayer, exe: str, m: dict, rec: dict | None, total: int, forward: bool,
         sym: Symbolizer, stall: float | None, view: PackedView | None,
         gaps: list[float] | None = None, say_now: Callable[[str], None] | None = None) -> ReplayResult:
    duration = (rec or {}).get("duration_ns", 0) / 1e9
    stall_limit = stall if stall is not None else max(10.0, 2 * duration)
    prog = Program(exe, m["argv"], m["env"], m["cwd"], rep.fd, forward, replay_stdin(tr, rep, view),
                   (m.get("stdout"), m.get("stderr")), root=view.root if view is not None else None,
                   shm_pid=view.shm_holder(rep.fd) if view is not None else None)
    prog.region = rep
    last_done, last_change = -1, time.monotonic()
    ended_early = ""  # why detreplay stopped the program itself
    rc = None
    while rc is None:
        rc = prog.wait(0.02)
        if rc is not None:
            break
        if rep.divergence() is not None or rep.failed():
            rc = prog.wait(5)
            if rc is None:
                prog.kill()
                rc = prog.wait()
            break
        now = time.monotonic()
        done = rep.events_done()
        if done != last_done:
            last_done, last_change = done, now
        quiet_for = now - last_change
        if done >= total and (rec is None or rec["status"] not in ("exited", "signaled")):
            # The recording ended with det stopping the program: so does the replay,
            # once every thread has done its recorded events and waits.
            live = [t for t in rep.threads() if THREAD_STATES.get(t.state) in ("running", "starting", "parked")]
            if all(THREAD_STATES.get(t.state) == "parked" for t in live) or quiet_for > 1.0:
                ended_early = "end"
                prog.kill()
                rc = prog.wait()
                break
        limit = stall_limit
        if gaps is not None and 0 < done < len(gaps):  # (not while the program starts)
            limit = min(stall_limit, max(STALL_FLOOR, STALL_FACTOR * gaps[done]))
        if quiet_for > limit:
            ended_early = "stall"
            stalled = rep.threads()
            backend_view = rep.turns_state()
            prog.kill()
            rc = prog.wait()
            break
    if not ended_early:
        # children that outlived the program's first process replay to their end too
        progress = {"done": rep.events_done(), "at": time.monotonic()}

        def give_up() -> bool:
            now, done = time.monotonic(), rep.events_done()
            if done != progress["done"]:
                progress.update(done=done, at=now)
            if done >= total:
                # every event replayed, and the processes left wait past their
                # last one: the recording stopped them there (detrec --outlive)
                pids = [int(p.pid) for p in rep.processes()]
                live = [t for t in rep.threads() if THREAD_STATES.get(t.state) in ("running", "starting", "parked")
                        and t.proc < len(pids) and pids[t.proc] > 0 and process_alive(pids[t.proc])]
                if all(THREAD_STATES.get(t.state) == "parked" for t in live):
                    return True
            return rep.divergence() is not None or rep.failed() is not None or now - progress["at"] > stall_limit

        prog.wait_others(give_up)
    run_s = (prog.ended or time.monotonic()) - prog.started

    def result(*args, **kw) -> ReplayResult:
        return ReplayResult(*args, run_s=run_s, **kw)

    def diverged(lines: list[str], reason: str, what: str = "", seq: int | None = None) -> ReplayResult:
        """The divergence's lines said at once, then the hint, bounded."""
        said = 0
        if say_now is not None:
            for line in lines:
                say_now(line)
            said = len(lines)
        from det.analysis import HINT_SECONDS, race_hint
        from det.check.quick import atomics_unseen, random_line, random_unrecorded

        hint = race_hint(tr, names(), reason, what, seq, HINT_SECONDS, atomics_unseen(exe, m.get("env") or {}))
        if n := random_unrecorded(exe):
            hint = [random_line(os.path.basename(exe), n)] + hint
        return result(EXIT_DIVERGED, done, False, lines + hint, diverged=True, said=said)

    # (det.analysis and det.names are imported only for a replay that did not match: start-up, issue 25)
    @functools.cache
    def names() -> ObjectNames:
        from det.names import ObjectNames

        return ObjectNames(tr, sym)

    # (a process that still holds the program's output, det's process table
    # not listing it, would keep this waiting for the output's end forever)
    stragglers = prog.end_stragglers(1.0)
    if stragglers:
        say(f"warning: killed {len(stragglers)} process(es) of the program that det's process table does not list, "
            f"still running after the others ended (pid {', '.join(map(str, stragglers))})")
    out_info, err_info = prog.outputs()
    done = rep.events_done()
    lines: list[str] = []
    div = rep.divergence()
    failure = rep.failed()
    # A default-mode recording that does not replay like a data race would:
    # race_hint says so, what to do, and who held which lock at the end.
    if div is not None:
        from det.analysis import DIVERGENCE_REASONS, describe_divergence

        lines.append(describe_divergence(names(), div[0], div[1]))
        at = div[0]["seq"] if div[0]["seq"] != 2**64 - 1 else None
        return diverged(lines, DIVERGENCE_REASONS.get(div[0]["reason"], "?"), div[1], at)
    if failure:
        lines.append(f"det stopped the program: {failure}")
        return result(EXIT_STOPPED, done, False, lines, diverged=True)
    if ended_early == "stall":
        lines.append(_stall_text(tr, stalled, done, total, sym))
        if backend_view:
            lines.append(backend_view)
        return diverged(lines, "stall", seq=done)

    # Compare with the recording.
    problems = []
    if rec is not None:
        if ended_early == "end":
            status_txt = f"stopped at the end of the recording ({rec['status']})"
            rec_status = EXIT_TIMEOUT if rec["status"] == "timeout" else _recorded_exit(rec)
            exit_status = rec_status
        else:
            status_txt = describe_status(rc)
            exit_status = shell_status(rc)
            if rec["status"] in ("exited", "signaled") and rc != _recorded_rc(rec):
                problems.append(f"recorded {describe_status(_recorded_rc(rec))}, replay {describe_status(rc)}")
            elif rec["status"] not in ("exited", "signaled"):
                problems.append(f"the recording was stopped ({rec['status']}) but the replay ended: {status_txt}")
        for name, info in (("stdout", out_info), ("stderr", err_info)):
            if info["sha256"] != rec[f"{name}_sha256"]:
                problems.append(f"{name} differs ({info['bytes']} bytes, recorded {rec[f'{name}_bytes']})")
    else:
        # No outcome to compare with: say how the recording ended, and never
        # exit 0 as if a complete recording had been matched.
        if ended_early == "end":
            lines.insert(0, f"replayed all {done} events of the recording, which did not finish ({UNFINISHED}); "
                            "every thread then waited where the recording stopped")
        else:
            lines.insert(0, f"replayed {done} of the {total} events of the recording, which did not finish "
                            f"({UNFINISHED}); the replay then ended: {describe_status(rc)}")
        return result(EXIT_INCOMPLETE, done, False, lines)
    if ended_early == "end":
        from det.analysis import Waiter, block_report

        waiters = [Waiter(int(t.num), int(t.blocked_kind), int(t.blocked_obj), int(t.blocked_ra))
                   for t in rep.threads() if t.blocked_kind and THREAD_STATES.get(t.state) == "parked"]
        if waiters:
            lines.append(block_report(tr, waiters, sym).summary)
    if problems:
        lines.append(f"replayed {done} events, but the outcome differs: " + "; ".join(problems))
        # a race's shape: every event replayed, yet another end (not a program killed half way)
        return diverged(lines, "outcome" if done >= total else "cut")
    # Threads still running when the program ended (exit from main, a crash)
    # may stop before their last recorded events: that is not a divergence.
    count = f"{done} events" if done >= total else f"{done} of {total} events (the rest were cut off by the end)"
    lines.insert(0, f"replayed {count}; outcome matches the recording: {status_txt}")
    return result(exit_status, done, True, lines)


def replay_stdin(tr: Trace, rep: Replayer, view: PackedView | None = None) -> StdinFeed | int | None:
    """The program's stdin as it was recorded (see det.launch.stdin_source)."""
    src = tr.meta.get("stdin") or {"kind": "tty"}
    if src["kind"] in FED_KINDS:
        rep.add_flags(DET_F_STDIN_FED)
        return StdinFeed(tr.stdin_chunks(), None, pty=src["kind"] == "pty")
    if src["kind"] == "file":
        path = view.host_path(src["path"]) if view is not None else src["path"]
        if not os.path.exists(path) or sha256_file(path) != src["sha256"]:
            raise DetError(f"{path}: the file the program read as stdin is gone or changed since recording",
                           status=2)
        fd = os.open(path, os.O_RDONLY)
        os.lseek(fd, int(src.get("offset", 0)), os.SEEK_SET)
        return fd
    return None


def _recorded_rc(rec: dict) -> int:
    return -rec["signal"] if rec["signal"] is not None else rec["exit_code"]


def _recorded_exit(rec: dict) -> int:
    if rec["signal"] is not None:
        return 128 + rec["signal"]
    return rec["exit_code"] if rec["exit_code"] is not None else EXIT_STOPPED


def _stall_text(tr: Trace, threads: list, done: int, total: int, sym: Symbolizer) -> str:
    parts = []
    for t in threads:
        state = THREAD_STATES.get(t.state, "?")
        if state in ("free", "exiting"):
            continue
        if state == "parked" and t.blocked_kind:
            loc = sym.one(int(t.blocked_ra)).short() if t.blocked_ra else "?"
            parts.append(f"T{t.num} did its {t.planned} recorded events and then wanted "
                         f"{kind_name(int(t.blocked_kind))} at {loc}")
        elif t.events < t.planned:
            seq = tr.seq_of(int(t.num), int(t.events))
            nxt = tr.event(seq) if seq is not None else None
            what = f"{kind_name(nxt.kind)}(obj {nxt.obj}) = event {nxt.seq}" if nxt else "?"
            parts.append(f"T{t.num} is stuck before its event {t.events} ({what})")
    return (f"divergence: replay stalled after {done} of {total} events: " + "; ".join(parts)
            if parts else f"divergence: replay stalled after {done} of {total} events")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="detreplay", description="Replay a det trace with its recorded schedule.",
        usage="detreplay [options] [TRACE] [-- GDB ARGS...]",
        epilog="Without TRACE, the latest trace recorded into the trace directory ($DET_TRACE_DIR, else "
               "$XDG_DATA_HOME/det/traces, else ~/.local/share/det/traces) is replayed; TRACE may be a path or a "
               "name listed by `detrec ls`. A packed trace (`detrec pack`) replays with the program, libraries "
               "and files it carries, seen at their recorded paths. Exit status: the program's, as recorded; "
               "125 at a divergence or when det stopped the program; 2 for bad usage.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s (det) {__version__}")
    tracedir.trace_argument(p, "trace", nargs="?", metavar="TRACE", help="the trace (default: the latest recorded)")
    p.add_argument("--relaxed", action="store_true",
                   help="enforce only the order on each object (threads run more in parallel)")
    p.add_argument("--force", action="store_true",
                   help="replay even if the program or a library it loaded changed since recording")
    p.add_argument("--trust", action="store_true",
                   help="replay a trace another user owns (a trace names a program to run; by default only "
                        "your own are run; DET_TRUST=1 does the same)")
    p.add_argument("--backend", default="futex", metavar="NAME",
                   help="how threads wait for their turns: futex (default) or kmod (det's kernel module, "
                        "/dev/detsched: docs/kmod.md)")
    p.add_argument("--host-files", action="store_true",
                   help="use this machine's files, not the ones packed in the trace or kept beside it")
    p.add_argument("-q", "--quiet", action="store_true", help="no messages from detreplay itself")
    p.add_argument("--stall", type=float, metavar="S",
                   help="report a divergence when no event happens for S seconds (default: twice the "
                        f"recorded run time, at least 10 s); with --stall, also when the next event takes "
                        f"{STALL_FACTOR}x as long as in the recording (at least {STALL_FLOOR:g} s)")
    p.add_argument("--gdb", action="store_true",
                   help="replay inside gdb, stopped at the first event, with det's commands (`help det`); "
                        "arguments after -- go to gdb")
    p.add_argument("-g", type=int, metavar="N", dest="goto", help="with --gdb: stop at event N instead (implies --gdb)")
    p.add_argument("--follow", metavar="LOG", nargs="?", const="",
                   help="a live replica: replay the recording being written to the capture log LOG while "
                        "detrec makes it (detrec --follow starts this itself); with --gdb: attach gdb to a "
                        "running replica (detreplay --follow [PID] --gdb; PID: the replica's or its detrec's, "
                        "needed only when several run)")
    p.add_argument("--status", metavar="FILE",
                   help="with --follow: keep the replica's progress and lag in FILE (JSON)")
    p.add_argument("--max-lag", type=int, default=0, metavar="N",
                   help="with --follow: stop the replica when it is more than N events behind (default: never)")
    p.add_argument("--standby", type=float, default=0.0, metavar="SECONDS",
                   help="with --follow LOG: when the program dies, hold its state at the last event for SECONDS "
                        "(detrec --follow --standby passes it)")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    gdb_args = argv[argv.index("--") + 1:] if "--" in argv else []  # --gdb: the rest is gdb's
    argv = argv[:argv.index("--")] if "--" in argv else argv
    p = build_parser()
    ns = p.parse_args(argv)
    if ns.stall is not None and not ns.stall > 0:
        p.error("--stall needs a positive number of seconds")
    if ns.follow is not None and ns.gdb:
        if ns.follow == "" and ns.trace:  # (detreplay --follow --gdb PID: the pid came as TRACE)
            ns.follow, ns.trace = ns.trace, None
        if ns.trace or ns.goto is not None or ns.status is not None or ns.max_lag or ns.standby or ns.relaxed:
            p.error("--follow --gdb attaches gdb to a running replica: no TRACE, -g, --status, --max-lag, "
                    "--standby or --relaxed")
        from .follow_gdb import attach_gdb

        try:
            return attach_gdb(ns.follow, gdb_args)
        except DetError as e:
            say(str(e))
            return e.status
    if ns.follow is not None:
        if not ns.follow:
            p.error("--follow needs the capture log (LOG) to replay, or --gdb to attach to a running replica")
        if ns.trace or ns.goto is not None or gdb_args:
            p.error("--follow replays the log being written: no TRACE, no -g")
        if ns.standby < 0:
            p.error("--standby needs a number of seconds, 0 or more")
        if ns.max_lag < 0:
            p.error("--max-lag needs a number of events, 0 or more")
        from .follow import follow

        with watched():
            try:
                return follow(Path(ns.follow), Path(ns.status) if ns.status else None, relaxed=ns.relaxed,
                              max_lag=ns.max_lag, quiet=ns.quiet, standby=ns.standby)
            except DetError as e:
                say(str(e))
                return e.status
            except KeyboardInterrupt:
                return 130
    elif ns.status is not None or ns.max_lag or ns.standby:
        p.error("--status, --max-lag and --standby go with --follow")
    try:
        if ns.trace:
            ns.trace = str(ensure_trace(tracedir.resolve(ns.trace), quiet=ns.quiet, trust=ns.trust))
        else:
            ns.trace = str(tracedir.latest())
            if not ns.quiet:
                say(f"replaying the latest trace, {ns.trace}")
    except DetError as e:
        say(str(e))
        return e.status
    try:
        backends = turns_backends()
    except DetError as e:
        say(str(e))
        return e.status
    if ns.backend not in backends:
        p.error(f"--backend: no backend named {ns.backend!r} (there are: {', '.join(backends)})")
    if (ns.gdb or gdb_args) and not (ns.gdb or ns.goto is not None):
        p.error("arguments after -- are gdb's: add --gdb")
    if (ns.gdb or ns.goto is not None) and ns.backend != "futex":
        p.error(f"--gdb replays with the futex backend only (not {ns.backend})")
    # Before any thread: no process of the program outlives detreplay, even killed.
    with watched():
        return _replay_main(ns, gdb_args)


def _replay_main(ns: argparse.Namespace, gdb_args: list[str]) -> int:
    if ns.gdb or ns.goto is not None or gdb_args:
        from .gdb import run_gdb

        try:
            with Trace(ns.trace) as tr:
                if tr.meta.get("mode") in ("ptrace", "isolated"):
                    say(f"a detrec --{tr.meta['mode']} trace replays without gdb for now (--gdb, --goto)")
                    return 2
            return run_gdb(ns.trace, relaxed=ns.relaxed, force=ns.force, goto=ns.goto, gdb_args=gdb_args,
                           trust=ns.trust, host_files=ns.host_files)
        except DetError as e:
            say(str(e))
            return e.status
    try:
        res = replay(ns.trace, relaxed=ns.relaxed, force=ns.force, stall=ns.stall, trust=ns.trust,
                     backend=ns.backend, host_files=ns.host_files, quiet=ns.quiet, say_now=say)
    except DetError as e:
        say(str(e))
        return e.status
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    if not ns.quiet or res.diverged or not res.matched:
        for line in res.lines[res.said:]:
            say(line)
    return res.exit_status


def detreplay() -> NoReturn:
    """The detreplay command (setup.cfg): main(), then the process ends
    without the interpreter's teardown (det.command_end; start-up, issue 25)."""
    end_command(main())


if __name__ == "__main__":  # (detdiff's bisection runs replays as `python -m det.replay.cli`)
    detreplay()
