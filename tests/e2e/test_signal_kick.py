"""A signal that comes while its thread makes no event (preload/signals.c,
kicks): recording goes on, and replay delivers it where the thread waits
for it."""

from __future__ import annotations

import time
from pathlib import Path

from conftest import detrec, detreplay, program, query, replay_matches


def test_alarm_loop_records_and_replays(tmp_path: Path) -> None:
    trace = tmp_path / "alarm.db"
    t0 = time.monotonic()
    # (before kicks the held SIGALRM waited for an event that never came:
    # the recording ran until --timeout stopped it)
    r = detrec("-q", "--timeout", "60", "-o", trace, "--", program("alarm_loop"), "2")
    assert r.returncode == 0, r.stderr.decode()
    assert time.monotonic() - t0 < 30
    assert r.stdout.decode() == "round 0: counted some\nround 1: counted some\n"
    unanchored = query(trace, "SELECT count(*) FROM events WHERE kind = 121 AND aux = (14 | 0x20000)")[0][0]
    assert unanchored == 2, unanchored
    replay_matches(trace, [], 2)
    replay_matches(trace, ["--relaxed"], 1)
    strict = tmp_path / "strict.db"
    r = detrec("-q", "--strict", "--timeout", "60", "-o", strict, "--", program("alarm_loop"), "2")
    assert r.returncode == 0, r.stderr.decode()
    replay_matches(strict, [], 2)


def test_replay_says_where_an_unanchored_signal_lands(tmp_path: Path) -> None:
    """openssl speed prints how far its loop counted before the alarm: a
    replay cannot deliver the signal at that very instruction, and says so
    instead of blaming a data race."""
    trace = tmp_path / "speed.db"
    r = detrec("-q", "-o", trace, "--", "openssl", "speed", "-seconds", "1", "-bytes", "64", "sha256")
    assert r.returncode == 0, r.stderr.decode()
    rr = detreplay(trace)
    err = rr.stderr.decode()
    if rr.returncode == 0:  # the counts can agree by chance
        assert "outcome matches the recording" in err, err
    else:
        assert "a signal came while its thread made no event (SIGALRM" in err, err
        assert "data race" not in err, err


def test_sigev_thread_timers_callbacks_are_recorded(tmp_path: Path) -> None:
    """A SIGEV_THREAD timer's callbacks run in threads det starts
    (preload/timers.c), so their locks are events and replay orders them;
    glibc's own threads were unrecorded and the replay diverged."""
    for mode in ([], ["--strict"]):
        trace = tmp_path / f"timers{len(mode)}.db"
        r = detrec("-q", *mode, "-o", trace, "--", program("timer_thread"))
        assert r.returncode == 0, r.stderr.decode()
        assert len(r.stdout.decode().strip()) >= 8, r.stdout
        # main, det's helper and a thread per expiry
        threads = query(trace, "SELECT count(*) FROM threads")[0][0]
        assert threads >= 10, threads
        replay_matches(trace, [], 2)
        if not mode:
            replay_matches(trace, ["--relaxed"], 2)
