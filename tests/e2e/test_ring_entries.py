"""The ring entries the runtime writes and the capture log carries are 32
bytes (include/det/shm.h struct det_rec): an event's timestamp is a 32-bit
delta from its thread's previous one, so a pause longer than that (2^32
TSC ticks, a second or two) needs an entry with the whole timestamp."""

from __future__ import annotations

from pathlib import Path

from conftest import detrec, detreplay, program, query


def test_an_event_takes_32_bytes_of_log(tmp_path: Path) -> None:
    trace = tmp_path / "t.db"
    r = detrec("-o", trace, "--", program("long_pause"), "0", "100000")
    assert r.returncode == 0, r.stderr.decode()
    events = query(trace, "SELECT events FROM outcome")[0][0]
    assert events > 200000
    size = int(query(trace, "SELECT value FROM meta WHERE key = 'capture_bytes'")[0][0])
    assert size / events < 33, size / events  # 48 before


def test_timestamps_stay_whole_across_a_long_pause(tmp_path: Path) -> None:
    trace = tmp_path / "t.db"
    r = detrec("-o", trace, "--", program("long_pause"), "3", "10")
    assert r.returncode == 0, r.stderr.decode()
    locks = query(trace, "SELECT e.ts FROM events e JOIN event_kinds k USING (kind) "
                         "WHERE k.name = 'mutex_lock' ORDER BY e.seq")
    assert len(locks) == 11
    before, after = locks[-2][0], locks[-1][0]
    assert after - before >= 2.9e9, (before, after)  # not wrapped at 2^32 ticks
    assert after - before < 10e9, (before, after)
    rr = detreplay(trace)
    assert rr.returncode == 0 and b"matches" in rr.stderr, rr.stderr.decode()
