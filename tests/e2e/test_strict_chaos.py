"""Strict mode and chaos: a racy program's strict trace replays exactly;
the same chaos seed gives the same schedule; chaos finds bugs; a thread that
spins without events is preempted and the trace says so; more threads
alive than event rings."""

from __future__ import annotations

import hashlib
import re
import signal
from pathlib import Path

import pytest

from conftest import detrec, detreplay, outcome, program, query, replay_matches, sample_bin
from det import events as ev

REPLAYS = 20


def schedule(trace: Path) -> list[tuple]:
    """The order of synchronization events (inputs such as clocks vary)."""
    return query(trace, "SELECT tid, kind, obj FROM events WHERE kind < 100 OR kind IN (125, 126) ORDER BY seq")


def test_strict_racy_counter_replays_exactly(tmp_path: Path) -> None:
    trace = tmp_path / "racy.db"
    r = detrec("--strict", "-o", trace, sample_bin("racy_counter"), "5000")
    rec = outcome(trace)
    assert rec["status"] == "exited", r.stderr.decode()
    assert query(trace, "SELECT value FROM meta WHERE key = 'mode'")[0][0] == "strict"
    for i in range(REPLAYS):
        rr = detreplay(trace)
        assert rr.returncode == rec["exit_code"], f"replay {i + 1}: {rr.stderr.decode()}"
        assert rr.stdout == r.stdout, f"replay {i + 1}: another final count"


def test_ordered_replay_cannot_fix_a_data_race_but_strict_can(tmp_path: Path) -> None:
    # the lost updates happen between events: a strict trace fixes them
    # (above); here, the strict trace of the flag hand-off replays exactly
    trace = tmp_path / "flag.db"
    r = detrec("--strict", "-o", trace, sample_bin("flag_handoff"), "300")
    for _ in range(5):
        rr = detreplay(trace)
        assert rr.returncode == outcome(trace)["exit_code"] and rr.stdout == r.stdout, rr.stderr.decode()


def test_same_chaos_seed_same_trace(tmp_path: Path) -> None:
    for sample, args in (("bank_check_then_act", []), ("bounded_buffer", ["2000"]), ("racy_counter", ["2000"])):
        for mode in (["--strict"], []):
            a, b = tmp_path / f"{sample}-a.db", tmp_path / f"{sample}-b.db"
            for t in (a, b):
                detrec("-q", "--chaos", *mode, "--seed", "7", "-o", t, sample_bin(sample), *args)
            if mode:  # strict: every choice comes from the seed
                assert schedule(a) == schedule(b), f"{sample}: seed 7 gave two schedules"
            seed = query(a, "SELECT value FROM meta WHERE key = 'chaos_seed'")[0][0]
            assert int(seed) == 7


def test_chaos_finds_the_bug_and_keeps_the_seed(tmp_path: Path) -> None:
    out = tmp_path / "found.db"
    r = detrec("--chaos", "--strict", "--seed", "1", "--runs", "100", "-o", out, sample_bin("flag_handoff"), "50")
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert "failure after" in err and "detreplay " in err and "--seed" in err
    seed = int(query(out, "SELECT value FROM meta WHERE key = 'chaos_seed'")[0][0])
    # the command it printed repeats the failing schedule (PCT's k was learned
    # from the runs before: the command names it)
    flags = re.search(r"record it again with: detrec (.*) -o ", err).group(1).split()
    assert flags[flags.index("--seed") + 1] == str(seed) and "--pct-k" in flags, err
    again = tmp_path / "again.db"
    detrec("-q", *flags, "-o", again, sample_bin("flag_handoff"), "50")
    assert outcome(again)["stdout_sha256"] == outcome(out)["stdout_sha256"]
    assert schedule(again) == schedule(out)
    rr = detreplay(out)
    assert rr.returncode == 1 and b"BUG: hand-off" in rr.stdout


def test_spinning_thread_is_preempted(tmp_path: Path) -> None:
    # a busy wait that never calls into det: only the watchdog lets the
    # thread that would end it run
    from conftest import program

    trace = tmp_path / "spin.db"
    r = detrec("--strict", "--timeout", "30", "-o", trace, program("spin_wait"))
    assert r.returncode == 0, r.stderr.decode()
    assert b"watchdog preemption" in r.stderr
    n = query(trace, "SELECT value FROM meta WHERE key = 'preemptions'")[0][0]
    assert int(n) >= 1
    assert query(trace, "SELECT count(*) FROM events WHERE kind = 125")[0][0] >= 1
    # what detreplay adds to a divergence of this trace: the preemptions
    from det.analysis import race_hint
    from det.names import ObjectNames
    from det.trace import Trace

    with Trace(trace) as tr:
        hint = race_hint(tr, ObjectNames(tr, symbolize=False), "kind")
    assert len(hint) == 1 and f"the recording has {n} watchdog preemption(s)" in hint[0], hint


