"""det.record.engine: record one run of a program into a SQLite trace
(detrec's engine, and every hunt's run: det.record.seeds).

Rules: every run leaves a readable trace, whatever the program does (exits,
crashes, hangs, is killed) and whatever happens to detrec (Ctrl-C, SIGTERM);
if detrec itself is killed, the program dies with it and NAME.incomplete
stays readable. A run's exit status (RunResult.exit_status) is the
program's, as a shell reports it; 124 when --timeout stopped it; 125 when
det had to stop it. No command line here: det.record.cli is detrec's.
"""

from __future__ import annotations

import datetime
import functools
import io
import json
import os
import random
import signal
import sqlite3
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from det import __version__, machine, schema
from det import events as ev
from det.constants import (
    DET_F_CC_POINTS,
    DET_F_LOGICAL,
    DET_F_STDIN_FED,
    DET_F_STRICT,
    DET_SYSCALL_SITES_ENV,
    PROC_STATES,
    THREAD_STATES,
)
from det.errors import DetError
from det.launch import (
    EXIT_STOPPED,
    EXIT_TIMEOUT,
    FED_KINDS,
    Program,
    StdinFeed,
    describe_status,
    read_own_stdin,
    read_own_terminal,
    shell_status,
)
from det.native import (
    CaptureStats,
    ConvertStats,
    convert,
    digest_hex,
    libdet_path,
    log_digest,
)
from det.seal import remember
from det.trace import Trace, TraceWriter
from det.trust import library_hashes, sha256_recorded

from .native import Recorder
from .replica import Replica

RING_ENTRIES = (int(os.environ.get("DET_RING_KB", "4096")) << 10) // 32  # per thread (struct det_rec)
PCT_K = 1000  # PCT's k before a hunt has learned it from its runs


class RunTimeout:
    """The per-run timeout of --until-fail and --runs when --timeout is not
    given: a run that takes FACTOR times as long as the longest passing run
    (at least FLOOR seconds) is hung, a failure of its own kind; before any
    run has passed, FIRST seconds."""

    FACTOR = 10
    FLOOR = 2.0
    FIRST = 20.0

    def __init__(self) -> None:
        self.longest: float | None = None
        self.passes = 0
        self.lock = threading.Lock()

    def passed(self, duration: float) -> None:
        with self.lock:
            self.passes += 1
            self.longest = duration if self.longest is None else max(self.longest, duration)

    def seconds(self) -> float:
        with self.lock:
            return self.FIRST if self.longest is None else max(self.FLOOR, self.FACTOR * self.longest)

    def describe(self, seconds: float) -> str:
        with self.lock:
            if self.longest is None:
                return f"no exit within {seconds:g} s (--until-fail's per-run timeout before any run passed; " \
                       "--timeout sets it)"
            return (f"no exit within {seconds:.3g} s ({self.FACTOR}x the longest of {self.passes} passing run(s), "
                    f"{self.longest:.3g} s; --timeout sets it)")


# Waits that only another thread of the program can end (no timeout, no
# input from outside): when every thread of the program is in one, asleep
# in the kernel, the run cannot go on (but for a signal handler that
# exits: the run was deadlocked when it came). Not sem_wait: sem_post is
# async-signal-safe, and waiting on a semaphore that a handler posts (for
# SIGTERM, a timer) is how a program idles, not a deadlock.
STUCK_KINDS = frozenset({ev.MUTEX_LOCK, ev.COND_WAIT, ev.RWLOCK_RDLOCK, ev.RWLOCK_WRLOCK, ev.BARRIER_ARRIVE,
                         ev.THREAD_JOIN, ev.FILE_LOCK, ev.STDIO_WRITE, ev.STDIO_READ, ev.OMP_LOCK, ev.GUARD_ACQUIRE})


