"""Slow statistical runs (`make stress`, not part of `make test`): many
recordings and many replays each, where a rare replay failure would hide
in the handful `make test` does."""

from __future__ import annotations

from pathlib import Path

import pytest
from servers import SERVERS, check_recording, record, replays_to_the_end, server_dir

from conftest import detrec, detreplay, gdb_batch, marks, outcome, program, query, samples

pytestmark = pytest.mark.stress


def expected_status(trace: Path) -> int:
    o = outcome(trace)
    if o["status"] == "timeout":
        return 124
    return 128 + o["signal"] if o["signal"] is not None else o["exit_code"]


def replay_n(trace: Path, n: int, *mode: str) -> None:
    want = expected_status(trace)
    for i in range(n):
        r = detreplay("-q", *mode, trace)
        assert r.returncode == want, f"replay {i + 1} {mode}: {r.stderr.decode()}"


@pytest.mark.parametrize("s", [s for s in samples() if s.bug], ids=lambda s: s.name)
def test_heisenbug_replays_100_times(s, tmp_path: Path) -> None:
    trace = tmp_path / f"{s.name}.db"
    mode = ["--strict", "--chaos"] if s.strict else []
    timeout = ["--timeout", "5"] if s.hang else []
    r = detrec("-q", *mode, *timeout, "--until-fail", "1000", "-j", "2", "-o", trace, "--", s.path, *s.test_args)
    assert outcome(trace)["status"] != "exited" or outcome(trace)["exit_code"] != 0, r.stderr.decode()
    replay_n(trace, 100)
    if not s.strict:
        replay_n(trace, 50, "--relaxed")


# signal_race under parallel chaos: its SIGALRM handler's ticks and the
# delays at each of its ~400k events make a run take ~40 s, past
# --until-fail's 20 s per-run timeout before any run passed: the escalation
# keeps a hung run, not the torn record (found 2026-11-28; not fixed yet).
SLOW_UNDER_CHAOS = {"signal_race": "a run under parallel chaos outlasts the 20 s first-run timeout"}


@pytest.mark.parametrize("s", [pytest.param(s, marks=pytest.mark.xfail(reason=SLOW_UNDER_CHAOS[s.name], strict=False))
                               if s.name in SLOW_UNDER_CHAOS else s for s in samples() if s.bug],
                         ids=lambda s: s.name)
def test_default_escalation_finds_every_sample_bug_within_100_runs(s, tmp_path: Path) -> None:
    """--until-fail's default (parallel chaos, then PCT) finds each sample's
    bug within 100 runs and says which stage did; deadlocks end their runs
    at once (no --timeout given: each used to wait 20 s)."""
    trace = tmp_path / f"{s.name}.db"
    r = detrec("--until-fail", "100", "-j", "2", "-o", trace, "--", s.path, *s.test_args, timeout=900)
    err = r.stderr.decode()
    assert r.returncode != 0 and "found by " in err, err
    assert s.bug in err or s.bug in outcome(trace)["message"] or s.bug.encode() in outcome(trace)["stdout_tail"], err


def test_strict_racy_counter_many_recordings(tmp_path: Path) -> None:
    for k in range(10):
        trace = tmp_path / f"racy{k}.db"
        r = detrec("-q", "--strict", "-o", trace, "--", samples_path("racy_counter"))
        recorded = r.stdout
        for _ in range(20):
            rr = detreplay("-q", trace)
            assert rr.stdout == recorded


def test_pipeline_many_recordings(tmp_path: Path) -> None:
    for k in range(20):
        trace = tmp_path / f"p{k}.db"
        r = detrec("-q", "-o", trace, "--", "/bin/sh", "-c", "seq 100000 | shuf | sort -R | head -5")
        assert r.returncode == 0, r.stderr.decode()
        for _ in range(5):
            rr = detreplay("-q", trace)
            assert rr.returncode == 0 and rr.stdout == r.stdout, rr.stderr.decode()


def test_same_seed_same_schedule(tmp_path: Path) -> None:
    for seed in range(1, 21):
        a, b = tmp_path / f"a{seed}.db", tmp_path / f"b{seed}.db"
        for t in (a, b):
            detrec("-q", "--chaos", "--strict", "--seed", str(seed), "-o", t, "--", samples_path("flag_handoff"))
        sql = "SELECT tid, idx, kind, obj, result, aux FROM events ORDER BY seq"
        assert query(a, sql) == query(b, sql), f"seed {seed}"


def samples_path(name: str) -> Path:
    return next(s.path for s in samples() if s.name == name)


@pytest.mark.parametrize("name", sorted(SERVERS))
def test_server_replays_issue_22_targets(name: str) -> None:
    """Issue 22's targets: each server replays 20 of 20 default, 10 of 10
    relaxed, 10 of 10 strict and 3 of 3 under gdb (to its recorded end)."""
    srv = SERVERS[name]
    with server_dir(f"{name}-default") as d, server_dir(f"{name}-strict") as ds:
        trace, took = record(srv, d)
        check_recording(srv, d, trace, took)
        strict, took = record(srv, ds, "--strict")
        check_recording(srv, ds, strict, took)
        for n, t, mode in ((20, trace, ()), (10, trace, ("--relaxed",)), (10, strict, ())):
            for _ in range(n):
                replays_to_the_end(t, *mode)
        for t in (trace, strict, strict):
            out = gdb_batch(t, "det goto end", 'printf "@ev %d\\n", $det_event', timeout=900)
            assert marks(out, "ev") == [[outcome(t)["events"]]] and "divergence" not in out, out[-3000:]


def test_cached_clock_relaxed_replays(tmp_path: Path) -> None:
    """A relaxed replay orders objects, not the whole run: clock reads, sleeps
    and each thread's next event after one keep their recorded order among
    themselves, so the worker's round after its sleep comes after the clock
    thread's store made while it slept (main: 0 of 5 relaxed replays). The
    worker reads the cached clock without a lock, a race relaxed replay does
    not promise to repeat: 30/30 on a quiet machine, and a CI run at load saw
    one of 10 diverge. Counted here, at least 45 of 50."""
    trace = tmp_path / "clock.det"
    r = detrec("-o", trace, "--", program("cached_clock"))
    assert r.returncode == 0, r.stderr.decode()
    same = sum(detreplay("-q", "--relaxed", trace).stdout == r.stdout for _ in range(50))
    assert same >= 45, f"{same} of 50 relaxed replays printed what the recording did"
