"""Replay reads the packed schedule (table schedule) where a trace has one:
the same replay as from event_rows (DET_REPLAY_ROWS=1), sample by sample."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import ROOT, detrec, outcome, replay_matches, samples


def _region(trace: Path, rows: bool, relaxed: bool) -> tuple[bool, bytes]:
    """Whether the feeder read the packed schedule, and the replay region as
    it stands before the program starts: every thread's first window of
    entries (kind, object, result, prerequisites, wake-ups, data)."""
    from det.replay.native import Replayer

    if rows:
        os.environ["DET_REPLAY_ROWS"] = "1"
    try:
        rep = Replayer(trace, outcome(trace) is not None, relaxed)
    finally:
        os.environ.pop("DET_REPLAY_ROWS", None)
    try:
        with open(f"/proc/self/fd/{rep.fd}", "rb") as f:
            return rep.packed, f.read()
    finally:
        rep.close()


SAMPLES = [s for s in samples() if not s.hang]


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.name for s in SAMPLES])
def test_packed_schedule_and_rows_build_the_same_replay(sample, tmp_path: Path) -> None:
    """For every sample that ends: the region the feeder fills before the
    program starts is byte for byte the same from the packed schedule as
    from event_rows, ordered and relaxed, and the packed one is used."""
    trace = tmp_path / "t.db"
    r = detrec("-q", *(["--strict"] if sample.strict else []), "-o", trace, "--", sample.path, *sample.test_args)
    assert trace.exists(), r.stderr.decode()
    for relaxed in (False, True):
        packed, region = _region(trace, False, relaxed)
        rows, region_rows = _region(trace, True, relaxed)
        assert packed and not rows
        assert region == region_rows, f"{sample.name}: the regions differ (relaxed {relaxed})"


@pytest.mark.parametrize("rows", [False, True], ids=["packed", "rows"])
def test_a_long_replay_streams_either_way(rows: bool, tmp_path: Path) -> None:
    """A trace longer than the threads' windows (the feeder streams while the
    program runs) replays to the recorded outcome from either source,
    ordered and relaxed."""
    trace = tmp_path / "long.db"
    r = detrec("-q", "-o", trace, "--", ROOT / "bench" / "bin" / "mutex_counter", "60000", "3")
    assert r.returncode == 0, r.stderr.decode()
    if rows:
        os.environ["DET_REPLAY_ROWS"] = "1"
    try:
        replay_matches(trace, [], 1)
        replay_matches(trace, ["--relaxed"], 1)
    finally:
        os.environ.pop("DET_REPLAY_ROWS", None)
