"""Nothing is lost: a program that crashes, aborts, exits early, is killed,
or whose detrec is interrupted or killed still leaves a readable trace, and
the traces of finished runs replay to the same outcome."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import DETREC, detrec, detreplay, outcome, program, program_pid, query, replay_matches

SIGNALS = {"segv": signal.SIGSEGV, "abort": signal.SIGABRT, "assert": signal.SIGABRT, "fpe": signal.SIGFPE}


@pytest.mark.parametrize("mode", sorted(SIGNALS))
def test_crash_leaves_complete_trace(mode: str, tmp_path: Path) -> None:
    trace = tmp_path / "crash.db"
    r = detrec("-o", trace, program("crash"), mode)
    sig = SIGNALS[mode]
    assert r.returncode == 128 + sig, r.stderr.decode()
    o = outcome(trace)
    assert o["status"] == "signaled" and o["signal"] == sig
    # the victim did its 100 lock/unlock pairs before dying
    n = query(trace, "SELECT count(*) FROM events WHERE tid = 1 AND kind IN (10, 14)")[0][0]
    assert n == 200
    for mode_args in ([], ["--relaxed"]):
        rr = detreplay(*mode_args, trace)
        assert rr.returncode == 128 + sig, rr.stderr.decode()
        assert b"outcome matches the recording" in rr.stderr


@pytest.mark.parametrize("flags", [[], ["--strict"]])
def test_abort_caught_by_the_program(flags: list[str], tmp_path: Path) -> None:
    """abort()'s SIGABRT comes from libc's own raise, past det's wrapper:
    it is delivered at once, like a fault, so a handler that jumps back
    runs (before, detrec held it for the thread's next event, and abort
    then killed the program: exit 134 where the program exits 3)."""
    trace = tmp_path / "caught.db"
    r = detrec("-q", *flags, "-o", trace, "--", program("crash"), "caught-abort")
    assert r.returncode == 3, r.stderr.decode()
    assert r.stdout == b"abort caught\n"
    replay_matches(trace, [], 2)


def test_main_exits_while_threads_run(tmp_path: Path) -> None:
    trace = tmp_path / "early.db"
    r = detrec("-o", trace, program("early_exit"))
    assert r.returncode == 0, r.stderr.decode()
    states = dict(query(trace, "SELECT tid, end_state FROM threads"))
    # killed by the exit, in the middle of their loop (maybe waiting for the lock)
    assert states[1] in ("running", "blocked") and states[2] in ("running", "blocked")
    for _ in range(3):
        rr = detreplay(trace)
        assert rr.returncode == 0 and b"outcome matches" in rr.stderr, rr.stderr.decode()
        assert rr.stdout == b"main leaves with the workers running\n"


def test_program_killed_from_outside(tmp_path: Path) -> None:
    trace = tmp_path / "killed.db"
    p = subprocess.Popen([str(DETREC), "-o", str(trace), str(program("spinner"))],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline() == b"running\n"
    time.sleep(0.3)
    pid = program_pid(program("spinner"))
    os.kill(pid, signal.SIGKILL)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGKILL, err.decode()
    o = outcome(trace)
    assert o["status"] == "signaled" and o["signal"] == signal.SIGKILL
    assert o["events"] > 100
    rr = detreplay(trace)
    # the replay reaches the recording's last event, then the threads wait there
    assert b"outcome matches" in rr.stderr or b"events" in rr.stderr, rr.stderr.decode()


def test_ctrl_c_saves_the_trace(tmp_path: Path) -> None:
    trace = tmp_path / "int.db"
    p = subprocess.Popen([str(DETREC), "-o", str(trace), str(program("spinner"))],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    assert p.stdout.readline() == b"running\n"
    time.sleep(0.3)
    os.killpg(p.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err.decode()
    assert b"trace saved to" in err
    o = outcome(trace)
    assert o["status"] == "interrupted"
    assert o["events"] == query(trace, "SELECT count(*) FROM events")[0][0] > 0


def test_detrec_killed_leaves_readable_incomplete_trace(tmp_path: Path) -> None:
    trace = tmp_path / "lost.db"
    p = subprocess.Popen([str(DETREC), "-o", str(trace), str(program("spinner"))],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline() == b"running\n"
    time.sleep(0.5)
    p.kill()
    p.wait()
    time.sleep(0.3)
    # the program died with detrec
    alive = subprocess.run(["pgrep", "-f", str(program("spinner"))], capture_output=True)
    assert alive.returncode == 1, f"the program outlived detrec: {alive.stdout!r}"
    inc = Path(str(trace) + ".incomplete")
    assert inc.exists() and not trace.exists()
    info = detrec("info", inc)
    assert info.returncode == 0, info.stderr.decode()
    assert b"incomplete" in info.stdout
    n = query(inc, "SELECT count(*) FROM events")[0][0]
    assert n > 0
    # The replay says how the recording ended, and never exits 0 (there is
    # no outcome it could have matched).
    rr = detreplay(inc)
    assert rr.returncode == 125, rr.stderr.decode()
    err = rr.stderr.decode()
    assert f"replayed all {n} events of the recording, which did not finish (detrec was killed" in err, err
    assert "matches" not in err


def test_deadlock_timeout_names_the_cycle(tmp_path: Path) -> None:
    from conftest import sample_bin

    trace = tmp_path / "dl.db"
    # 2000 transfers a run: on a loaded machine the two threads seldom overlap
    # in 300 (CI once ran 200 such runs without a deadlock)
    r = detrec("--until-fail", "500", "--timeout", "2", "-o", trace, sample_bin("lock_order_inversion"), "2000")
    err = r.stderr.decode()
    assert r.returncode == 124, err
    assert "deadlock: T1 holds mutex" in err and "T2 holds mutex" in err
    assert "lock_order_inversion.c:" in err  # where each thread waits
    blocked = query(trace, "SELECT tid, kind FROM blocked ORDER BY tid")
    assert (1, 10) in blocked and (2, 10) in blocked  # both in mutex_lock
    rr = detreplay(trace)
    assert rr.returncode == 124, rr.stderr.decode()
    assert b"deadlock: T1 holds mutex" in rr.stderr


def test_until_fail_without_timeout_stops_a_hung_run(tmp_path: Path) -> None:
    """--until-fail -j 2 without --timeout: the per-run timeout comes from the
    passing runs, and a run that hangs where det cannot tell a deadlock (a
    read nobody answers) is a hung run, its blocked threads named."""
    trace = tmp_path / "hang.db"
    r = detrec("--until-fail", "60", "-j", "2", "-o", trace, program("read_hang"), tmp_path / "ran")
    err = r.stderr.decode()
    assert r.returncode == 124, err
    m = re.search(r"^detrec: hung run after \d+ run\(s\)(?: \(\d+ in all\))?: no exit within ([\d.]+) s \(10x the "
                  r"longest of (\d+) passing run\(s\), ([\d.]+) s; --timeout sets it\): all threads blocked: "
                  r"T0 in thread_join on T1; T1 in ", err, re.M)
    assert m, err
    limit, passes, longest = float(m.group(1)), int(m.group(2)), float(m.group(3))
    assert passes >= 1 and abs(limit - max(2.0, 10 * longest)) < 0.01 * limit + 0.001
    assert outcome(trace)["status"] == "timeout"


def test_strict_deadlock_names_the_cycle(tmp_path: Path) -> None:
    from conftest import sample_bin

    trace = tmp_path / "strict.db"
    r = detrec("--strict", "--until-fail", "100", "--timeout", "2", "-o", trace, sample_bin("lock_order_inversion"),
               "300")
    err = r.stderr.decode()
    assert r.returncode == 124, err
    # (ended at once, every thread blocked: not at the 2 s timeout)
    assert re.search(r"deadlock: T1 holds mutex \d+ \(\w\) and waits for mutex \d+ \(\w\); "
                     r"T2 holds .*; det ended the run after [\d.]+ s", err), err
    assert re.search(r"T1 holds mutex \d+ \(\w\) and waits in mutex_lock on mutex \d+ \(\w\) \(held by T2\) at "
                     r"lock_order_inversion\.c:\d+", err), err
    info = detrec("info", trace).stdout.decode()
    assert "wait-for:   deadlock: T1 holds mutex" in info, info
    assert "deadlock: T1 holds mutex" in outcome(trace)["message"]


def test_deadlocked_run_ends_before_its_timeout(tmp_path: Path) -> None:
    """A run stuck in a deadlock ends by itself, at once, whatever --timeout
    says (Ctrl-C used to be the way out before 600 s): a hung run."""
    trace = tmp_path / "stuck.db"
    t0 = time.monotonic()
    r = detrec("--until-fail", "1", "--timeout", "600", "-o", trace, "--", program("deadlock"), timeout=60)
    text = r.stderr.decode()
    assert time.monotonic() - t0 < 30, text
    assert r.returncode == 124, text
    assert re.search(r"^detrec: hung run after 1 run\(s\): deadlock: T1 holds mutex \d+ \(ledger\) and "
                     r"waits for mutex \d+ \(first used at deadlock\.c:\d+\); T2 holds mutex", text, re.M), text
    assert outcome(trace)["status"] == "timeout"


def test_default_mode_race_says_why_and_who_held_which_lock(tmp_path: Path) -> None:
    """two_locks fails by a data race between events: its default-mode
    replay takes another way. detreplay says that this is what the default
    mode does not replay and how to record it, and both it and detdiff say
    which thread held which lock when the program failed: the writer inside
    lock_a, the checker inside lock_b (the cause)."""
    from conftest import ROOT, run

    fail, passing = tmp_path / "race.db", tmp_path / "race-pass.db"
    # (recorded plainly: --until-fail keeps a failure only once its trace
    # replays it, which this default-mode trace does not, test_verify.py)
    for _ in range(10):
        r = detrec("-o", fail, program("two_locks"))
        if r.returncode == 134:
            break
    assert r.returncode == 134, r.stderr.decode()
    src = (ROOT / "tests" / "programs" / "two_locks.c").read_text().splitlines()
    line_a = next(i + 1 for i, ln in enumerate(src) if "pthread_mutex_lock(&lock_a)" in ln)
    line_b = next(i + 1 for i, ln in enumerate(src) if "pthread_mutex_lock(&lock_b)" in ln)
    held = (rf"T1 holds mutex \d+ \(lock_a\), taken at writer at two_locks\.c:{line_a}; "
            rf"T2 holds mutex \d+ \(lock_b\), taken at checker at two_locks\.c:{line_b}")
    # The race does not replay in the default mode: the checker's turn comes
    # before the writer's first store, nearly always (a loaded machine may
    # stall the checker past it, and the failure happens again, as it may
    # in any run); what is checked is what detreplay says when it diverges.
    for _ in range(3):
        rr = detreplay(fail)
        err = rr.stderr.decode()
        if rr.returncode != 134:
            break
    assert rr.returncode == 125, err
    assert "detreplay: the recording was made in the default mode" in err, err
    assert f"detrec --strict --until-fail 500 -o race.db -- {program('two_locks')}" in err, err
    assert re.search(rf"^detreplay: when the recording ended: {held}$", err, re.M), err
    # detdiff against a passing run (no checks, so --force) shows the same.
    r = detrec("-o", passing, program("two_locks"), "0")
    assert r.returncode == 0, r.stderr.decode()
    d = run([ROOT / ".venv" / "bin" / "detdiff", "--force", passing, fail])
    out = d.stdout.decode()
    assert d.returncode == 1, out + d.stderr.decode()
    assert "race.db was recorded in the default mode" in out, out
    section = out[out.index("Locks held when the runs ended:"):]
    in_b = held.replace(r"mutex \d+", r"mutex (\d+(/B\d+)?|B\d+)").replace("; ", "\n  B  ")  # A's numbers, then B's
    assert re.search(r"^  B  " + in_b, section, re.M), section


def test_trace_is_private(tmp_path: Path) -> None:
    trace = tmp_path / "p.db"
    old = os.umask(0)
    try:
        detrec("-o", trace, program("hello"))
    finally:
        os.umask(old)
    assert (trace.stat().st_mode & 0o777) == 0o600


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_stops_until_fail(jobs: str, tmp_path: Path) -> None:
    """One SIGINT to detrec alone (not its program) ends the whole search,
    however it lands between or inside runs."""
    trace = tmp_path / "hunt.db"
    p = subprocess.Popen([str(DETREC), "--until-fail", "100000", "-j", jobs, "-o", str(trace), "--",
                          str(Path(__file__).parents[2] / "samples" / "bin" / "pingpong_ok"), "50"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    time.sleep(1.5)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130, err.decode()
    assert b"interrupted after" in err
    assert not (tmp_path / ".hunt.db.runs").exists()