def test_thread_waiting_for_its_turn_at_the_end_stays_there(tmp_path: Path) -> None:
    """main polls a counter under the lock the worker increments (a waiter
    must not starve: the release ends the holder's quantum), then ends the
    program while the worker waits for its turn right after an unlock, before
    the plain write that follows it. The trace says so, and replay stops the
    worker there: main prints the value it saw, every time."""
    trace = tmp_path / "tail.db"
    r = detrec("--strict", "--timeout", "30", "-o", trace, program("strict_tail"))
    assert r.returncode == 0, r.stderr.decode()
    assert dict(query(trace, "SELECT tid, end_state FROM threads")) == {0: "running", 1: "waiting"}
    counter, published = map(int, re.fullmatch(rb"counter (\d+), published (\d+)\n", r.stdout).groups())
    assert counter >= 1000 and published == counter - 1, r.stdout
    for i in range(REPLAYS):
        rr = detreplay(trace)
        assert rr.returncode == 0 and rr.stdout == r.stdout, f"replay {i + 1}: {rr.stdout!r} {rr.stderr.decode()}"


@pytest.mark.parametrize(("name", "args", "sig", "says", "main_ends"), [
    ("strict_crash_in_call", [], signal.SIGSEGV, b"Segmentation fault in the consumer locking the queue", "waiting"),
    ("strict_crash_after", [], signal.SIGSEGV, b"cell gone\n", "blocked"),
    ("strict_crash_after", ["abort"], signal.SIGABRT, b"cell gone\n", "blocked"),
])
def test_crash_after_the_last_event_replays_as_that_crash(tmp_path: Path, name: str, args: list[str],
                                                          sig: int, says: bytes, main_ends: str) -> None:
    """The program dies in the turn of a thread past its last event, with the
    other thread parked after events of its own that came later: inside
    pthread_mutex_lock(NULL) (pbzip2's bug: main deleted the queue), of a plain
    NULL write, of an assert. The trace says which thread ran last; replay
    runs every event, then lets that thread run on alone into the same death
    (before: the replay stalled, the crashing thread parked at its next call
    or ahead of the other's events)."""
    trace = tmp_path / "crash.db"
    r = detrec("--strict", "--timeout", "30", "-o", trace, program(name), *args)
    rec = outcome(trace)
    assert rec["status"] == "signaled" and rec["signal"] == sig, r.stderr.decode()
    assert says in r.stdout, r.stdout
    assert dict(query(trace, "SELECT tid, end_state FROM threads")) == {0: main_ends, 1: "running"}
    assert query(trace, "SELECT value FROM meta WHERE key = 'ran_last'") == [(1,)]
    for i in range(REPLAYS):
        rr = detreplay(trace)
        err = rr.stderr.decode()
        assert rr.returncode == 128 + sig and "outcome matches the recording" in err, f"replay {i + 1}: {err}"
        assert rr.stdout == r.stdout, f"replay {i + 1}: {rr.stdout!r}"


def test_crash_handler_that_exits_inside_the_call_replays(tmp_path: Path) -> None:
    """The consumer's SIGSEGV handler calls _exit(3) from inside
    pthread_mutex_lock(NULL): the program exited, in the consumer's turn,
    inside a call det wraps. The consumer keeps the token as its process
    ends, the trace says it ran last, and replay exits there the same way
    (before: the replay stalled, the consumer parked at that call)."""
    trace = tmp_path / "exit.db"
    r = detrec("--strict", "--timeout", "30", "-o", trace, program("strict_crash_in_call"), "exit")
    rec = outcome(trace)
    assert rec["status"] == "exited" and rec["exit_code"] == 3, r.stderr.decode()
    assert re.search(rb"Segmentation fault in the consumer locking the queue, at address 0x[0-9a-f]+\n$", r.stdout)
    assert query(trace, "SELECT value FROM meta WHERE key = 'ran_last'") == [(1,)]
    for i in range(REPLAYS):
        rr = detreplay(trace)
        err = rr.stderr.decode()
        assert rr.returncode == 3 and "outcome matches the recording" in err, f"replay {i + 1}: {err}"
        assert rr.stdout == r.stdout, f"replay {i + 1}: {rr.stdout!r}"


