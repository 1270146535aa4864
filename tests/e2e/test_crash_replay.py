"""Every recorded crash replays as that crash, in every replay order: a
thread that dies inside a call det wraps (pbzip2's pthread_mutex_lock(NULL))
leaves an event that never completed, and the thread it died in runs on past
its last event (meta ran_last) once the others have done theirs."""
from __future__ import annotations

import signal
from pathlib import Path

import pytest

from conftest import detrec, detreplay, outcome, program, query

REPLAYS = 5

# (replay options) for each recording mode: a default recording replays in
# the recorded global order and in the relaxed one; a strict one in strict order
ORDERS = {(): [(), ("--relaxed",)], ("--strict",): [()]}


@pytest.mark.parametrize("record", list(ORDERS), ids=lambda m: "strict" if m else "default")
@pytest.mark.parametrize(("args", "status", "code"), [
    ([], "signaled", signal.SIGSEGV),
    (["abort"], "signaled", signal.SIGABRT),
    (["exit"], "exited", 3),
], ids=["segv", "abort", "exit"])
def test_crash_inside_a_wrapped_call_replays_as_that_crash(tmp_path: Path, record: tuple[str, ...],
                                                            args: list[str], status: str, code: int) -> None:
    """The consumer dies in pthread_mutex_lock(NULL) (of SIGSEGV, of the
    abort its SIGSEGV handler calls, or exits with 3 in that handler) while
    main waits in pthread_join. The trace names the consumer as the thread
    that ran last, and every replay dies the same way, with the same output
    (before, in the default mode: the replay stalled, T1 parked at that
    mutex_lock). The recorder's own entry for SIGSEGV and SIGABRT is not
    seen by the program: sigaction reports their default action."""
    trace = tmp_path / "crash.db"
    r = detrec(*record, "--timeout", "30", "-o", trace, program("crash_in_lock"), *args)
    rec = outcome(trace)
    assert rec["status"] == status, r.stderr.decode()
    assert rec["signal" if status == "signaled" else "exit_code"] == code, r.stderr.decode()
    assert r.stdout.startswith(b"SIGSEGV default, SIGABRT default\n"), r.stdout
    assert b"queue deleted\n" in r.stdout and (not args or r.stdout.endswith(b"fault in the consumer\n")), r.stdout
    assert query(trace, "SELECT value FROM meta WHERE key = 'ran_last'") == [(1,)]
    want = 128 + code if status == "signaled" else code
    for order in ORDERS[record]:
        for i in range(REPLAYS):
            rr = detreplay(*order, trace, timeout=60)
            err = rr.stderr.decode()
            assert rr.returncode == want and "outcome matches the recording" in err, f"{order} {i + 1}: {err}"
            assert rr.stdout == r.stdout, f"{order} {i + 1}: {rr.stdout!r}"



@pytest.mark.parametrize("record", list(ORDERS), ids=lambda m: "strict" if m else "default")
def test_destroying_a_mutex_a_wait_is_in_says_busy(tmp_path: Path, record: tuple[str, ...]) -> None:
    """pthread_mutex_destroy of a mutex a condition wait is in fails with
    EBUSY in glibc (pbzip2's queue deletion meets it before its crash): so
    in a strict recording, whose waits det emulates, and in every replay
    (before: an emulated wait released the mutex as an unlock does, so the
    destroy succeeded, and a default trace diverged there)."""
    trace = tmp_path / "busy.db"
    r = detrec(*record, "--timeout", "30", "-o", trace, program("destroy_busy"))
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == b"destroy while waited on: Device or resource busy\nworker joined\n", r.stdout
    for order in ORDERS[record]:
        for i in range(REPLAYS):
            rr = detreplay(*order, trace, timeout=60)
            assert rr.returncode == 0 and rr.stdout == r.stdout, f"{order} {i + 1}: {rr.stderr.decode()}"