class StuckWatch:
    """Sees a run that cannot go on: every thread blocked in one of
    STUCK_KINDS, asleep in the kernel (not woken and waiting for a CPU),
    with no event captured, for POLLS polls in a row. The run then ends at
    once, as a timeout would have ended it (a deadlock: its trace names the
    cycle), instead of waiting for the timeout."""

    POLLS = 3  # (polled every 0.2 s or so: a run stuck this long, ~0.5 s, stays stuck)

    def __init__(self) -> None:
        self.seen = 0
        self.entries = -1

    def stuck(self, rec: Recorder) -> bool:
        entries = int(rec.stats().entries)
        if not self._all_blocked(rec) or entries != self.entries:
            self.seen, self.entries = 0, entries
            return False
        self.seen += 1
        return self.seen >= self.POLLS

    @staticmethod
    def _all_blocked(rec: Recorder) -> bool:
        procs = rec.processes()
        if any(PROC_STATES.get(p.state) not in ("running", "gone", "free") for p in procs):
            return False  # one exec'ing, or running an image det does not follow
        gone = {i for i, p in enumerate(procs) if PROC_STATES.get(p.state) == "gone"}
        waiting, exiting = [], []
        for t in rec.threads():
            state = THREAD_STATES.get(t.state)
            if state == "free" or int(t.proc) in gone:
                continue
            if state == "exiting":
                exiting.append(int(t.ktid))
            elif state == "running" and int(t.blocked_kind) in STUCK_KINDS:
                waiting.append(int(t.ktid))
            else:
                return False
        # (the kernel's word last, for threads det sees all blocked: a few
        # reads of /proc a poll, and only then)
        if any(_kernel_state(k) not in ("Z", "X", None) for k in exiting):
            return False  # still on its way out (a process's zombie leader is gone)
        return bool(waiting) and all(_kernel_state(k) == "S" for k in waiting)


def _kernel_state(tid: int) -> str | None:
    """A thread's state letter in /proc (S: asleep, R: running or runnable),
    None if it is gone."""
    try:
        with open(f"/proc/{tid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    rest = stat[stat.rfind(b")") + 2:]  # (the command name may hold spaces and parentheses)
    return rest[:1].decode() or None


# How long detrec waits for the processes a program started (a daemon) once
# its first process has ended; then it stops them and the recording ends.
OUTLIVE_S = 10.0


@dataclass
class Options:
    """How detrec records a run (its command line, decided once)."""

    stdin: dict[str, object] | None = None     # stdin_source(), decided once
    stdin_bytes: list[bytes] | None = None    # a piped stdin read ahead (--until-fail)
    outputs: tuple[dict | None, dict | None] = (None, None)  # output_source() of stdout and stderr
    timeout: float | None = None
    auto_timeout: RunTimeout | None = None    # --until-fail/--runs without --timeout
    outlive: float = OUTLIVE_S  # --outlive: how long processes may run on after the first one ended
    max_threads: int = 4096
    rings: int = 1024
    ring_entries: int = RING_ENTRIES
    objects: int = 1 << 20
    forward: bool = True
    strict: bool = False
    logical: bool = False      # threads take turns by logical clock (Kendo): deterministic without a trace
    quantum: int = 64          # strict: events per turn
    watchdog_ms: int = 1000    # strict: a turn with no event this long is preempted
    seed: int = 0              # chaos: nonzero seeds the schedule
    pct_depth: int = 3         # chaos + strict: PCT's bug depth d (d-1 priority change points)
    pct_k: int = PCT_K         # chaos + strict: the expected number of steps k (change points fall in 1..k):
    #                            events, or det-cc memory points (a program built with --sched-points=memory)
    spin_steps: int = 10000    # chaos + strict: steps a thread runs in a row while others wait, then defers
    delay_us: int = 200        # chaos in parallel: the longest pause at an event
    follow: bool = False       # --follow: a live replica replays the run as it is recorded (det.record.replica)
    follow_max_lag: int = 0    # --follow-max-lag: events the replica may fall behind (0: any number)
    standby: float = 0.0       # --standby: seconds a replica holds a dead program's state (0: it does not)
    env: dict[str, str] | None = None  # the program's environment (None: detrec's own)
    cwd: str | None = None     # its working directory (None: detrec's own)

    def for_seed(self, seed: int, pct_k: int | None = None) -> Options:
        return replace(self, seed=seed, pct_k=pct_k or self.pct_k)

    @property
    def pct(self) -> bool:
        """Is a run with these options scheduled by PCT (chaos in strict mode)?"""
        return bool(self.seed) and self.strict and not self.logical

    def change_points(self) -> list[int]:
        """PCT's d-1 change points, each drawn uniformly from 1..k, from the
        seed alone (as drawn, not sorted)."""
        rng = random.Random(self.seed)
        return [rng.randint(1, self.pct_k) for _ in range(self.pct_depth - 1)]

    def repeat_flags(self) -> str:
        """The detrec flags that repeat this run's schedule."""
        if self.logical:
            return f"--logical --seed {self.seed}" if self.seed else "--logical"
        if not self.seed:
            return "--strict" if self.strict else ""
        if not self.strict:
            return f"--chaos --seed {self.seed}"
        return f"--chaos --strict --seed {self.seed} --depth {self.pct_depth} --pct-k {self.pct_k}"


