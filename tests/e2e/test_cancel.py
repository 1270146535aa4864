"""pthread_cancel (preload/threads.c, replayer/enforce.c det_replay_cancel,
replayer/strict.c det_strict_canceled): a request is an event, where the
thread acted on it is another (THREAD_CANCELED), and replay ends the thread
there with the same cleanup handlers. Before: a default-mode replay of a
thread canceled in a condition wait stalled (its cleanup's unlock was not
recorded), and strict mode hung at the first cancel of a waiting thread."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import detrec, program, query, replay_matches
from det import events as ev

WORKERS = ["cond", "timedcond", "join", "sem", "sleep", "read", "print", "close", "testcancel"]

MODES = {
    "default": ([], [[], ["--relaxed"]]),
    "strict": (["--strict"], [[]]),
    "chaos": (["--strict", "--chaos", "--seed", "5"], [[]]),
    # logical time keeps a sleeper in its turn order: no sleeping thread there
    "logical": (["--logical"], [[]]),
}


def canceled(trace: Path) -> list[tuple[int, int]]:
    return query(trace, "SELECT aux, result FROM events WHERE kind = ? ORDER BY seq", (ev.THREAD_CANCELED,))


@pytest.mark.parametrize("mode", MODES)
def test_threads_canceled_at_each_cancellation_point_replay(tmp_path: Path, mode: str) -> None:
    flags, replays = MODES[mode]
    args = ["nosleep"] if mode == "logical" else []
    workers = [w for w in WORKERS if not (args and w == "sleep")]
    trace = tmp_path / f"cancel-{mode}.db"
    r = detrec("-q", *flags, "-o", trace, "--", program("cancel_points"), *args, timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    out = r.stdout.decode().splitlines()
    for w in workers:
        assert f"{w}: cancel 0, canceled 1, cleanup 1" in out, out
    # each thread ended in the call it was canceled in; the testcancel loop
    # in one of its three calls between two events, which the event says
    where = canceled(trace)
    assert sorted(a for a, _ in where) == [ev.AUX_THREAD_CANCELED_IN_CALL] * len(workers) + \
        [ev.AUX_THREAD_CANCELED_TESTCANCEL], where
    call = [res for a, res in where if a == ev.AUX_THREAD_CANCELED_TESTCANCEL][0]
    assert "testcancel loop ended in round" in out[-2] and out[-2].endswith(f"call {call - 1}"), (out[-2], call)
    for replay_mode in replays:
        replay_matches(trace, replay_mode, 1)


def test_canceled_where_det_does_not_see(tmp_path: Path) -> None:
    """A thread canceled in a libc call det does not wrap (fsync): its
    THREAD_CANCELED comes as it ends. Replay sends the request for real once
    the thread has done its events before it, and it acts at the thread's
    next fsync, also in a thread that makes no more calls into det (on main
    before that, such a replay stalled)."""
    trace = tmp_path / "elsewhere.db"
    r = detrec("-q", "-o", trace, "--", program("cancel_elsewhere"))
    assert r.returncode == 0, r.stderr.decode()
    assert [a for a, _ in canceled(trace)] == [ev.AUX_THREAD_CANCELED_ELSEWHERE]
    replay_matches(trace, [], 2)
    replay_matches(trace, ["--relaxed"], 1)

    quiet = tmp_path / "quiet.db"
    r = detrec("-q", "-o", quiet, "--", program("cancel_elsewhere"), "quiet")
    assert r.returncode == 0, r.stderr.decode()
    replay_matches(quiet, [], 3)
    replay_matches(quiet, ["--relaxed"], 2)


def test_asynchronous_cancel_of_a_spinning_thread_replays(tmp_path: Path) -> None:
    """pthread_cancel of a thread with PTHREAD_CANCEL_ASYNCHRONOUS that spins
    without a call: the request acts at once, where det does not see; replay
    sends it for real (on main the replay stalled, the thread spinning)."""
    trace = tmp_path / "async.db"
    r = detrec("-q", "-o", trace, "--", program("cancel_elsewhere"), "async")
    assert r.returncode == 0, r.stderr.decode()
    assert b"canceled 1" in r.stdout, r.stdout
    assert [a for a, _ in canceled(trace)] == [ev.AUX_THREAD_CANCELED_ELSEWHERE]
    replay_matches(trace, [], 3)
    replay_matches(trace, ["--relaxed"], 2)
    # strict: the spinner holds the turn until the watchdog takes it; it
    # ran on out of its turn, and so does it in replay (a stall before)
    strict = tmp_path / "async-strict.db"
    r = detrec("-q", "--strict", "-o", strict, "--", program("cancel_elsewhere"), "async")
    assert r.returncode == 0, r.stderr.decode()
    assert query(strict, "SELECT count(*) FROM events WHERE kind = ?", (ev.PREEMPT,))[0][0] >= 1
    replay_matches(strict, [], 3)
