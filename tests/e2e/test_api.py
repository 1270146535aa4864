"""Every interposed entry point, with results that depend on the
interleaving (trylock, tryjoin, timed waits), replays to the same output."""

from __future__ import annotations

from pathlib import Path

from conftest import detrec, detreplay, outcome, program, query


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


def test_no_threads_no_events(tmp_path: Path) -> None:
    trace = tmp_path / "hello.db"
    r = detrec("-o", trace, program("hello"), "a", "b")
    assert r.returncode == 7
    assert r.stdout.endswith(b"with 2 argument(s)\n")
    rr = detreplay(trace)
    assert rr.returncode == 7 and rr.stdout == r.stdout