def det_cc_memory_points(exe: str) -> bool:
    """Was the program built with `det-cc --sched-points=memory`? (The pass
    leaves a symbol saying so.) Then PCT's steps are its memory points."""
    from det.hunt.escalate import built_with_memory_points  # (--pct only: not on a plain recording's start-up)

    return built_with_memory_points(exe)


@dataclass
class RunResult:
    """One recorded run: its trace and how it ended."""

    path: Path
    status: str             # exited | signaled | timeout | stopped | interrupted
    returncode: int         # Popen-style: negative for a signal
    exit_status: int        # what detrec exits with
    message: str
    events: int
    duration: float
    stdout_tail: bytes = b""
    stderr_tail: bytes = b""
    report: list[str] = field(default_factory=list)
    seed: int = 0
    write_s: float = 0.0    # time spent writing the trace after the program ended
    pct_steps: int = 0      # PCT's steps in this run: events, or det-cc memory points (det_cc_memory_points)
    schedule: str = ""      # the schedule digest (meta schedule_digest)
    follow: str = ""        # --follow: how the live replica went (its lag), one line

    @property
    def failed(self) -> bool:
        return self.exit_status != 0


class Interrupt:
    """SIGINT/SIGTERM/SIGHUP/SIGQUIT while recording: forwarded to the program
    (a second one kills it); the trace is kept whichever way it ends."""

    def __init__(self) -> None:
        self.signal: int | None = None
        self.programs: set[Program] = set()
        self.lock = threading.Lock()

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread():
            for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
                signal.signal(s, self._handle)

    def _handle(self, signum: int, frame: object) -> None:
        again = self.signal is not None
        self.signal = signum
        with self.lock:
            progs = list(self.programs)
        for p in progs:
            if again:
                p.kill(signal.SIGKILL)
            elif signum == signal.SIGINT:
                p.kill(signal.SIGINT)  # as a terminal's Ctrl-C reaches the program's whole group
            else:
                # as systemd or timeout(1) signal a service's main process: it
                # shuts down by itself (its children too), and that is recorded
                p.signal_first(signum)


INTERRUPT = Interrupt()


@dataclass
class Captured:
    """A run whose events are in its capture log, not yet in the trace."""

    writer: TraceWriter
    status: str
    returncode: int
    exit_status: int
    message: str
    outcome: dict[str, object]
    end_states: dict[int, str]
    blocked: list[tuple[int, int, int, int]]
    spool: IO[bytes] | None
    duration: float
    attached: bool
    failure: str | None
    timed_out: bool
    capture: CaptureStats
    stdout_tail: bytes
    stderr_tail: bytes
    seed: int = 0
    cc_points: int = 0
    over_points: bool = False  # PCT counted det-cc memory points (cc_points), not events
    files: list[dict] = field(default_factory=list)  # what the program read or loaded (detrec pack)
    meta: dict[str, object] = field(default_factory=dict)  # the trace's meta rows, written with its events
    log_failed: bool = False   # the capture log could not be written: the events after that are lost
    stuck: bool = False        # ended at once, every thread blocked (StuckWatch), not by the timeout
    replica: Replica | None = None  # --follow: the live replica, still catching up

    @property
    def failed(self) -> bool:
        return self.exit_status != 0

    def discard(self) -> None:
        """A run nobody keeps: its log and trace go, unconverted."""
        if self.spool is not None:
            self.spool.close()
        self.writer.discard()


