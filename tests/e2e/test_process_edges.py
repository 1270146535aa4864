"""Processes at the edges of fork, exec and wait (tests/programs/proc_edges.c):
children killed while they sleep or make events, a FIFO opened from both
ends by two processes, exec with bad pointers, exec after dropping root,
several processes writing one stdout, a program that daemonizes, and a child
killed as its write returns. Each
is recorded once and replays as recorded every time."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import DETREC, DETREPLAY, detrec, detreplay, outcome, program, query, replays_identically
from det import events as ev

REPLAYS = 10


def record(trace: Path, *args: str, mode: tuple[str, ...] = (), timeout: float = 120) -> bytes:
    r = detrec("-q", *mode, "-o", trace, "--", program("proc_edges"), *args, timeout=timeout)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout, "the program wrote nothing"
    return r.stdout


@pytest.mark.parametrize("mode", [(), ("--strict",)], ids=["default", "strict"])
def test_killed_children_are_waited_for(mode: tuple[str, ...], tmp_path: Path) -> None:
    """The parent's kill is no event and the sleep and wait around it do not
    wait for their turn: replay sent it before the child's first event
    (which the recording had before it), and stalled."""
    trace = tmp_path / "kill.db"
    out = record(trace, "kill", mode=mode)
    assert out == (b"waited 1: sleeper KILL: killed by 9\nwaited 1: sleeper TERM: killed by 15\n"
                   b"busy KILL: killed by 9\n")
    replays_identically(trace, out)


@pytest.mark.parametrize("mode", [(), ("--strict",)], ids=["default", "strict"])
def test_child_killed_as_its_write_returns(mode: tuple[str, ...], tmp_path: Path) -> None:
    """kill_after_write: the parent reads a child's "ready" and kills it at
    once; its SIGTERM handler _exits. The signal often came as the write
    returned, and det ran the handler before logging the write's result:
    the write stayed "never finished" (5 to 18 of 20 in a recording), replay
    took it back, and the parent's read stalled (0 of 3, each recording).
    Strict: the signal came while the child waited for its turn to pause,
    det held it for the way out, and pause waited for another (the
    recording hung, 3 of 3)."""
    trace = tmp_path / "kaw.db"
    r = detrec("-q", *mode, "-o", trace, "--", program("kill_after_write"), timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == b"20 of 20 children read and exited 3\n"
    (pending,), = query(trace, "SELECT count(*) FROM events WHERE kind = ? AND result = ?", (ev.WRITE, -2**63))
    assert pending == 0, f"{pending} writes logged as never finished"
    replays_identically(trace, r.stdout)


@pytest.mark.parametrize("mode", [(), ("--strict",)], ids=["default", "strict"])
def test_children_killed_before_their_first_event(mode: tuple[str, ...], tmp_path: Path) -> None:
    """kill_at_once: a spawned and a forked child killed at once, reaped,
    then a thread. Strict mode handed its turn to a dead child for ever
    (the recording hung, 3 of 3): a reaped process's threads are no longer
    runnable (replayer/strict.c)."""
    trace = tmp_path / "once.db"
    r = detrec("-q", *mode, "--timeout", "30", "-o", trace, "--", program("kill_at_once"), timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == b"spawned 0: killed 1 by 9\nforked: killed by 9\nworker ran\n"
    replays_identically(trace, r.stdout)


@pytest.mark.parametrize("wait", ["suspend", "sleep"])
@pytest.mark.parametrize("mode", [(), ("--strict",)], ids=["default", "strict"])
def test_children_reaped_by_a_sigchld_handler(mode: tuple[str, ...], wait: str, tmp_path: Path) -> None:
    """sigchld_reaper: a SIGCHLD handler reaps with waitpid(WNOHANG) while
    main waits in sigsuspend or a sleep loop; one child is killed as soon as
    it said it was ready (each recorded 3 times: the races above were 1 in 8
    and 1 in 6 recordings)."""
    for i in range(3):
        trace = tmp_path / f"reap{i}.db"
        r = detrec("-q", *mode, "--timeout", "30", "-o", trace, "--", program("sigchld_reaper"), wait, timeout=60)
        assert r.returncode == 0, r.stderr.decode()
        assert r.stdout == b"reaped 4, exit codes 46, signals 0\n"
        replays_identically(trace, r.stdout, n=3)


@pytest.mark.parametrize("mode", [(), ("--strict",), ("--relaxed",)], ids=["default", "strict", "relaxed"])
def test_fifo_opened_from_both_ends(mode: tuple[str, ...], tmp_path: Path) -> None:
    """Each open of a FIFO waits in the kernel for the other end's: replay
    opened in its turn, so whichever open came first in the order waited for
    one that waited for it. (Strict recording gives up the turn in it, as in
    a read; the relaxed replay is of the default recording.)"""
    trace = tmp_path / "fifo.db"
    out = record(trace, "fifo", mode=("--strict",) if mode == ("--strict",) else ())
    assert out == b"parent read 21 bytes: line 0\nline 1\nline 2\nchild: exited 5\n"
    replays_identically(trace, out, mode=mode if mode == ("--relaxed",) else ())


@pytest.mark.parametrize("mode", [(), ("--relaxed",)], ids=["default", "relaxed"])
def test_fifo_reader_that_closes_before_the_write_ends(mode: tuple[str, ...], tmp_path: Path) -> None:
    """A FIFO opened by path is read from the trace in replay, so its reader
    does not drain it and closes in its turn, which came before the end of
    the parent's write (larger than the pipe) in the recording: the write
    then found no reader and SIGPIPE killed the replay (1 CI run in ~30 of
    the small fifo case, under load). The recorded count stands, and no
    signal. (A strict replay of it still stalls: the write keeps the turn
    the reader needs.)"""
    trace = tmp_path / "bulk.db"
    out = record(trace, "fifobulk")
    assert out == b"parent wrote 100000 bytes\nchild: exited 7\n"
    replays_identically(trace, out, n=5, mode=mode)


@pytest.mark.parametrize("mode", [(), ("--strict",)], ids=["default", "strict"])
def test_exec_with_bad_pointers_fails_with_efault(mode: tuple[str, ...], tmp_path: Path) -> None:
    """det read exec's path and vectors itself (to add its environment, to
    log the arguments) and crashed on a bad pointer; the kernel says EFAULT."""
    trace = tmp_path / "badexec.db"
    out = record(trace, "badexec", mode=mode)
    assert out == (b"bad argv: -1 Bad address\nbad envp: -1 Bad address\nbad path: -1 Bad address\n"
                   b"bad argv element: -1 Bad address\nexecvp bad argv: -1 No such file or directory\n")
    replays_identically(trace, out)


@pytest.mark.parametrize("mode", [(), ("--strict",)], ids=["default", "strict"])
def test_exec_after_dropping_root(mode: tuple[str, ...], tmp_path: Path) -> None:
    """A process that setuid()s to nobody cannot open the supervisor's
    descriptor through /proc any more, which each image it execs needed:
    they aborted ("cannot open det's shared memory"). The shell's children
    exec too, and one is in a pipeline."""
    assert os.geteuid() == 0, "this test drops root: run it as root"
    hello = program("hello")
    trace = tmp_path / "drop.db"
    out = record(trace, "dropexec", "/bin/sh", "-c", f"{hello} a; {hello} b | cat; id -u", mode=mode)
    line = f"hello from {hello} with 1 argument(s)\n".encode()
    assert out == b"dropped to 65534:65534\n" + line + line + b"65534\n"
    replays_identically(trace, out)


def test_daemon_that_ends_soon_is_recorded_to_its_end(tmp_path: Path) -> None:
    """fork, setsid, fork: the daemon works 300 ms after its starters have
    gone; detrec waits for it (its events are in the trace) and replay too."""
    trace = tmp_path / "daemon.db"
    out = record(trace, "daemon")
    assert out == b"first child: exited 0\n"
    (n,), = query(trace, "SELECT count(*) FROM events WHERE tid = 2 AND kind = ?", (ev.MUTEX_LOCK,))
    assert n == 100, "the daemon's work is not in the trace"
    replays_identically(trace, out)


def test_daemon_that_outlives_the_bound_is_stopped(tmp_path: Path) -> None:
    """A daemon still running --outlive seconds after the program's first
    process ended is stopped there, and the recording ends (detrec waited
    for it for ever). Replay ends as soon as its events are done, rather than
    waiting for it as for a stall."""
    trace = tmp_path / "daemon.db"
    t0 = time.monotonic()
    r = detrec("-o", trace, "--outlive", "0.5", "--", program("proc_edges"), "daemon", "30000", timeout=60)
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == b"first child: exited 0\n"
    assert took < 15, f"detrec took {took:.1f} s for a daemon it should have stopped after 0.5 s"
    assert "still ran 0.5 s after its first process ended" in outcome(trace)["message"]
    assert "(a daemon?)" in r.stderr.decode()
    for i in range(REPLAYS):
        t0 = time.monotonic()
        rr = detreplay("-q", trace, timeout=60)
        took = time.monotonic() - t0
        assert rr.returncode == 0 and rr.stdout == r.stdout, f"replay {i + 1}: {rr.stderr.decode()}"
        assert took < 5, f"replay {i + 1} took {took:.1f} s: it waited for the stopped daemon"


def run_in_session(cmd: list, out: Path, timeout: float) -> tuple[int | None, float]:
    """Run cmd with stdout to a file, in a session of its own that is
    killed at the end (so that a process it leaves behind cannot hold the
    test); its exit status (None: still running after timeout) and time."""
    t0 = time.monotonic()
    with open(out, "wb") as f:
        p = subprocess.Popen([str(c) for c in cmd], stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = p.wait(timeout)
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return rc, time.monotonic() - t0


def test_daemon_that_sets_its_title(tmp_path: Path) -> None:
    """A child that writes its process title over its environment strings
    (nginx's workers, postgres) and outlives its parent: det knows the
    program's processes by this run's variable in /proc/PID/environ, which
    such a child no longer shows, so detrec never stopped it (--outlive) and
    detreplay neither waited for it nor stopped it once its events were done
    (an nginx replay waited for ever on the worker's output). Now a process
    mapping the run's region counts too."""
    trace, out = tmp_path / "title.db", tmp_path / "rec.out"
    rc, took = run_in_session([DETREC, "-q", "-o", trace, "--outlive", "0.5", "--", program("title_daemon")], out, 30)
    assert rc == 0 and took < 15, (rc, took, out.read_text(errors="replace"))
    recorded = out.read_bytes()
    assert recorded.startswith(b"worker: 0\nworker: 1\n"), recorded
    for i in range(3):
        rc, took = run_in_session([DETREPLAY, "-q", trace], tmp_path / "replay.out", 30)
        assert rc == 0 and took < 10, (i, rc, took, (tmp_path / "replay.out").read_text(errors="replace"))
        assert (tmp_path / "replay.out").read_bytes() == recorded


def test_outlive_needs_a_number(tmp_path: Path) -> None:
    r = detrec("-o", tmp_path / "x.db", "--outlive", "-1", "--", program("hello"))
    assert r.returncode == 2 and b"--outlive needs a number of seconds" in r.stderr
    assert b"Traceback" not in r.stderr
