"""Atomics in programs det-cc did not build (issue 26, point 4): detrec
--patch-atomics traps the executable's lock-prefixed instructions and xchg
at load time (preload/trapped_atomics.c), so each is an event on its memory
location, recorded in the order the location saw and replayed in it.

cas_pool is nginx's thread-pool completion queue: a CAS spinlock (released
by a plain store) guards the queue the pool thread appends to before it
writes an eventfd; how many tasks each wake-up of the main thread finds is
decided by the spinlock alone. Recorded without the option, its default-mode
replays diverged (0 of 5 measured on the base this was built on); with it,
every replay in every mode matches. atomic_forms runs each instruction form
gcc makes of __atomic builtins in two threads and prints checksums of the
values they returned, which only a replay of every atomic in the recorded
order reproduces. shared_counter does the same in two processes, on a
mapping they share.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import BIN, DETREPLAY, detrec, program, query, replay_matches, run
from det import events as ev
from det.constants import DET_ATOMIC_TRAPPED as TRAPPED

ATOMIC_KINDS = (ev.ATOMIC_LOAD, ev.ATOMIC_STORE, ev.ATOMIC_RMW, ev.ATOMIC_CMPXCHG, ev.ATOMIC_FENCE)


def trapped_events(trace: Path) -> int:
    rows = query(trace, f"SELECT count(*) FROM events WHERE kind IN {ATOMIC_KINDS} AND (aux & {TRAPPED}) != 0")
    return rows[0][0]


@pytest.mark.parametrize("mode", [[], ["--strict"], ["--chaos", "--strict", "--seed", "7"]],
                         ids=["default", "strict", "pct"])
def test_cas_pool_replays_with_patched_atomics(tmp_path: Path, mode: list[str]) -> None:
    trace = tmp_path / "pool.db"
    r = detrec("--patch-atomics", *mode, "-o", trace, "--", program("cas_pool"), "300")
    err = r.stderr.decode()
    assert r.returncode == 0, err
    assert "3 atomic instructions of its own code patched to be events" in err, err  # (the CAS, two fences)
    assert r.stdout.decode().splitlines()[-1].startswith("300 tasks in "), r.stdout.decode()
    # every spin_lock's compare-exchange is an event (the main thread's and the pool thread's)
    assert trapped_events(trace) >= 300
    replay_matches(trace, [], 5)
    if not mode:
        replay_matches(trace, ["--relaxed"], 3)


def test_every_atomic_form_replays(tmp_path: Path) -> None:
    trace = tmp_path / "forms.db"
    r = detrec("-q", "--patch-atomics", "-o", trace, "--", program("atomic_forms"), "1500")
    assert r.returncode == 0, r.stderr.decode()
    # 13 sites, 2 threads x 1500 rounds x (12 atomics and a fence, and a compare-exchange's retries)
    assert trapped_events(trace) >= 2 * 1500 * 13
    replay_matches(trace, [], 3)
    replay_matches(trace, ["--relaxed"], 2)


@pytest.mark.parametrize("mode", [[], ["--relaxed"]], ids=["default", "relaxed"])
def test_atomics_in_memory_processes_share(tmp_path: Path, mode: list[str]) -> None:
    """Counters in a MAP_SHARED mapping two forked children both add to
    (nginx's ngx_stat_* in its workers): one object per location in every
    process (its key the bare address, as a process-shared mutex's), so
    replay orders the children's atomics as the recording saw them. Keyed
    per process, each child's were an object of their own, and replays
    diverged 3 of 3 default and 3 of 3 relaxed ('the operation returned
    something else')."""
    trace = tmp_path / "shared.db"
    r = detrec("-q", "--patch-atomics", "-o", trace, "--", program("shared_counter"), "2000")
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().splitlines()[-1] == "total 4000 word 2000", r.stdout.decode()
    objects = query(trace, f"SELECT count(DISTINCT obj) FROM events WHERE kind IN {ATOMIC_KINDS} AND obj != 0")[0][0]
    assert objects == 3, objects  # requests, last, word: one object each, whichever process
    replay_matches(trace, mode, 4)


@pytest.mark.parametrize("mode", [[], ["--strict"]], ids=["default", "strict"])
def test_a_handlers_atomics_inside_an_atomics_start(tmp_path: Path, mode: list[str]) -> None:
    """A timer signal that arrives in the program's code is held to its next
    event, an atomic's; replay runs the handler, whose own compare-exchange
    and read are events, inside that atomic's start. The outer atomic's
    operation was det's one per thread, and the handler's overwrote it: on
    the base this was built on every replay went another way (an outer
    atomic_rmw replayed as the handler's atomic_cmpxchg, at nginx's
    ngx_time_sigsafe_update under load, and 6 of 6 here)."""
    trace = tmp_path / "handler.db"
    r = detrec("-q", "--patch-atomics", *mode, "-o", trace, "--", program("atomic_handler"), "200000")
    assert r.returncode == 0, r.stderr.decode()
    out = r.stdout.decode()
    assert out.startswith("counter 400000, handler ran "), out
    assert query(trace, f"SELECT count(*) FROM events WHERE kind = {ev.SIGNAL}")[0][0] > 0
    replay_matches(trace, [], 3)


def test_patched_by_default_and_not_when_told(tmp_path: Path) -> None:
    r = detrec("-q", "-o", tmp_path / "default.db", "--", program("cas_pool"), "50")
    assert r.returncode == 0, r.stderr.decode()
    assert trapped_events(tmp_path / "default.db") >= 50
    r = detrec("-q", "--no-patch-atomics", "-o", tmp_path / "plain.db", "--", program("cas_pool"), "50")
    assert r.returncode == 0, r.stderr.decode()
    assert trapped_events(tmp_path / "plain.db") == 0
    r = detrec("--patch-atomics", "--no-patch-atomics", "--", program("cas_pool"), "50")
    assert r.returncode == 2 and "pick one" in r.stderr.decode(), r.stderr.decode()


def test_gdb_does_not_stop_at_dets_traps(tmp_path: Path) -> None:
    """Under gdb det traps with ud2 (SIGILL, passed on unseen), not int3:
    gdb takes every SIGTRAP for its own and stopped at each of det's."""
    trace = tmp_path / "pool.db"
    r = detrec("-q", "--patch-atomics", "-o", trace, "--", program("cas_pool"), "100")
    assert r.returncode == 0, r.stderr.decode()
    last = query(trace, f"SELECT max(seq) FROM events WHERE kind IN {ATOMIC_KINDS} AND (aux & {TRAPPED}) != 0")[0][0]
    g = run([DETREPLAY, "--gdb", trace, "--", "-batch", "-ex", "break pool", "-ex", "continue", "-ex", "next",
             "-ex", "delete", "-ex", f"det goto {last}", "-ex", "det status", "-ex", "continue"], timeout=300)
    out = g.stdout.decode() + g.stderr.decode()
    assert "received signal" not in out and "SIGTRAP" not in out, out
    assert "hit Breakpoint 1, pool" in out, out
    assert "about to do atomic_" in out, out  # det goto reached a trapped atomic's event
    assert "the replay ended with exit code 0; recorded: exit 0" in out, out
    assert r.stdout.decode().splitlines()[-1] in out, out  # the program's last line, as recorded


def test_pct_finds_a_work_stealing_bug_in_a_gcc_build(tmp_path: Path) -> None:
    """ws_deque's thieves claim a slot with fetch_add, not a compare-exchange
    (issue 26: a public suite's work-stealing queues, built with gcc, whose
    bugs PCT found 0 of 5 times). Its window is between a thief's plain
    loads and its lock xadd: a PCT run may switch threads at a patched
    atomic's start (a CC_YIELD event, where replay switches again). Measured
    over 300 runs of 8 items: 102 failed with the gcc build, 0 with
    --no-patch-atomics (no step of PCT's there), 75 with a det-cc build and
    81 with det-cc's memory points. The kept failure replays."""
    out = tmp_path / "hunt"
    r = run([BIN / "dethunt", "-q", "--strict", "--runs", "100", "-o", out, "--", program("ws_deque"), "8"],
            timeout=600)
    assert r.returncode == 1, r.stderr.decode()  # (a failure found)
    failing = out / "exit-1.db"
    assert failing.exists(), sorted(p.name for p in out.iterdir())
    assert query(failing, f"SELECT count(*) FROM events WHERE kind = {ev.CC_YIELD} AND aux = 2")[0][0] > 0
    replay_matches(failing, [], 3)