def record_run(exe: str, argv: list[str], out: Path, opts: Options, stop: threading.Event | None = None) -> RunResult:
    """Record one run of the program into `out`."""
    c = capture_run(exe, argv, out, opts, stop)
    try:
        res = finish_run(c)
    finally:
        if c.replica is not None:
            follow = c.replica.finish(c.returncode)  # (it caught up while the trace was written)
    if c.replica is not None:
        res.follow = follow
    return res


def trapped_syscalls(exe: str) -> str:
    """Where one thread runs at a time: the raw system call instructions
    libdet.so traps in exe and its libraries (libgomp's futex waits), as
    DET_SYSCALL_SITES_ENV's value; "" without capstone (strict mode then
    cannot see them, as before, and the trace's note says so). Found once
    per build of exe in a detrec (--until-fail's runs ask again)."""
    try:
        return _trapped_syscalls(exe, os.stat(exe).st_mtime_ns)
    except OSError:
        return ""


@functools.lru_cache(maxsize=4)
def _trapped_syscalls(exe: str, mtime_ns: int) -> str:
    try:
        from det.check.patch import syscall_sites_value
    except ImportError:
        return ""
    try:
        return syscall_sites_value(exe)
    except (ImportError, DetError, OSError):
        return ""


def capture_run(exe: str, argv: list[str], out: Path, opts: Options,
                stop: threading.Event | None = None, marker: bool = True) -> Captured:
    """Run the program under libdet.so; its events go to the capture log.
    marker=False: a hunt's run (TraceWriter's marker)."""
    env = dict(os.environ) if opts.env is None else dict(opts.env)
    env.pop(DET_SYSCALL_SITES_ENV, None)
    if opts.strict and (sites := trapped_syscalls(exe)):
        env[DET_SYSCALL_SITES_ENV] = sites  # (one thread at a time: libgomp's futex waits hand the turn on)
    cwd = opts.cwd or os.getcwd()
    writer = TraceWriter(out, marker=marker)
    rec = None
    replica = None
    try:
        rec = Recorder(opts.max_threads, opts.rings, opts.ring_entries, opts.objects)
        start = time.time()
        meta = {
            "format_version": schema.FORMAT_VERSION,
            "det_version": __version__,
            "mode": "strict" if opts.strict else "record",
            "argv": argv,
            "env": env,
            "cwd": cwd,
            "binary": exe,
            "binary_sha256": sha256_recorded(exe),
            "libdet_sha256": sha256_recorded(str(libdet_path())),
            "start_time": datetime.datetime.fromtimestamp(start, datetime.UTC).isoformat(),
            "start_unix_ns": time.time_ns(),
            "host": os.uname().nodename,  # (platform.node(): os.uname, without importing platform)
            "kernel": os.uname().release,
            **machine.describe(),
            "timeout": opts.timeout,
            "stdin": opts.stdin,
            "stdout": opts.outputs[0],
            "stderr": opts.outputs[1],
            "strict_quantum": opts.quantum if opts.strict else None,
            "logical": opts.logical or None,
            "chaos_seed": opts.seed or None,
            "chaos": ("pct" if opts.strict else "delays") if opts.seed else None,
        }
        if opts.logical:
            # strict mode's emulated waits, with turns by logical clock
            rec.add_flags(DET_F_STRICT | DET_F_LOGICAL)
            meta["mode"] = "logical"
        elif opts.strict:
            rec.add_flags(DET_F_STRICT)
        rec.schedule(opts.quantum, opts.watchdog_ms, opts.seed, opts.delay_us)
        over_points = False
        if opts.pct:
            over_points = det_cc_memory_points(exe)
            if over_points:
                rec.add_flags(DET_F_CC_POINTS)
            meta["pct_over"] = "memory points" if over_points else None
            meta.update({"pct_depth": opts.pct_depth, "pct_k": opts.pct_k, "pct_change_points": opts.change_points()})
            rec.pct(opts.change_points(), opts.spin_steps)
        # (the log's META chunk holds the meta: the trace gets it with the events,
        # so a run a hunt never converts costs no SQLite at all)
        rec.capture_open(writer.log, json.dumps(meta))
        stdin: StdinFeed | int | None = None
        spool = None
        if opts.stdin and opts.stdin["kind"] in FED_KINDS:
            rec.add_flags(DET_F_STDIN_FED)
            # (input read ahead is in memory already: no file to make each run)
            spool = tempfile.TemporaryFile() if opts.stdin_bytes is None else io.BytesIO()
            pty = opts.stdin["kind"] == "pty"
            chunks = (opts.stdin_bytes if opts.stdin_bytes is not None
                      else read_own_terminal() if pty else read_own_stdin())
            stdin = StdinFeed(chunks, spool, pty)
        t0 = time.monotonic()
        prog = Program(exe, argv, env, cwd, rec.fd, opts.forward, stdin, opts.outputs,
                       inline_outputs=not opts.forward)  # (a hunt's run: a thread less each run)
        prog.region = rec
        with INTERRUPT.lock:
            INTERRUPT.programs.add(prog)
        rec.capture_start()
        if opts.follow:
            if threading.current_thread() is threading.main_thread():  # (before the replica: a test waits for it)
                signal.signal(signal.SIGUSR1,
                              lambda *_: _say(replica.now() if replica is not None else "replica: starting"))
            replica = Replica(writer.log, opts.follow_max_lag, opts.standby)
        timed_out = False
        rc = None

        def limit() -> float | None:
            if opts.timeout is not None:
                return opts.timeout
            return opts.auto_timeout.seconds() if opts.auto_timeout is not None else None

        lim = limit()
        deadline = None if lim is None else t0 + lim
        blocked: list[tuple[int, int, int, int]] = []
        log_failed = False
        watch = StuckWatch()
        stuck = False  # ended at once: no thread could go on

        def capture_ended() -> bool:
            """The capture ended before the program: its log could not be
            written (a full disk: nothing drains the rings, and the program's
            threads would wait for room for ever), or the program wrote over
            its rings (failed() says how). The program is stopped as
            --timeout stops it."""
            nonlocal log_failed
            log_failed = log_failed or rec.capture_failed()
            return log_failed or rec.capture_stopped()

        while rc is None:
            wait = 0.2
            if opts.auto_timeout is not None and opts.timeout is None:
                # the longest passing run grows as other runs (-j) finish
                lim = limit()
                deadline = t0 + lim
            if deadline is not None:
                wait = min(wait, max(0.0, deadline - time.monotonic()))
            rc = prog.wait(wait)
            if rc is not None:
                break
            if replica is not None and (line := replica.poll()):
                _say(line)
            if capture_ended() or (stop is not None and stop.is_set()):
                prog.kill()
                continue
            stuck = watch.stuck(rec)
            if stuck or (deadline is not None and time.monotonic() >= deadline):
                timed_out = True
                blocked = _blocked_threads(rec)
                prog.kill()
                rc = prog.wait()

        first_ended = time.monotonic()
        outlived = 0

        def give_up() -> bool:
            nonlocal timed_out, outlived
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                timed_out = True
            if now - first_ended > opts.outlive:
                outlived = len(prog.others())
            return (timed_out or bool(outlived) or capture_ended() or INTERRUPT.signal is not None
                    or (stop is not None and stop.is_set()))

        prog.wait_others(give_up)
        duration = time.monotonic() - t0
        if replica is not None:
            if line := replica.poll():
                _say(line)
            replica.program_ended(rc)
        with INTERRUPT.lock:
            INTERRUPT.programs.discard(prog)
        out_info, err_info = prog.outputs()
        capture_error = rec.capture_finish()
        if not blocked and rc < 0:
            blocked = _blocked_threads(rec)  # killed or crashed: who was waiting
        failure = rec.failed()
        if not failure and not timed_out and INTERRUPT.signal is None and not (stop is not None and stop.is_set()):
            failure = _unfollowed_exec(rec)
        end_states = _end_states(rec)
        crash = _crash(rec, rc)
        cap = rec.stats()
        attached = bool(rec.attached())
        files, files_lost = rec.files()
        preemptions = rec.preemptions()
        token_holder = rec.strict_owner() - 1 if opts.strict else _crashed_thread(rec)
        cc_points = rec.cc_points() if over_points else 0
    except BaseException:  # (the log gone, its empty trace would only look like a recording)
        writer.discard()
        if replica is not None:
            replica.proc.kill()
            replica.proc.wait()
        raise
    finally:
        if rec is not None:
            rec.close()

    if capture_error:
        # what was captured stays: the trace of it, or the log to salvage (finish_run)
        ended = "the program was stopped" if log_failed else "the program had ended"
        status, message, exit_status = ("stopped", f"the capture log could not be written ({capture_error}): {ended}",
                                        EXIT_STOPPED)
    elif failure:
        status, message, exit_status = "stopped", f"det stopped the program: {failure}", EXIT_STOPPED
    elif stuck:
        status, message, exit_status = ("timeout", f"det ended the run after {duration:.1f} s: every thread was "
                                        "blocked, none could wake another", EXIT_TIMEOUT)
    elif timed_out and opts.timeout is None and opts.auto_timeout is not None:
        status, message, exit_status = "timeout", f"hung: {opts.auto_timeout.describe(lim)}", EXIT_TIMEOUT
    elif timed_out:
        status, message, exit_status = "timeout", f"timeout after {opts.timeout:g} s", EXIT_TIMEOUT
    elif INTERRUPT.signal is not None and rc < 0:
        status, message, exit_status = "interrupted", "interrupted", shell_status(rc)
    elif rc < 0:
        status, message, exit_status = "signaled", describe_status(rc), shell_status(rc)
    else:
        status, message, exit_status = "exited", "", rc
    # (a run stopped by Ctrl-C before libdet's constructor ran is only interrupted)
    if not attached and not failure and status != "interrupted":
        message = (message + "; " if message else "") + "libdet.so was never loaded into the program"
    if outlived:
        note = (f"{outlived} process(es) the program started (a daemon?) still ran {opts.outlive:g} s after its "
                "first process ended: detrec stopped them, and their recording ends there (--outlive S waits longer)")
        message = f"{message}; {note}" if message else note
    if preemptions:
        note = (f"{preemptions} watchdog preemption(s): a thread ran without any event for "
                f"{opts.watchdog_ms} ms (a busy-wait?); replay is not exact there")
        message = f"{message}; {note}" if message else note
    outcome: dict[str, object] = {
        "status": status,
        "exit_code": rc if rc >= 0 else None,
        "signal": -rc if rc < 0 else None,
        "stdout_bytes": out_info["bytes"],
        "stdout_sha256": out_info["sha256"],
        "stdout_tail": out_info["tail"],
        "stderr_bytes": err_info["bytes"],
        "stderr_sha256": err_info["sha256"],
        "stderr_tail": err_info["tail"],
        "duration_ns": int(duration * 1e9),
        "events": 0,  # known once the log is converted
        "message": message,
    }
    meta.update({"preemptions": preemptions, "files_lost": files_lost, "capture_bytes": cap.bytes,
                 "capture_busy_s": round(cap.busy_ns / 1e9, 4)})
    if crash is not None:
        meta["crash"] = crash
    if token_holder >= 0 and (status == "exited" or (status == "signaled" and -rc in SELF_INFLICTED)):
        # the program ended by itself in this thread (strict: in its turn), after
        # its last event (maybe inside a call det wraps): replay lets it run on
        meta["ran_last"] = token_holder
    return Captured(writer, status, rc, exit_status, message, outcome, end_states, blocked, spool, duration,
                    attached, failure, timed_out, cap, out_info["tail"], err_info["tail"], opts.seed, cc_points,
                    over_points, files, meta, bool(capture_error), stuck, replica)


