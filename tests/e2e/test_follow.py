"""detrec --follow: a live replica replays the run while it is recorded
(detreplay --follow on the capture log). It follows to the end, says a
divergence the moment it happens while the program still runs, reports its
lag at the end and on SIGUSR1, and whatever happens to it (killed, crashed,
too far behind) the program goes on, detrec exits with the program's status
and the trace is complete."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import DETREC, detrec, detreplay, outcome, program, sample_bin


def _events(stderr: bytes) -> int:
    m = re.search(rb"; (\d+) events;", stderr)
    assert m, stderr.decode()
    return int(m[1])


def _children(pid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d))
    return out


def _replica_of(detrec_pid: int, timeout: float = 10.0) -> int:
    """The pid of detrec's `detreplay --follow`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in _children(detrec_pid):
            try:
                if b"--follow\0/dev/fd/" in Path(f"/proc/{c}/cmdline").read_bytes():
                    return c
            except OSError:
                pass
        time.sleep(0.02)
    raise AssertionError("detrec started no replica")


class Run:
    """detrec --follow running, its stderr lines timed as they come."""

    def __init__(self, *args: str | os.PathLike[str]) -> None:
        self.t0 = time.monotonic()
        self.p = subprocess.Popen([DETREC, "--follow", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  stdin=subprocess.DEVNULL)
        self.lines: list[tuple[float, str]] = []
        self.out: list[tuple[float, str]] = []
        self.readers = [threading.Thread(target=self._read, args=(self.p.stderr, self.lines)),
                        threading.Thread(target=self._read, args=(self.p.stdout, self.out))]
        for r in self.readers:
            r.start()

    def _read(self, stream, into: list) -> None:
        for line in stream:
            into.append((time.monotonic() - self.t0, line.decode(errors="replace").rstrip("\n")))

    def wait(self, timeout: float = 60) -> int:
        rc = self.p.wait(timeout)
        for r in self.readers:
            r.join()
        return rc

    def text(self) -> str:
        return "\n".join(line for _, line in self.lines)

    def first(self, pattern: str) -> tuple[float, str] | None:
        return next(((t, line) for t, line in self.lines if re.search(pattern, line)), None)


@pytest.mark.parametrize("prog,args", [(sample_bin("bounded_buffer"), []), (sample_bin("fork_pool"), []),
                                       (program("follow_unseen"), ["-", "0.5"])],
                         ids=["bounded_buffer", "fork_pool", "steady"])
def test_replica_follows_to_the_end(prog: Path, args: list[str], tmp_path: Path) -> None:
    for i in range(3):
        trace = tmp_path / f"run{i}.db"
        r = detrec("--follow", "-o", trace, "--", prog, *args)
        err = r.stderr.decode()
        n = _events(r.stderr)
        assert re.search(rf"replica followed all {n} events: lag at most \d+ events / [\d.]+ s", err), err
        o = outcome(trace)
        assert o["status"] == "exited" and r.returncode == o["exit_code"], err
        assert "diverged" not in err, err


def test_replica_exit_waits_for_the_other_threads_last_events(tmp_path: Path) -> None:
    """exit_busy's main thread exits while its worker still takes a lock in
    a loop: the worker's events logged before the process died happened in
    the recording, so the replica's exit waits for them (it learns every
    thread's count when the capture ends). On main the replica's exit ended
    its process before them: "replica ended early ... after M of N events"
    in 4 of 5 runs."""
    for i in range(3):
        trace = tmp_path / f"exit{i}.db"
        r = detrec("--follow", "-o", trace, "--", program("exit_busy"))
        err = r.stderr.decode()
        assert r.returncode == 0 and r.stdout == b"main exits\n", err
        n = _events(r.stderr)
        assert re.search(rf"replica followed all {n} events", err), err


def test_divergence_said_at_once_while_the_program_runs(tmp_path: Path) -> None:
    """follow_unseen takes another branch in any replay (a file it made with
    a raw system call is there): 1.5 s into the run (the replica is up by
    then) it prints "unseen" and takes it; the replica says so, naming the
    event, within a second (the issue's target), while the program runs on
    for 2.5 s more; detrec exits with the program's status and the trace
    has the whole run."""
    trace = tmp_path / "div.db"
    run = Run("-o", trace, "--", program("follow_unseen"), tmp_path / "mark", "4", "1.5")
    rc = run.wait()
    err = run.text()
    assert rc == 0, err
    said = run.first(r"^detreplay: replica diverged: divergence at event \d+ \(T0\): recorded mutex_lock\(.*\), "
                     r"got cond_signal\(.*\) at follow_unseen\.c:\d+")
    assert said is not None, err
    unseen = [t for t, line in run.out if line == "unseen"]
    done = [t for t, line in run.out if line.startswith("done")]
    assert unseen and done, run.out
    assert said[0] - unseen[0] < 1.0, (said, unseen)  # within 1 s of the event
    assert said[0] < done[0] - 1.0, (said, done)  # while the program still ran
    assert re.search(r"detrec: replica diverged after \d+ of \d+ events \(said above\)", err), err
    o = outcome(trace)
    assert o["status"] == "exited" and o["exit_code"] == 0
    assert _events(err.encode()) > 1000  # the 4 s of the worker's locks are in the trace


def test_lag_on_request_and_at_the_end(tmp_path: Path) -> None:
    run = Run("-o", tmp_path / "lag.db", "--", program("follow_unseen"), "-", "5")
    _replica_of(run.p.pid)  # (detrec takes SIGUSR1 from then on)
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline and not run.first("replica following"):  # (a loaded machine: it may start late)
        os.kill(run.p.pid, signal.SIGUSR1)
        time.sleep(0.5)
    rc = run.wait()
    err = run.text()
    assert rc == 0, err
    now = run.first(r"^detrec: replica following: (\d+) of (\d+) events done, (\d+) events / ([\d.]+) s behind$")
    assert now is not None, err
    m = re.search(r"replica followed all (\d+) events: lag at most (\d+) events / ([\d.]+) s \(mean ([\d.]+) s\); "
                  r"(\d+) events / ([\d.]+) s behind when the program ended", err)
    assert m, err
    # steady load (a lock a millisecond): once started, the replica keeps up
    assert float(m[4]) < 1.0, err


def _ends_alone(run: Run, trace: Path, pattern: str) -> str:
    rc = run.wait()
    err = run.text()
    assert rc == 0, err
    assert re.search(pattern, err, re.M), err
    assert [line for _, line in run.out] == ["done 1"]
    o = outcome(trace)
    assert o["status"] == "exited" and o["exit_code"] == 0
    assert _events(err.encode()) > 500, err
    return err


def test_replica_killed(tmp_path: Path) -> None:
    trace = tmp_path / "killed.db"
    run = Run("-o", trace, "--", program("follow_unseen"), "-", "3")
    replica = _replica_of(run.p.pid)
    time.sleep(1.0)
    os.kill(replica, signal.SIGKILL)
    _ends_alone(run, trace, r"^detrec: replica killed by SIGKILL (after \d+ of \d+ events|before it started "
                            r"following); the recording goes on without it$")


def test_replica_crashes(tmp_path: Path) -> None:
    """The replayed program crashes (a SIGSEGV sent to it stands for one)
    while the recording goes on (an end the recording also has within 2 s
    would be judged by detrec, against the program's status)."""
    trace = tmp_path / "crash.db"
    run = Run("-o", trace, "--", program("follow_unseen"), "-", "4")
    replica = _replica_of(run.p.pid)
    deadline = time.monotonic() + 10
    prog = str(program("follow_unseen"))

    def replayed() -> list[int]:  # (not detreplay's watchdog, another child of it)
        return [k for k in _children(replica) if os.path.realpath(f"/proc/{k}/exe") == prog]

    while not (kids := replayed()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert kids, "the replica started no program"
    time.sleep(0.8)
    for k in kids:
        os.kill(k, signal.SIGSEGV)
    _ends_alone(run, trace, r"^detreplay: replica ended early \(killed by SIGSEGV.*\) after \d+ of \d+ events$")


def test_replica_falls_behind(tmp_path: Path) -> None:
    trace = tmp_path / "behind.db"
    run = Run("--follow-max-lag", "50", "-o", trace, "--", program("follow_unseen"), "-", "2")
    # (a busy machine may start the replica's program after the recording is already 50 events ahead)
    _ends_alone(run, trace, r"^detreplay: replica (stopped following|not started): the replica fell \d+ events "
                            r"behind the recording \(at most 50\)$")


@pytest.mark.parametrize("flags", [["--strict"], ["--until-fail", "3"], ["--follow-max-lag", "-1"]])
def test_follow_refuses_what_it_cannot_follow(flags: list[str], tmp_path: Path) -> None:
    r = detrec("--follow", *flags, "-o", tmp_path / "x.db", "--", program("follow_unseen"), "-", "0")
    err = r.stderr.decode()
    assert r.returncode == 2 and err.count("\n") == 3 and "--follow" in err.splitlines()[-1], err
    assert "Traceback" not in err and not (tmp_path / "x.db").exists()


def test_detreplay_follow_bad_input(tmp_path: Path) -> None:
    for args in (["--follow", tmp_path / "none.log"], ["--follow", "x.log", "t.db"], ["--status", "s.json"]):
        r = detreplay(*args, timeout=30)
        err = r.stderr.decode()
        assert r.returncode == 2 and "Traceback" not in err and err.strip(), err


def test_replica_leaves_the_programs_files_alone(tmp_path: Path) -> None:
    """A replica runs the program's code beside it, in the same directory:
    its log lines and pid file go to a copy of its own (an overlay), never
    into the program's files (before: every line twice, and an unlink that
    found the other's file gone)."""
    for i in range(3):
        r = detrec("--follow", "-o", tmp_path / f"w{i}.db", "--", program("follow_writes"), cwd=tmp_path)
        err = r.stderr.decode()
        assert r.returncode == 0 and r.stdout == b"files as expected\n", err
        assert re.search(r"^detrec: replica followed all \d+ events", err, re.M), err
        assert "replica shares" not in err, err
    lines = (tmp_path / "log.txt").read_text().splitlines()
    want = [f"T{t} line {n}" for t in (0, 1) for n in range(200)]
    assert sorted(lines) == sorted(want * 3), f"{len(lines)} lines, want {len(want) * 3}"
    assert not (tmp_path / "run.pid").exists()
