"""State libc keeps for the whole process behind locks of its own, which
det cannot see: which thread gets which number of a shared generator is the
recording's in replay."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import detrec, detreplay, program, query
from det import events as ev


@pytest.mark.parametrize("mode", [[], ["--strict"]], ids=["default", "strict"])
def test_threads_drawing_from_libc_generators_replay(tmp_path: Path, mode: list[str]) -> None:
    """rand_threads' threads draw from rand(), lrand48() and drand48():
    their sums are the recording's in every replay (main: each replay
    split the numbers anew, and detreplay blamed a data race)."""
    trace = tmp_path / "rand.det"
    r = detrec(*mode, "-q", "-o", trace, "--", program("rand_threads"), "3", "60000")
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.count(b"\nT") == 2 and b"total " in r.stdout, r.stdout
    for replay in ([], ["--relaxed"]) if not mode else ([],):
        for _ in range(3):
            rr = detreplay(*replay, "-q", trace, timeout=120)
            assert (rr.returncode, rr.stdout) == (0, r.stdout), rr.stderr.decode()


def test_a_process_without_threads_draws_without_events(tmp_path: Path) -> None:
    """Before its first thread a process's draws are not events (nothing to
    order), and replay gives the same numbers."""
    trace = tmp_path / "one.det"
    r = detrec("-q", "-o", trace, "--", program("rand_threads"), "0", "1000")
    assert r.returncode == 0, r.stderr.decode()
    assert query(trace, "SELECT count(*) FROM events WHERE kind IN (?, ?)", (ev.MUTEX_LOCK, ev.MUTEX_UNLOCK)) == [(0,)]
    rr = detreplay("-q", trace)
    assert (rr.returncode, rr.stdout) == (0, r.stdout), rr.stderr.decode()