def _say(line: str) -> None:
    print(f"detrec: {line}", file=sys.stderr, flush=True)


def _write_trace(c: Captured, t0: float) -> tuple[Path, ConvertStats]:
    """The trace of a captured run, from its log (which stays: finish_run
    removes it once the trace is whole), sealed in its work directory."""
    st = convert(c.writer.log, c.writer.path)
    if st.torn_bytes and not c.log_failed:
        # detrec wrote the whole log and ended it: a chunk that fails its
        # check is damage, and what follows it (threads, processes, the
        # end) would be missing from the trace without a word
        raise DetError(f"the capture log is damaged at byte {st.log_bytes} ({st.torn_bytes} bytes from there on "
                       "cannot be read), though detrec wrote it whole: something wrote over it (or det has a bug: "
                       "please report it)")
    c.outcome["events"] = st.events
    c.writer.set_files(c.files)
    convert_s = time.monotonic() - t0
    c.writer.set_meta({
        **c.meta,
        "libraries": library_hashes(c.writer.modules()),
        "ingest_events_per_s": round(st.events / convert_s) if convert_s > 0 else 0,
        "convert_s": round(convert_s, 4),
        "forced": st.forced,
    })
    gomp = [Path(m).name for m, _ in c.writer.modules() if Path(m).name.startswith("libgomp.")]
    trapped = {part.split("@")[0] for part in c.meta["env"].get(DET_SYSCALL_SITES_ENV, "").split(";")}
    if c.meta.get("mode") == "strict" and gomp and not trapped.intersection(gomp):
        # (capstone missing, libgomp loaded by dlopen, or not found by the loader's list)
        note = ("the program uses OpenMP (libgomp), whose barriers and thread pool wait where strict mode "
                "could not see them here: its replay is not exact (the default mode orders OpenMP's locks and "
                "shares)")
        c.message = c.outcome["message"] = f"{c.message}; {note}" if c.message else note
    path = c.writer.seal_outcome(c.outcome, c.end_states, c.blocked, c.spool,
                                 (st.event_sum.value(), st.call_sum.value()))
    return path, st


