"""OpenMP programs built with GCC (libgomp): which thread gets which share of
work and the order of their locks are recorded and replayed
(preload/openmp.c). tests/programs/omp_share.c prints both."""

from __future__ import annotations

import os
import re
from pathlib import Path

from conftest import detrec, detreplay, program, query, replay_matches


def kinds(trace: Path) -> dict[str, int]:
    return dict(query(trace, "SELECT k.name, count(*) FROM events e JOIN event_kinds k ON k.kind = e.kind "
                             "GROUP BY k.name"))


def test_shares_and_locks_replay_as_recorded(tmp_path: Path) -> None:
    for i in range(3):
        trace = tmp_path / f"omp{i}.db"
        r = detrec("-q", "-o", trace, "--", program("omp_share"))
        assert r.returncode == 0, r.stderr.decode()
        out = r.stdout.decode()
        assert re.search(r"^loops [0-9a-f]+ sections [0-3]{4} single [0-3] total 48$", out, re.M), out
        k = kinds(trace)
        # every loop chunk, section and single is a share; every lock use an event
        assert k.get("omp_share", 0) > 4000 // 7, k
        assert k.get("omp_lock", 0) >= 4 * 8 * 4 and k.get("omp_unlock", 0) >= 4 * 8 * 4, k
        assert k.get("omp_testlock", 0) >= 4 and k.get("omp_lock_destroy") == 2, k
        shares = {aux for (aux,) in query(trace, "SELECT DISTINCT e.aux FROM events e JOIN event_kinds k "
                                                 "ON k.kind = e.kind WHERE k.name = 'omp_share'")}
        assert shares == {0, 1, 2, 3}, shares  # long and unsigned long long chunks, sections, single
        replay_matches(trace, [], 2)
        replay_matches(trace, ["--relaxed"], 1)
    # the validator's full pass knows omp locks (nest locks are taken twice)
    env = dict(os.environ, DET_VALIDATE="full", XDG_CACHE_HOME=str(tmp_path / "cache"))
    info = detrec("info", trace, env=env)
    assert info.returncode == 0 and b"omp_lock" in info.stdout, info.stderr.decode()


def test_critical_order_is_the_recorded_one(tmp_path: Path) -> None:
    """The lock order printed is the recording's in replay, not libgomp's
    of the moment: the replay's output is the recording's, line by line."""
    trace = tmp_path / "omp.db"
    r = detrec("-q", "-o", trace, "--", program("omp_share"))
    assert r.returncode == 0, r.stderr.decode()
    for _ in range(3):
        rr = detreplay(trace)
        assert rr.returncode == 0, rr.stderr.decode()
        assert rr.stdout.decode().splitlines() == r.stdout.decode().splitlines()


def test_strict_sees_libgomps_own_waits(tmp_path: Path) -> None:
    """libgomp waits for its team (barriers, the end of a region, its
    thread pool) with futex calls of its own, an inline `syscall`: detrec
    has them trapped where one thread runs at a time, so they hand the turn
    on (main: the watchdog took it, and the trace said replay is not exact).
    The racy program's strict trace replays exactly, and PCT's too."""
    from det import events as ev

    for mode in (["--strict"], ["--strict", "--chaos", "--seed", "5"]):
        trace = tmp_path / f"omp{len(mode)}.db"
        r = detrec("-q", *mode, "-o", trace, "--", program("omp_race"))
        assert r.returncode == 0, r.stderr.decode()
        counts = dict(query(trace, "SELECT kind, count(*) FROM events GROUP BY kind"))
        assert counts.get(ev.PREEMPT, 0) == 0, f"{mode}: the watchdog took a turn: {counts}"
        assert counts.get(ev.FUTEX_WAIT, 0) > 0 and counts.get(ev.FUTEX_WAKE, 0) > 0, counts
        msg = query(trace, "SELECT message FROM outcome")[0][0] or ""
        assert "OpenMP" not in msg, msg
        for i in range(5):
            rr = detreplay("-q", trace)
            assert rr.returncode == 0 and rr.stdout == r.stdout, f"{mode} replay {i + 1}: {rr.stderr.decode()}"