def test_crash_found_by_pct_replays_as_that_crash(tmp_path: Path) -> None:
    """As dethunt finds it: PCT's schedules put the consumer's crash in
    pthread_mutex_lock(NULL) (seed 1 today: stalled before), or in a
    condition wait on the freed mutex (logged, then dead inside the call:
    seed 3); the failing run kept replays it."""
    trace = tmp_path / "found.db"
    r = detrec("--chaos", "--strict", "--seed", "1", "--runs", "20", "--timeout", "30", "-o", trace,
               program("strict_crash_in_call"))
    rec = outcome(trace)
    assert rec["status"] == "signaled" and rec["signal"] == signal.SIGSEGV, r.stderr.decode()
    tail = rec["stdout_tail"].encode() if isinstance(rec["stdout_tail"], str) else rec["stdout_tail"]
    assert re.search(rb"Segmentation fault in the consumer [a-z ]+, at address 0x[0-9a-f]+\n$", tail), tail
    for i in range(10):
        rr = detreplay(trace)
        err = rr.stderr.decode()
        assert rr.returncode == 128 + signal.SIGSEGV, f"replay {i + 1}: {err}"
        assert "outcome matches the recording" in err, f"replay {i + 1}: {err}"
        assert hashlib.sha256(rr.stdout).hexdigest() == rec["stdout_sha256"], f"replay {i + 1}: {rr.stdout!r}"


def test_more_threads_alive_than_event_rings(tmp_path: Path) -> None:
    """A new thread that finds every event ring taken waits for an exited
    thread's; in strict mode it is not runnable meanwhile (before: the token
    was handed to it, and each such hand-off waited for the watchdog, so the
    64-thread run below did not end in 10 minutes)."""
    for mode in ([], ["--strict"], ["--strict", "--chaos"]):
        trace = tmp_path / f"churn{len(mode)}.db"
        r = detrec("-q", *mode, "--rings", "4", "--timeout", "120", "-o", trace, "--",
                   program("thread_churn"), "64")
        assert r.returncode == 0, r.stderr.decode()
        assert query(trace, "SELECT count(*) FROM threads")[0][0] == 65
        assert query(trace, "SELECT value FROM meta WHERE key = 'preemptions'")[0][0] in (0, "0"), mode
        replay_matches(trace, [], 2)


@pytest.mark.parametrize("mode", [("--strict",), ("--strict", "--chaos", "--seed", "3")], ids=["strict", "pct"])
def test_own_futex_lock_waits_as_an_event(tmp_path: Path, mode: tuple[str, ...]) -> None:
    """A program's own futex lock (futex_lock): a FUTEX_WAIT hands the turn
    on while it sleeps, so one thread at a time never leaves the others to
    the watchdog (main: 2 preemptions, 2 s, a replay that stalled), and the
    racy sum replays exactly."""

    trace = tmp_path / "futex.db"
    r = detrec("-q", *mode, "-o", trace, program("futex_lock"))
    assert r.returncode == 0, r.stderr.decode()
    counts = dict(query(trace, "SELECT kind, count(*) FROM events GROUP BY kind"))
    assert counts.get(ev.PREEMPT, 0) == 0, "the watchdog took a turn from a futex wait"
    assert counts.get(ev.FUTEX_WAIT, 0) > 0 and counts.get(ev.FUTEX_WAKE, 0) > 0, counts
    eagain = query(trace, f"SELECT count(*) FROM events WHERE kind = {ev.FUTEX_WAIT} AND result = -11")[0][0]
    assert eagain >= 1, "main's wait on a word that is not 12345 returns EAGAIN"
    for i in range(5):
        rr = detreplay("-q", trace)
        assert rr.returncode == 0 and rr.stdout == r.stdout, f"replay {i + 1}: {rr.stderr.decode()}"


def test_own_futex_lock_default_mode_is_the_kernels(tmp_path: Path) -> None:
    """In the default mode the atomics around a futex call are no events,
    so the call is no event either (ordering it alone would make every
    difference in their timing a divergence). (Its racy sum replays only
    from a strict trace, above.)"""

    trace = tmp_path / "futex.db"
    r = detrec("-q", "-o", trace, program("futex_lock"))
    assert r.returncode == 0, r.stderr.decode()
    assert query(trace, f"SELECT count(*) FROM events WHERE kind IN ({ev.FUTEX_WAIT}, {ev.FUTEX_WAKE})")[0][0] == 0


@pytest.mark.parametrize("mode", ["--strict", "--logical"])
def test_writer_preferring_rwlock_turns_readers_away(tmp_path: Path, mode: str) -> None:
    """One thread at a time, a writer's wait is det's, not glibc's: a
    writer-preferring rwlock must still turn a new reader away while a
    writer waits (on main, strict and logical recordings let it in and the
    program failed its own check)."""
    trace = tmp_path / "rw.db"
    r = detrec("-q", mode, "-o", trace, "--", program("rwlock_writer_first"))
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    assert b"tryrdlock with a writer waiting: EBUSY" in r.stdout, r.stdout
    if mode == "--strict":
        replay_matches(trace, [], 2)