def finish_run(c: Captured) -> RunResult:
    """Turn a captured run's log into its trace, and finish the trace."""
    try:
        return _finish_run(c)
    finally:
        c.writer.remove_work()  # (once published, gone already; on an error the capture log stays to salvage)


def _finish_run(c: Captured) -> RunResult:
    t0 = time.monotonic()
    try:
        path, st = _write_trace(c, t0)
    except (DetError, sqlite3.Error, OSError) as e:  # a full disk, most likely: the log stays
        log = c.writer.log
        if c.log_failed:
            why, when = f"{c.message} after {c.duration:.1f} s; cannot write the trace either", " once there is room"
        else:
            why, when = "cannot write the trace", ""
        err = e.strerror if isinstance(e, OSError) and e.strerror else e
        raise DetError(f"{why}: {err}; the capture log stays in {log} (`detrec salvage {log}` makes it a trace"
                       f"{when})", status=1) from None
    remember(path)  # det wrote it: opening it need not check every event again
    message = c.message
    report: list[str] = []
    if c.blocked and (c.timed_out or c.status == "interrupted"):
        from det.analysis import Waiter, block_report  # (a hung run only: not on a plain recording's start-up)
        from det.symbols import Symbolizer

        with Trace(path) as tr:
            waiters = [Waiter(*b) for b in c.blocked]
            rep = block_report(tr, waiters, Symbolizer(tr.modules()))
        # An interrupted run names a wait-for cycle only: it was hung too.
        if c.timed_out or rep.cycle:
            report = [rep.summary] + rep.lines
            message = f"{rep.summary}; {message}" if c.stuck else f"{message}: {rep.summary}"
            _set_message(path, message)
    elif c.status == "signaled":
        # which thread died of what, where (det.ending: every tool's one wording)
        from det.ending import ending  # (a crashed run only, as det.analysis above)

        with Trace(path) as tr:
            end = ending(tr)
        report = [end.line] + end.details
    path = c.writer.publish()
    c.writer.log.unlink(missing_ok=True)
    if c.spool is not None:
        c.spool.close()
    write_s = time.monotonic() - t0
    if not c.attached and not c.failure and c.status != "interrupted":
        raise DetError(
            f"{path.name}: libdet.so was never loaded into the program (is it statically linked, or does "
            f"it reset LD_PRELOAD?); trace kept in {path}",
            status=EXIT_STOPPED,
        )
    res = RunResult(path, c.status, c.returncode, c.exit_status, message, st.events, c.duration,
                    c.stdout_tail, c.stderr_tail, report, c.seed,
                    pct_steps=c.cc_points if c.over_points else st.events, schedule=digest_hex(st.schedule))
    res.write_s = write_s
    return res


