"""detrec --until-fail's budget and its deadlocks: a run whose threads all
wait for each other ends at once (not at the per-run timeout), named with
its cycle, in strict mode and PCT too (their emulated condition and barrier
waits); --until-fail N never runs more than N runs, a passing partner's
and strict re-recordings included, and its figures agree with each other."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from conftest import detrec, detreplay, outcome, program


def test_deadlock_ends_its_run_at_once(tmp_path: Path) -> None:
    # deadlock.c deadlocks on every run (a barrier, then two locks in
    # opposite orders); each run used to wait for the 20 s per-run timeout
    trace = tmp_path / "dl.db"
    t0 = time.monotonic()
    r = detrec("--until-fail", "5", "-o", trace, "--", program("deadlock"), timeout=120)
    took = time.monotonic() - t0
    err = r.stderr.decode()
    assert r.returncode == 124, err
    assert took < 30, f"{took:.1f} s\n{err}"  # (was 5 x 20 s and more)
    m = re.search(r"^detrec: (\d+) run\(s\) in", err, re.M)
    assert m and int(m.group(1)) <= 5, err
    assert re.search(r"^detrec: hung run after 1 run\(s\)(?: \(\d in all\))?: deadlock: T1 holds mutex \d+ "
                     r"\(ledger\) and waits for mutex \d+ .*; T2 holds mutex .*det ended the run after [\d.]+ s",
                     err, re.M), err
    o = outcome(trace)
    assert o["message"].startswith("deadlock: T1 holds mutex"), o
    assert o["duration_ns"] < 10e9, o


def test_no_more_runs_than_asked_for(tmp_path: Path) -> None:
    # crash aborts on every run: no run passes, so the hunt used to go on
    # for up to 20 more runs looking for a passing partner
    trace = tmp_path / "c.db"
    r = detrec("--until-fail", "3", "-j", "2", "-o", trace, "--", program("crash"), "abort", timeout=120)
    err = r.stderr.decode()
    assert r.returncode == 134, err
    m = re.search(r"^detrec: (\d+) run\(s\) in", err, re.M)
    assert m, err
    total = int(m.group(1))
    assert total <= 3, err
    f = re.search(r"^detrec: failure after (\d+) run\(s\)(?: \((\d+) in all\))?:", err, re.M)
    assert f, err
    assert int(f.group(2) or f.group(1)) == total, err  # the two lines count the same runs
    assert "no run passed within the 3 run(s) asked for" in err, err


@pytest.mark.parametrize("mode", [["--strict"], ["--mode", "pct"]], ids=["strict", "pct"])
def test_strict_lost_wakeup_ends_its_run_at_once(tmp_path: Path, mode: list[str]) -> None:
    # lost_wakeup_always.c: T2 waits on a condition whose one signal came
    # before it waited, T0 joins T2. Strict mode emulates the condition wait,
    # which was not marked blocked in T2's slot: each run waited for the 20 s
    # per-run timeout, and the report left T2 out
    trace = tmp_path / "lw.db"
    t0 = time.monotonic()
    r = detrec(*mode, "--until-fail", "2", "-o", trace, "--", program("lost_wakeup_always"), timeout=120)
    took = time.monotonic() - t0
    err = r.stderr.decode()
    assert r.returncode == 124, err
    assert took < 15, f"{took:.1f} s\n{err}"  # (was 2 x 20 s)
    assert re.search(r"^detrec: hung run after 1 run\(s\)(?: \(\d in all\))?: all threads blocked: "
                     r"T0 in thread_join on T2; T2 in cond_wait on cond \d+ \(ready\); "
                     r"det ended the run after [\d.]+ s", err, re.M), err
    o = outcome(trace)
    assert o["duration_ns"] < 10e9, o


def test_strict_barrier_never_full_ends_its_run_at_once(tmp_path: Path) -> None:
    # barrier_never_full.c: two threads wait in a barrier for three. Strict
    # mode emulates the barrier wait, which was not marked blocked either
    trace = tmp_path / "b.db"
    t0 = time.monotonic()
    r = detrec("--strict", "--until-fail", "1", "-o", trace, "--", program("barrier_never_full"), timeout=60)
    took = time.monotonic() - t0
    err = r.stderr.decode()
    assert r.returncode == 124, err
    assert took < 15, f"{took:.1f} s\n{err}"  # (was 20 s)
    assert re.search(r"^detrec: hung run after 1 run\(s\)(?: \(\d in all\))?: all threads blocked: "
                     r"T0 in barrier_arrive on barrier \d+ \(gate\); T1 in barrier_arrive on barrier \d+ \(gate\); "
                     r"det ended the run after [\d.]+ s", err, re.M), err


@pytest.mark.parametrize("size", [4, 300_000], ids=["fits-the-pipe", "larger-than-the-pipe"])
def test_piped_input_reaches_every_run(tmp_path: Path, size: int) -> None:
    # --until-fail reads a piped stdin once and gives it to every run: input
    # the pipe holds whole is written before the run goes on, more by a
    # thread as the program reads. The passing run kept greeted the name
    # (its outcome says; the runs' own output is not shown), holds the input
    # the program read, and replays it.
    trace = tmp_path / "p.db"
    data = b"ann\n" + b"x" * (size - 4)
    r = detrec("--until-fail", "3", "--mode", "plain", "-o", trace, "--", program("prompt"), input=data)
    err = r.stderr.decode()
    assert r.returncode == 0, err
    passed = tmp_path / "p-pass.db"
    assert outcome(passed)["stdout_tail"] == b"name? hello ann; isatty: stdin 0 stdout 0 stderr 0\n", outcome(passed)
    r = detreplay(passed)
    assert r.returncode == 0 and b"outcome matches" in r.stderr, r.stderr.decode()
    assert r.stdout == b"name? hello ann; isatty: stdin 0 stdout 0 stderr 0\n", r.stdout


@pytest.mark.parametrize("script", ["seq 100000; echo started", "(sleep 0.3; seq 100000) & echo started"],
                         ids=["program", "child-outliving-it"])
def test_a_runs_output_is_read_while_it_runs(tmp_path: Path, script: str) -> None:
    # A hunt's run has its outputs read by the loop that waits for it (no
    # thread): more than a pipe holds, from the program or from a child
    # that goes on writing after the program's first process ended, must be
    # read as it comes (else the writer waits on a full pipe, and the child
    # is killed at --outlive's end, its output cut).
    trace = tmp_path / "o.db"
    r = detrec("--until-fail", "2", "--mode", "plain", "--outlive", "5", "-o", trace, "--", "/bin/sh", "-c", script)
    assert r.returncode == 0, r.stderr.decode()
    o = outcome(tmp_path / "o-pass.db")
    assert o["status"] == "exited" and not o["message"], o
    assert o["stdout_bytes"] == len("started\n") + sum(len(f"{i}\n") for i in range(1, 100001)), o
