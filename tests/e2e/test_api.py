"""Every interposed entry point, with results that depend on the
interleaving (trylock, tryjoin, timed waits), replays to the same output."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import detrec, detreplay, outcome, program, query, replay_matches


def test_api_tour_replays(tmp_path: Path) -> None:
    trace = tmp_path / "api.db"
    r = detrec("-o", trace, program("api_tour"))
    assert r.returncode == 0, r.stderr.decode()
    kinds = {k for (k,) in query(trace, "SELECT DISTINCT e.kind FROM events e")}
    names = dict(query(trace, "SELECT kind, name FROM event_kinds"))
    seen = {names[k] for k in kinds}
    for want in ("thread_create", "thread_start", "thread_exit", "thread_join", "thread_tryjoin",
                 "thread_detach", "mutex_lock", "mutex_trylock", "mutex_timedlock", "mutex_clocklock",
                 "mutex_unlock", "mutex_destroy", "cond_timedwait", "cond_clockwait", "cond_wake",
                 "cond_signal", "cond_broadcast", "cond_destroy", "rwlock_rdlock", "rwlock_tryrdlock",
                 "rwlock_timedrdlock", "rwlock_wrlock", "rwlock_trywrlock", "rwlock_timedwrlock",
                 "rwlock_unlock", "rwlock_destroy", "barrier_arrive", "barrier_depart", "barrier_destroy",
                 "sem_wait", "sem_trywait", "sem_timedwait", "sem_post", "sem_destroy", "spin_lock",
                 "spin_unlock", "spin_destroy", "once", "stdio_write", "file_lock", "file_unlock"):
        assert want in seen, f"{want} was not recorded"
    rec = outcome(trace)
    for mode in ([], ["--relaxed"]):
        for _ in range(5):
            rr = detreplay(*mode, trace)
            assert rr.returncode == 0, rr.stderr.decode()
            assert b"outcome matches" in rr.stderr
            assert rr.stdout.endswith(rec["stdout_tail"])


def test_detached_threads_whose_ids_are_reused(tmp_path: Path) -> None:
    """A detached thread's pthread_t is reused by a later thread, and a
    thread may detach itself before pthread_create has returned in its
    creator: its detach must name itself (before, the recording named the
    earlier thread with that id, 5 of 5 recordings, and replay diverged).
    Strict mode without the spinners, which would make watchdog
    preemptions."""
    for flags, args, replays in (([], [], [[], ["--relaxed"]]), (["--strict"], ["200", "0"], [[]])):
        trace = tmp_path / f"reuse{len(flags)}.db"
        r = detrec("-q", *flags, "-o", trace, "--", program("detached_reuse"), *args)
        assert r.returncode == 0, r.stderr.decode()
        assert r.stdout == b"200 detached threads finished\n"
        # every detach names the thread that made it or the one main created
        detach_kind = dict(query(trace, "SELECT name, kind FROM event_kinds"))["thread_detach"]
        for tid, obj in query(trace, "SELECT tid, obj FROM events WHERE kind = ? AND tid != 0", (detach_kind,)):
            assert query(trace, "SELECT obj FROM threads WHERE tid = ?", (tid,)) == [(obj,)], (tid, obj)
        for mode in replays:
            replay_matches(trace, mode, 2)


@pytest.mark.parametrize("flags", [[], ["--strict"], ["--logical"]])
def test_condition_waits_that_fail_at_once(flags: list[str], tmp_path: Path) -> None:
    """glibc's wait fails without waiting, the mutex untouched, for an
    error-checking mutex the caller does not hold, a deadline out of range
    and a clock it cannot use; strict mode (which emulates the wait) must
    too, and replay must not release the mutex there (before: strict
    recording waited for ever, and default replay diverged)."""
    trace = tmp_path / "cond_errors.db"
    r = detrec("-q", *flags, "--timeout", "30", "-o", trace, "--", program("cond_errors"))
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().splitlines() == [
        "wait, mutex not held: EPERM", "timedwait, bad deadline: EINVAL", "clockwait, bad clock: EINVAL",
        "clockwait, past deadline: ETIMEDOUT"]
    for mode in ([], ["--relaxed"]) if not flags else ([],):
        replay_matches(trace, mode, 2)


def test_no_threads_no_events(tmp_path: Path) -> None:
    trace = tmp_path / "hello.db"
    r = detrec("-o", trace, program("hello"), "a", "b")
    assert r.returncode == 7
    assert r.stdout.endswith(b"with 2 argument(s)\n")
    rr = detreplay(trace)
    assert rr.returncode == 7 and rr.stdout == r.stdout