def needs_trace(c: Captured) -> bool:
    """Does judging this run take its trace? A run stopped with threads
    blocked (a timeout, Ctrl-C) is judged by its wait-for graph, read from
    the trace (a deadlock, or whether an interrupted run hung at all); a
    run libdet.so never attached to is an error finish_run reports."""
    return (bool(c.blocked) and (c.timed_out or c.status == "interrupted")) or (not c.attached and not c.failure)


def judge_run(c: Captured) -> RunResult:
    """What finish_run would say of a run that needs no trace to be judged
    (needs_trace), from its capture log alone: its events and schedule
    digest come from the converter's own merge, without a trace written.
    The log stays, for finish_run if the run is kept (its path is the
    trace's, not made yet); Captured.discard() removes it otherwise."""
    st = log_digest(c.writer.log)
    return RunResult(c.writer.final, c.status, c.returncode, c.exit_status, c.message, st.events, c.duration,
                     c.stdout_tail, c.stderr_tail, [], c.seed, pct_steps=c.cc_points if c.over_points else st.events,
                     schedule=digest_hex(st.schedule))


def _set_message(path: Path, message: str) -> None:
    db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE outcome SET message = ?", (message,))
    db.close()
    remember(path)


def _blocked_threads(rec: Recorder) -> list[tuple[int, int, int, int]]:
    return [
        (int(t.num), int(t.blocked_kind), int(t.blocked_obj), int(t.blocked_ra))
        for t in rec.threads()
        if t.blocked_kind and THREAD_STATES.get(t.state) in ("running", "starting")
    ]


