"""A kept trace is a verified trace (issue 23, 5 and 8): `detrec --verify`
replays the recording once and says "verified: replays" or why not (the
first divergence, and --strict for a default-mode trace); --until-fail,
--runs and dethunt keep a failure only once its trace replays it, recording
it again in strict mode when a default-mode trace does not, and say when even
that fails. The verdict is kept in the trace (meta `verified`: detrec info).

tests/programs/late_check.c fails natively when a worker's plain write wins
a race with main's sleep: replay skips the sleep, so its default-mode trace
takes another lock (a divergence); strict mode orders the race.
tests/programs/plain_count.c loses plain adds between events in parallel,
never one thread at a time: strict mode cannot reproduce its failure."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import BIN, detrec, detreplay, program, query, replay_matches, run

DETHUNT = BIN / "dethunt"
TRIES = 5  # recordings until one fails natively (a worker slowed by load may lose the race the other way)
# --until-fail's runs: a passing partner, then a strict re-recording, all within them
HUNT_RUNS = 40


def verdict(trace: Path) -> dict:
    rows = query(trace, "SELECT value FROM meta WHERE key = 'verified'")
    assert rows, f"{trace} has no verdict"
    return json.loads(rows[0][0])


def mode(trace: Path) -> str:
    return query(trace, "SELECT value FROM meta WHERE key = 'mode'")[0][0]


def test_verify_names_the_divergence_of_a_default_trace_with_a_race(tmp_path: Path) -> None:
    trace = tmp_path / "late.db"
    for _ in range(TRIES):
        r = detrec("--verify", "-o", trace, program("late_check"))
        if r.returncode == 1:  # the program's status, kept
            break
    err = r.stderr.decode()
    assert r.returncode == 1, f"late_check never failed natively in {TRIES} recordings\n{err}"
    line = next((ln for ln in err.splitlines() if "does not replay" in ln), None)
    assert line is not None, err
    # one line: the first divergence (another lock at the check), and what to do
    assert "divergence at event" in line and "mutex_lock" in line and "--strict" in line, line
    assert "verified: replays" not in err
    v = verdict(trace)
    assert v["replays"] is False and "divergence at event" in v["why"], v
    info = detrec("info", trace).stdout.decode()
    assert "verified:   does not replay: divergence" in info, info
    # quiet still says it: a failed verification is never silent
    r = detrec("-q", "--verify", "-o", trace, program("late_check"))
    if r.returncode == 1:
        assert "does not replay" in r.stderr.decode(), r.stderr.decode()


def test_verify_says_a_trace_that_replays_does(tmp_path: Path) -> None:
    trace = tmp_path / "hello.db"
    r = detrec("--verify", "-o", trace, program("hello"))
    err = r.stderr.decode()
    assert r.returncode == 0, err
    assert "detrec: verified: replays" in err, err
    assert verdict(trace) == {"replays": True, "why": ""}
    assert "verified:   replays" in detrec("info", trace).stdout.decode()
    replay_matches(trace, [], 1)  # the verdict did not spoil the trace (its seal, its validation)


def test_until_fail_keeps_a_strict_trace_that_replays_the_failure(tmp_path: Path) -> None:
    trace = tmp_path / "late.db"
    r = detrec("--until-fail", str(HUNT_RUNS), "--mode", "plain", "-o", trace, program("late_check"))
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert "the failing run's trace does not replay: divergence at event" in err, err
    assert "again in strict mode" in err, err
    assert "verified: recorded again in strict mode" in err, err
    assert "record it again with: detrec --chaos --strict --seed" in err, err
    assert mode(trace) == "strict"
    assert verdict(trace)["replays"] is True
    for i in range(5):  # the trace the user holds fails, every time
        rr = detreplay(trace)
        rerr = rr.stderr.decode()
        assert rr.returncode == 1, f"replay {i + 1}: {rerr}"
        assert "outcome matches the recording: exit 1" in rerr, rerr
        assert b"BUG" in rr.stdout, rr.stdout


def test_until_fail_says_when_even_strict_mode_does_not_reproduce(tmp_path: Path) -> None:
    trace = tmp_path / "count.db"
    r = detrec("--until-fail", str(HUNT_RUNS), "--mode", "plain", "-o", trace, program("plain_count"))
    err = r.stderr.decode()
    assert r.returncode == 1, err
    # its strict runs count in the N runs: the hunt ends there
    assert "the failing run's trace does not replay" in err, err
    assert re.search(r"strict mode did not reproduce it in \d+ run\(s\)", err), err
    assert f"the last one's trace, {trace}, is kept marked unverified" in err, err
    assert mode(trace) == "record"
    assert verdict(trace)["replays"] is False


def test_dethunt_keeps_a_strict_trace_that_replays_the_failure(tmp_path: Path) -> None:
    out = tmp_path / "hunt"
    r = run([DETHUNT, "--runs", "3", "--seed", "7", "-o", out, program("late_check")], timeout=300)
    err = r.stderr.decode()
    assert r.returncode == 1, err
    trace = out / "exit-1.db"
    kind = json.loads((out / "summary.json").read_text())["kinds"]["exit 1"]
    assert kind["verified"] is True, kind
    seed = kind["first_seed"]
    # the failing run's seed, now a PCT seed
    assert f"exit 1: verified: recorded again in strict mode (seed {seed})" in err, err
    assert f"exit 1: repeat it with: detrec --chaos --strict --seed {seed} " in err, err
    assert mode(trace) == "strict" and verdict(trace)["replays"] is True
    for i in range(3):
        rr = detreplay(trace)
        assert rr.returncode == 1 and b"BUG" in rr.stdout, f"replay {i + 1}: {rr.stderr.decode()}"
