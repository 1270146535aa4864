"""Hunting: PCT as published (depth, k learned from the hunt, random
priorities for new threads), no starvation under strict chaos, and dethunt's
report (failures by kind, distinct schedules, kept traces with passing
partners). Seeds are fixed, so every figure here is reproducible; the bounds
asserted are PCT's guarantee, not the figures seen."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest

from conftest import BIN, detrec, detreplay, outcome, program, query, run, sample_bin

DETHUNT = BIN / "dethunt"


def dethunt(*args: object, timeout: float = 600, **kw):
    return run([DETHUNT, *args], timeout=timeout, **kw)


def hunt(tmp_path: Path, name: str, *args: object, env: dict | None = None) -> tuple[dict, str]:
    out = tmp_path / name
    r = dethunt("-q", "-o", out, *args, env=env)
    err = r.stderr.decode()
    assert r.returncode in (0, 1), err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["runs"] == len(summary["by_seed"]), err
    return summary, err


def test_pct_depth_one_bug_found_at_least_one_run_in_n(tmp_path: Path) -> None:
    # the first-created worker runs last: depth 1, n = 4 threads, so PCT
    # finds it with probability >= 1/4 per run
    s, err = hunt(tmp_path, "fl", "--strict", "--depth", "1", "--runs", "100", "-j", "2", "--seed", "1",
                  program("first_last"))
    assert s["runs"] == 100, err
    assert s["failed"] >= 15, err  # binomial(100, 1/4): below 15 has probability < 1%
    assert list(s["kinds"]) == ["exit 1"], err


def test_pct_depth_two_needs_a_change_point(tmp_path: Path) -> None:
    # a lost update needs one thread preempted between its two critical
    # sections: never at depth 1 (no change point), found at depth 2
    d1, err1 = hunt(tmp_path, "d1", "--strict", "--depth", "1", "--runs", "60", "-j", "2", "--seed", "1",
                    program("split_increment"))
    d2, err2 = hunt(tmp_path, "d2", "--strict", "--depth", "2", "--runs", "60", "-j", "2", "--seed", "1",
                    program("split_increment"))
    assert d1["runs"] == d2["runs"] == 60
    assert d1["failed"] == 0, err1
    assert d2["failed"] >= 1, err2
    # every failure of depth 2 came from a run with one change point
    trace = Path(d2["kinds"]["exit 1"]["trace"])
    points = query(trace, "SELECT value FROM meta WHERE key = 'pct_change_points'")[0][0]
    assert len(json.loads(points)) == 1


def test_k_is_learned_from_the_runs_before(tmp_path: Path) -> None:
    s, err = hunt(tmp_path, "k", "--strict", "--runs", "8", "--seed", "5", sample_bin("bank_check_then_act"), "20")
    runs = s["by_seed"]
    assert [r["seed"] for r in runs] == list(range(5, 13))
    assert runs[0]["pct_k"] == 1000  # nothing learned yet
    for i in range(1, len(runs)):  # -j 1: run i started when runs 0..i-1 were done
        assert runs[i]["pct_k"] == statistics.median_low(r["events"] for r in runs[:i]), err
    # the trace says how its change points were drawn: d-1 of them, in 1..k
    kept = [Path(k["trace"]) for k in s["kinds"].values()] or []
    for trace in kept:
        meta = dict(query(trace, "SELECT key, value FROM meta WHERE key LIKE 'pct_%'"))
        points = json.loads(meta["pct_change_points"])
        assert int(meta["pct_depth"]) == 3 and len(points) == 2
        assert all(1 <= p <= int(meta["pct_k"]) for p in points)


def test_k_over_memory_points_is_learned_the_same_way(tmp_path: Path) -> None:
    """A program built with det-cc --sched-points=memory: PCT's steps are its
    memory points (far more than its events), learned as events are, and
    the trace says what its change points counted."""
    s, err = hunt(tmp_path, "km", "--strict", "--runs", "6", "--seed", "3", "--stop-at-first",
                  sample_bin("check_then_act_flag.mem"), "8")
    runs = s["by_seed"]
    assert len(runs) >= 2 and s["kinds"], err  # (seed 3: the bug at its fourth run)
    assert runs[0]["pct_k"] == 1000, err
    assert all(r["steps"] > r["events"] for r in runs), err  # points, not events
    for i in range(1, len(runs)):
        assert runs[i]["pct_k"] == statistics.median_low(r["steps"] for r in runs[:i]), err
    for k in s["kinds"].values():
        meta = dict(query(Path(k["trace"]), "SELECT key, value FROM meta WHERE key LIKE 'pct_%'"))
        assert meta["pct_over"] == "memory points" and int(meta["pct_depth"]) == 3, meta
        replay = detreplay(k["trace"])
        assert "outcome matches" in replay.stderr.decode(), replay.stderr.decode()


@pytest.mark.parametrize("mode", ["yield", "trylock", "poll", "read", "lockpoll"])
def test_spinning_thread_never_starves_the_one_it_waits_for(tmp_path: Path, mode: str) -> None:
    """main polls for a flag the second thread sets after work of its own;
    whenever the setter's priority is lower, only main deferring to it lets
    the run end. 100 seeds: 100 runs end by themselves, none by the watchdog
    (which would say so), none by the timeout."""
    s, err = hunt(tmp_path, mode, "--strict", "--runs", "100", "-j", "2", "--seed", "1", "--timeout", "30",
                  program("spin_poll"), mode)
    assert s["runs"] == 100 and s["failed"] == 0, err
    polled = [int(re.match(r"polled (\d+) times", r["tail"][0]).group(1)) for r in s["by_seed"]]
    assert sum(p > 0 for p in polled) >= 50, polled  # main did wait for the setter, in most runs
    assert not [r for r in s["by_seed"] if "watchdog" in r["message"]], err


def test_pct_recordings_replay_exactly(tmp_path: Path) -> None:
    """Runs with change points and pollers deferring replay exactly: the
    recorded schedule is what replay follows."""
    cases = [(sample_bin("racy_counter"), ["2000"]), (program("spin_poll"), ["lockpoll"]),
             (program("spin_poll"), ["trylock"]), (program("split_increment"), [])]
    for exe, args in cases:
        for seed in (1, 2, 3):
            trace = tmp_path / f"{exe.name}-{args}-{seed}.db"
            r = detrec("-q", "--chaos", "--strict", "--seed", str(seed), "--pct-k", "200", "-o", trace, exe, *args)
            rec = outcome(trace)
            for i in range(3):
                rr = detreplay(trace)
                assert rr.returncode == rec["exit_code"] and rr.stdout == r.stdout, \
                    f"{exe.name} {args} seed {seed}, replay {i + 1}: {rr.stderr.decode()}"


def test_dethunt_reports_kinds_and_keeps_a_passing_partner_for_each(tmp_path: Path) -> None:
    # the first run fails (FAIL_ONCE): it still gets a passing partner
    import os

    env = dict(os.environ, FAIL_ONCE=str(tmp_path / "once"))
    out = tmp_path / "kinds"
    r = dethunt("--strict", "--runs", "30", "--seed", "1", "-o", out, program("fail_kinds"), env=env)
    err = r.stderr.decode()
    assert r.returncode == 1, err
    head = re.search(r"dethunt: 30 run\(s\) in [\d.]+ s \(([\d.]+) runs/s\), (\d+) failed in (\d+) kind\(s\); "
                     r"(\d+) distinct schedule\(s\)", err)
    assert head, err
    s = json.loads((out / "summary.json").read_text())
    assert float(head.group(1)) > 0 and int(head.group(2)) == s["failed"] and int(head.group(4)) > 1
    kinds = s["kinds"]
    assert set(kinds) == {"assertion `winner != 1' failed", "exit 3", "exit 4"}, err
    assert kinds["exit 4"]["first_seed"] == 1 and kinds["exit 4"]["runs"] == 1
    assert sum(k["runs"] for k in kinds.values()) == s["failed"]
    for name, k in kinds.items():
        fail, passing = Path(k["trace"]), Path(k["passing"])
        assert (fail.stat().st_mode & 0o777) == 0o600 and (passing.stat().st_mode & 0o777) == 0o600
        assert outcome(passing)["exit_code"] == 0
        # the kept trace is the kind's lowest seed, and it replays 3/3
        seed = int(query(fail, "SELECT value FROM meta WHERE key = 'chaos_seed'")[0][0])
        assert seed == k["first_seed"]
        for _ in range(3):
            if name == "exit 4":  # the world as the first run found it
                (tmp_path / "once").unlink(missing_ok=True)
            else:
                (tmp_path / "once").touch()
            rr = detreplay(fail, env=env)
            assert "outcome matches" in rr.stderr.decode(), rr.stderr.decode()
        d = run([BIN / "detdiff", passing, fail])
        assert d.returncode in (0, 1) and d.stdout, d.stderr.decode()
        assert f"detdiff {passing} {fail}" in err
    # only kept runs became traces: each kind's first failure, and its
    # passing partner (kinds waiting for a partner at once share one)
    assert len(kinds) + 1 <= s["traces_converted"] <= 2 * len(kinds), s["traces_converted"]
    assert not any(r["converted"] for r in s["by_seed"])
    # every run is listed by seed, with its schedule's hash
    assert [r["seed"] for r in s["by_seed"]] == list(range(1, 31))
    assert len({r["schedule"] for r in s["by_seed"]}) == int(head.group(4))


def test_strict_deadlock_is_reported_as_one(tmp_path: Path) -> None:
    s, err = hunt(tmp_path, "dl", "--strict", "--runs", "4", "-j", "2", "--seed", "1", "--timeout", "2",
                  sample_bin("lock_order_inversion"), "300")
    assert "deadlock" in s["kinds"], err
    assert re.search(r"deadlock: T\d holds mutex \d+ (\(\w+\) )?and waits for mutex \d+", err), err


def test_until_fail_first_run_failing_still_gets_a_passing_run(tmp_path: Path) -> None:
    import os

    env = dict(os.environ, FAIL_ONCE=str(tmp_path / "once"))
    out = tmp_path / "f.db"
    # (the search for a passing partner stays within the runs asked for;
    # the first run's exit 4 does not replay once FAIL_ONCE's file is there,
    # so with runs left the hunt goes on to a failure that does)
    r = detrec("--chaos", "--strict", "--seed", "1", "--runs", "40", "-o", out, program("fail_kinds"), env=env)
    err = r.stderr.decode()
    assert r.returncode in (4, 3, 134), err
    assert re.search(r"^detrec: failure after \d+ run\(s\).*, a passing run to ", err, re.M), err
    assert outcome(tmp_path / "f-pass.db")["exit_code"] == 0
    assert "distinct schedule" in err and "runs/s" in err


def test_dethunt_bad_usage_is_one_line(tmp_path: Path) -> None:
    for args in (["--runs", "0", "x"], ["--depth", "12", "--strict", "x"], ["--cluster", "a", "--cluster-file", "b",
                                                                            "x"]):
        r = dethunt(*args)
        assert r.returncode == 2 and b"Traceback" not in r.stderr, r.stderr.decode()
    r = dethunt("-o", tmp_path / "h", tmp_path / "no-such-program")
    assert r.returncode != 0 and len(r.stderr.decode().strip().splitlines()) == 1, r.stderr.decode()


def test_dethunt_refuses_a_directory_that_is_not_its_own(tmp_path: Path) -> None:
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    r = dethunt("--runs", "1", "-o", other, program("first_last"))
    assert r.returncode == 2 and b"notes.txt" in r.stderr and b"Traceback" not in r.stderr, r.stderr.decode()
    assert (other / "notes.txt").read_text() == "keep me"
    f = tmp_path / "afile"
    f.write_text("x")
    r = dethunt("--runs", "1", "-o", f, program("first_last"))
    assert r.returncode == 2 and b"not a directory" in r.stderr, r.stderr.decode()


@pytest.mark.parametrize("args,kind,timeout", [(["crash", "segv"], "signal SIGSEGV", "30"),
                                               (["crash", "fpe"], "signal SIGFPE", "30"),
                                               (["spinner"], "timeout", "1")])
def test_failure_kinds_signal_and_timeout(tmp_path: Path, args: list[str], kind: str, timeout: str) -> None:
    # a thread dies of a fault; two threads lock and unlock for ever (no
    # deadlock: a timeout). No run passes: the hunt looks for a passing
    # partner within its runs only, then says there is none.
    s, err = hunt(tmp_path, "k", "--runs", "2", "--seed", "1", "--timeout", timeout, program(args[0]), *args[1:])
    assert list(s["kinds"]) == [kind], err
    assert s["failed"] == s["runs"] == 2 and "no passing run found" in err, err