def _unfollowed_exec(rec: Recorder) -> str | None:
    """A process of the program exec'd an image that never started det's
    runtime (libdet.so refuses what it knows it cannot follow; this is the
    rest): what that image did is not in the trace, so the run does not
    replay, whatever it printed."""
    for p in rec.processes():
        if PROC_STATES.get(p.state) == "exec":
            return (f"process {p.pid} exec'd a program that never started det's runtime (its loader ignored "
                    "LD_PRELOAD, or failed): what it did is not in the trace")
    return None


def _end_states(rec: Recorder) -> dict[int, str]:
    """How each thread stood when the program ended."""
    states = {}
    gone = {i for i, p in enumerate(rec.processes()) if i and PROC_STATES.get(p.state) == "gone"}
    for t in rec.threads():
        state = "exiting" if int(t.proc) in gone else THREAD_STATES.get(t.state, "?")
        # (a thread killed before its first step, "starting", had not ended: running)
        end = {"exiting": "exited", "free": "exited", "starting": "running"}.get(
            state, "blocked" if t.blocked_kind else state)
        if end == "running" and t.yielded:
            end = "waiting"  # strict: for its turn, after its last event
        states[int(t.num)] = end
    return states


def _crashed_thread(rec: Recorder) -> int:
    """The thread of the program's first process that last took a fault or
    an abort (-1: none): the program ended in it if it died of that signal,
    or exited in its handler. (One of a child process's threads ended only
    that process, whose parent went on.)"""
    num = rec.crashed() - 1
    if num < 0:
        return -1
    threads = {int(t.num): int(t.proc) for t in rec.threads()}
    return num if threads.get(num) == 0 else -1


def _crash(rec: Recorder, rc: int | None) -> dict[str, int] | None:
    """The thread a signal that ends the program killed, and where
    (preload/signals.c note_crash): the one that died of the top process's
    signal, else the first noted."""
    noted = [t for t in rec.threads() if t.crash_sig]
    if not noted:
        return None
    t = next((t for t in noted if rc is not None and -rc == t.crash_sig and t.proc == 0), noted[0])
    return {"thread": int(t.num), "signal": int(t.crash_sig), "code": int(t.crash_code), "pc": int(t.crash_pc),
            "addr": int(t.crash_addr), "call_ra": int(t.crash_call_ra), "caller": int(t.crash_caller),
            "entry": int(t.crash_entry)}


# Signals a thread brings on itself (a fault, abort()): a program killed by
# one ended by itself, in the thread that ran last. (Not SIGKILL, SIGTERM...:
# sent from outside, at any point of any thread.)
SELF_INFLICTED = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGTRAP,
                            signal.SIGABRT, signal.SIGSYS})


def hung_run(res: RunResult) -> bool:
    """A run that never ended by itself: stopped by the (per-run) timeout, or
    interrupted while its threads waited for each other in a cycle."""
    return res.status == "timeout" or (res.status == "interrupted" and bool(res.report)
                                        and res.report[0].startswith("deadlock"))
