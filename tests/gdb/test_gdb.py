"""`detreplay --gdb`: det's commands in a real gdb on real programs.

Rules: every check runs real gdb (`-nx -batch`, or an interactive gdb in
tmux) through .venv/bin/detreplay on a trace recorded by detrec in the same
test session; values read from the program are compared with what the
trace says they must be (tests/programs/gdb_counter.c explains its
invariant), never with numbers copied from a previous run. A missing gdb or
tmux fails the test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
import tty
from pathlib import Path

import pytest

import det
from conftest import DETREPLAY, ROOT, detrec, detreplay, gdb_batch, marks, need, program, reseal, sample_bin
from det import events as ev

MUTEX_LOCK, MUTEX_UNLOCK, THREAD_EXIT = 10, 14, 3


EV = 'printf "@ev %d %d\\n", $det_event, $det_thread'
CNT = 'printf "@cnt %d\\n", counter'


def events(trace: Path) -> list[tuple[int, int, int, int]]:
    db = sqlite3.connect(trace)
    try:
        return db.execute("SELECT seq, tid, kind, obj FROM events ORDER BY seq").fetchall()
    finally:
        db.close()


def counter_at(evs: list[tuple[int, int, int, int]], seq: int) -> int:
    """gdb_counter's invariant: T1 adds 1 and T2 adds 2 per mutex_lock done."""
    return sum(tid for s, tid, kind, _ in evs if s < seq and kind == MUTEX_LOCK)


def both_lock(evs: list[tuple[int, int, int, int]]) -> tuple[int, int]:
    """The stretch of evs (indexes) where both workers run: from the first
    event by which each has taken the lock once to the last event before
    either is done. Empty (first >= last) when the run never interleaved."""
    first = max(next((i for i, e in enumerate(evs) if e[1] == t and e[2] == MUTEX_LOCK), len(evs)) for t in (1, 2))
    last = min(max((i for i, e in enumerate(evs) if e[1] == t), default=-1) for t in (1, 2))
    return first, last


def unlock_near(evs: list[tuple[int, int, int, int]], frac: float) -> tuple[int, int]:
    """(seq, tid) of an unlock at about frac of the stretch where both workers
    run: the holder has added, nobody else is inside, every thread exists, and
    the other worker has added before it."""
    first, last = both_lock(evs)
    for s, tid, kind, _ in evs[first + int((last - first) * frac):last]:
        if kind == MUTEX_UNLOCK:
            return s, tid
    raise AssertionError("no unlock in the trace")


@pytest.fixture(scope="module")
def counter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("counter")
    trace = d / "counter.db"
    # The tests pick events where both workers take turns; a run where one
    # worker finished before the other began (rare, on a loaded machine)
    # has none: record again, a few times at most.
    for _ in range(5):
        r = detrec("-q", "-o", trace, program("gdb_counter"), "1500")
        assert r.returncode == 0, r.stderr.decode()
        first, last = both_lock(events(trace))
        if last - first > 100:
            return trace
    raise AssertionError("gdb_counter's workers never took turns with the lock in 5 recordings")


@pytest.fixture(scope="module")
def deadlock(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("deadlock")
    trace = d / "hang.db"
    # 2000 transfers a run: on a loaded machine the two threads seldom overlap in 300
    r = detrec("-q", "--until-fail", "500", "--timeout", "2", "-o", trace, sample_bin("lock_order_inversion"), "2000")
    assert r.returncode == 124, r.stderr.decode()
    return trace


def test_starts_at_first_event_with_gdb_args(counter: Path) -> None:
    evs = events(counter)
    out = gdb_batch(counter, EV, "info threads", "info breakpoints", opts=())
    assert marks(out, "ev") == [[evs[0][0], evs[0][1]]]
    assert '"T0"' in out  # gdb's thread name is det's thread number
    # Extra gdb arguments pass through, after det's set-up.
    need("gdb")
    r = detreplay("--gdb", counter, "--", "-nx", "-batch", "-ex", "break worker", "-ex", "info breakpoints",
                  timeout=120)
    text = r.stdout.decode() + r.stderr.decode()
    assert "Breakpoint 1 at" in text and "in worker at tests/programs/gdb_counter.c" in text, text
    # -g N starts at event N, with every thread parked at its turnstile.
    seq, tid = unlock_near(evs, 0.5)
    out = gdb_batch(counter, EV, CNT, "info threads", opts=("-g", str(seq)))
    assert marks(out, "ev") == [[seq, tid]]
    assert marks(out, "cnt") == [[counter_at(evs, seq)]]
    assert all(f'"T{t}"' in out for t in (0, 1, 2)), out


def test_goto_forward_and_back_land_on_the_same_state(counter: Path) -> None:
    evs = events(counter)
    late, late_tid = unlock_near(evs, 0.7)
    early, early_tid = unlock_near(evs, 0.3)
    out = gdb_batch(counter, "break worker", f"det goto {late}", EV, CNT, f"det goto {early}", EV, CNT,
                    f"det goto {late}", EV, CNT, "info breakpoints", "det goto start", EV, "det goto end", EV)
    assert marks(out, "ev")[:3] == [[late, late_tid], [early, early_tid], [late, late_tid]]
    want = [[counter_at(evs, late)], [counter_at(evs, early)], [counter_at(evs, late)]]
    assert marks(out, "cnt") == want
    # The user's breakpoint passed the gotos (never hit) and is still enabled.
    assert re.search(r"^1\s+breakpoint\s+keep\s+y\s", out, re.M), out
    assert "already hit" not in out
    assert marks(out, "ev")[3][0] == evs[0][0]
    assert marks(out, "ev")[4][0] == evs[-1][0] + 1  # the end: after the last event
    assert "the program is about to exit with code 0" in out


def test_next_back_when_status_timeline_threads(counter: Path) -> None:
    evs = events(counter)
    seq, _ = unlock_near(evs, 0.5)
    i = [e[0] for e in evs].index(seq)
    out = gdb_batch(counter, f"det goto {seq}", "det next 5", EV, "det back 2", EV, "det when", "det status",
                    "det timeline", "det threads", "info threads")
    assert marks(out, "ev") == [[evs[i + 5][0], evs[i + 5][1]], [evs[i + 3][0], evs[i + 3][1]]]
    cur = evs[i + 3]
    assert f"det: at event {cur[0]} of {len(evs)}: T{cur[1]} mutex_" in out
    status = out[out.index("det: at event", out.index("det: at event") + 1):]
    for t in (0, 1, 2):
        assert re.search(rf"^[ *] T{t}( \[gdb \d\])?: \d+/\d+ done", status, re.M), status
    assert "gdb_counter.c:" in status
    rows = [ln for ln in out.splitlines() if re.match(r"^(=>|  ) +\d+  ", ln)]
    assert len(rows) == 21 and rows[10].startswith("=>") and f" {cur[0]}  " in rows[10], "\n".join(rows)
    table = re.findall(r"^[* ] (\d)\s+T(\d)\s+(\d+)\s", out, re.M)
    assert len(table) >= 2 and table[0][1] == "0", out
    for gdb_num, t, lwp in table:  # det threads agrees with gdb's own list
        assert re.search(rf"^[* ] {gdb_num}\s+Thread 0x[0-9a-f]+ \(LWP {lwp}\) \"T{t}\"", out, re.M), out


def test_step_thread(counter: Path) -> None:
    evs = events(counter)
    seq, tid = unlock_near(evs, 0.5)
    i = [e[0] for e in evs].index(seq)
    other = 2 if tid == 1 else 1
    # The other thread's next event after seq, and the event after that one.
    j = next(k for k in range(i, len(evs)) if evs[k][1] == other)
    out = gdb_batch(counter, f"det goto {seq}", f"det step-thread T{other}", EV, "info threads",
                    "det step-thread", EV, "det step-thread T9")
    got = marks(out, "ev")
    assert got[0] == [evs[j + 1][0], evs[j + 1][1]], out
    assert f"det: T{other} did its event {evs[j][0]}" in out
    assert re.search(rf"^\* \d+\s+Thread .*\"T{other}\"", out, re.M), out  # gdb selected T{other}
    # Without an argument: the selected thread (T{other}) again.
    k = next(k for k in range(j + 1, len(evs)) if evs[k][1] == other)
    assert got[1] == [evs[k + 1][0], evs[k + 1][1]], out
    assert "det: det step-thread: no thread T9 in the recording (threads T0 to T2)" in out


def test_until_and_break_events(counter: Path) -> None:
    evs = events(counter)
    seq, _ = unlock_near(evs, 0.2)
    first_exit = next(e for e in evs if e[0] > seq and e[2] == THREAD_EXIT)
    other = 3 - first_exit[1]  # the worker still running after the first one exits
    unlocks = [e[0] for e in evs if e[0] > first_exit[0] and e[1] == other and e[2] == MUTEX_UNLOCK]
    out = gdb_batch(counter, f"det goto {seq}", "det until thread_exit", EV,
                    f"det break-event mutex_unlock thread T{other}", "continue", EV, "continue", EV, "det break-event",
                    "det break-event delete", "det until mutex_lock &lock", EV, "det until nonsense")
    got = marks(out, "ev")
    assert got[0] == [first_exit[0], first_exit[1]]
    assert got[1][0] == unlocks[0] and got[2][0] == unlocks[1], out
    assert f"det: break-event 1: before every mutex_unlock by T{other}; hit 2 time(s)" in out
    nxt = next(e for e in evs if e[0] > got[2][0] and e[2] == MUTEX_LOCK)
    assert got[3] == [nxt[0], nxt[1]]
    assert "det: det until: unknown event kind 'nonsense'" in out


def source_line(text: str) -> int:
    """The line of gdb_counter.c that contains text."""
    src = (ROOT / "tests" / "programs" / "gdb_counter.c").read_text().splitlines()
    return next(i + 1 for i, ln in enumerate(src) if text in ln)


def test_gdb_commands_work_inside_the_schedule(counter: Path) -> None:
    evs = events(counter)
    unlock, tid = unlock_near(evs, 0.5)
    lock = max(e[0] for e in evs if e[0] < unlock and e[1] == tid and e[2] == MUTEX_LOCK)
    add, unl = source_line("counter += id"), source_line("pthread_mutex_unlock(m)")
    out = gdb_batch(counter, f"det goto {lock}", "next", "next", CNT, "det when", "watch counter", "continue",
                    "det when", "delete", f"break gdb_counter.c:{add} if id == {tid}", "continue",
                    'printf "@id %d\\n", id')
    # next at an event: the event happens, gdb stops on the program's next lines.
    assert re.search(rf"^{add}\t\s+counter \+= id;\n{unl}\t\s+pthread_mutex_unlock", out, re.M), out
    assert marks(out, "cnt") == [[counter_at(evs, lock) + tid]]
    assert re.search(r"Hardware watchpoint \d+: counter", out), out
    # gdb's name for the thread that hit it is its T-name, not the program's name.
    assert re.search(r'^Thread \d+ "T[12]" hit Hardware watchpoint \d+: counter', out, re.M), out
    old, new = (int(x) for x in re.search(r"Old value = (\d+)\nNew value = (\d+)", out).groups())
    assert new - old in (1, 2)
    assert out.count("det: between events") == 2
    assert marks(out, "id") == [[tid]]


def test_deadlock_cycle_at_the_end(deadlock: Path) -> None:
    evs = events(deadlock)
    out = gdb_batch(deadlock, f"det goto {evs[-1][0]}", EV, "det next", EV, "det status", "det timeline",
                    "det goto 0", "det goto end", "det status", "det goto 0", "continue", EV)
    got = marks(out, "ev")
    assert got[0] == [evs[-1][0], evs[-1][1]] and got[1][0] == evs[-1][0] + 1
    # `continue` into the replayed deadlock stops where the recording ended instead of hanging.
    assert got[2][0] == evs[-1][0] + 1, out
    cycle = re.findall(r"^deadlock: (.*)$", out, re.M)
    assert len(cycle) >= 2, out
    for text in cycle:
        m = re.fullmatch(r"T(\d) holds mutex (\d+) \((\w)\) \(taken at lock_order_inversion\.c:\d+\) and waits for "
                         r"mutex (\d+) \((\w)\) at lock_order_inversion\.c:34; T(\d) holds mutex (\d+) \((\w)\) "
                         r"\(taken at lock_order_inversion\.c:\d+\) and waits for mutex (\d+) \((\w)\) at "
                         r"lock_order_inversion\.c:34", text)
        assert m, text
        t1, held1, _, want1, _, t2, held2, _, want2, _ = m.groups()
        assert {t1, t2} == {"1", "2"} and held1 == want2 and held2 == want1 and held1 != held2
    assert "blocked in thread_join on T" in out
    assert "# lock mutex" in out  # the timeline shows the blocked threads


@pytest.fixture(scope="module")
def aborted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    trace = tmp_path_factory.mktemp("abort") / "abort.db"
    r = detrec("-q", "-o", trace, program("crash"), "assert")
    assert r.returncode == 134, r.stderr.decode()
    return trace


def crash_line(text: str, last: bool = False) -> int:
    src = (ROOT / "tests" / "programs" / "crash.c").read_text().splitlines()
    found = [i + 1 for i, ln in enumerate(src) if text in ln]
    return found[-1] if last else found[0]


DET_SOURCES = re.compile(r"(recorder|replayer)/\w+\.[ch]:\d+")


def test_frames_stay_in_the_programs_code(aborted: Path) -> None:
    """After a SIGABRT, `thread N` and det commands, the selected frame is the
    program's; bt hides det's frames unless `set det show-frames on`."""
    line, lock = crash_line("assert(zero == 1)"), crash_line("pthread_mutex_lock(&m)", last=True)
    out = gdb_batch(aborted, "continue", "det status", "bt", 'echo @frame\\n',
                    "thread 1", "bt", "list", "set det show-frames on", "bt", "set det show-frames off", "bt",
                    "det goto 3", "bt")
    parts = out.split("@frame")
    after_abort, rest = parts[0], parts[1]
    assert re.search(r'^Thread \d+ "T1" received signal SIGABRT', after_abort, re.M), out
    assert f"det: T1 is in victim at crash.c:{line} (frame #" in after_abort, out
    # (T0 may still be short of its last recorded events when T1's abort stops everyone)
    at = re.search(r"^det: at (the end of the recording|event \d+)", after_abort, re.M)
    assert at, out
    status = after_abort[at.start():]
    assert re.search(rf"^\* T1: \d+/\d+ done; no more recorded events; stopped by SIGABRT; in victim at "
                     rf"crash\.c:{line}$", status, re.M), status
    # T0 loops on lock/unlock: the signal finds it in either (or between them),
    # or at its turnstile, not yet past the hand-off from T1's last event
    # (CI saw that once).
    assert re.search(rf"^  T0: \d+/\d+ done; .*; in main at crash\.c:({lock}|{lock + 1})$", status, re.M), status
    assert re.search(r"^  T0: .*blocked in mutex_(un)?lock on mutex \d+ \(m\) at|^  T0: .*\(running\)"
                     r"|^  T0: .*; next: event \d+ mutex_(un)?lock mutex \d+ \(m\) at crash\.c:\d+; "
                     r"waits for its turn;",
                     status, re.M), status
    assert "[gdb" not in status and "all threads blocked" not in status and "det_thread_main" not in status
    bt = re.findall(r"^#\d+ .*$", after_abort[after_abort.index("#0"):], re.M)
    assert any("victim (arg=" in f and f"crash.c:{line}" in f for f in bt), bt
    assert not any(DET_SOURCES.search(f) for f in bt), bt  # det_thread_main is hidden
    # `thread 1` (T0, parked in det) selects main's frame: list shows the program's source.
    # (gdb's `thread` prints its frame #0 first; what det selects comes after.)
    t0_line = re.search(r"^  T0: .*; in main at crash\.c:(\d+)$", status, re.M).group(1)
    assert f"det: T0 is in main at crash.c:{t0_line} (frame #" in rest, out
    sections = rest[rest.index("det: T0 is in main"):].split("det: backtraces ")
    assert not DET_SOURCES.search(sections[0]), sections[0]
    assert re.search(rf"^{lock}\t\s+pthread_mutex_lock\(&m\);", sections[0], re.M), sections[0]
    assert sections[1].startswith("show det's frames") and DET_SOURCES.search(sections[1]), sections[1]
    assert sections[2].startswith("hide det's frames") and not DET_SOURCES.search(sections[2].split("det: event")[0])
    # After a det command the selected frame is the program's too.
    tail = sections[2][sections[2].index("det: event 3 of"):]
    assert not DET_SOURCES.search(tail), tail


def test_timeline_ranges_are_clamped(counter: Path) -> None:
    evs = events(counter)
    last = evs[-1][0]
    out = gdb_batch(counter, "det timeline -5 3", f"det timeline {last - 2} {last + 50}")
    rows = [ln for ln in out.splitlines() if re.match(r"^(=>|  ) +(\d+|end)  ", ln)]
    got = [re.match(r"^(?:=>)?\s*(\d+|end)", ln).group(1) for ln in rows]
    want = [str(e[0]) for e in evs[:4]] + [str(e[0]) for e in evs[-3:]] + ["end"]
    assert got == want, out
    assert "is not in the recording" not in out
    # det next and det back are clamped too; det thread selects by T-name.
    mid, _ = unlock_near(evs, 0.5)
    out = gdb_batch(counter, f"det goto {mid}", "det thread T2", 'printf "@id %d\\n", id', f"det goto {evs[-3][0]}",
                    "det next 50", EV, "det back 99999999", EV)
    assert "det: det next: only 3 events left; going to the end" in out, out
    assert re.search(rf"det: det back: only {len(evs)} events before the end of the recording; going to the first",
                     out), out
    assert [e[0] for e in marks(out, "ev")] == [last + 1, evs[0][0]], out
    assert re.search(r"^det: T2 is in worker at gdb_counter\.c:\d+$", out, re.M), out
    assert marks(out, "id") == [[2]]


def test_last_write_goes_back_to_the_write(counter: Path) -> None:
    """det last-write, twice: each lands on the write the trace says was the
    last one (the holder of the previous lock added its id)."""
    evs = events(counter)
    seq, tid = unlock_near(evs, 0.5)
    locks = [e for e in evs if e[0] < seq and e[2] == MUTEX_LOCK]
    (lock, _, _, _), (prev_lock, prev_tid, _, _) = locks[-1], locks[-2]
    assert locks[-1][1] == tid
    add, unl = source_line("counter += id"), source_line("pthread_mutex_unlock(m)")
    now = counter_at(evs, seq)
    out = gdb_batch(counter, f"det goto {seq}", "det last-write counter", CNT, 'printf "@id %d\\n", id',
                    "det last-write counter", CNT, "det last-write nosuchvar", "det last-write 1+1",
                    "det last-write")
    assert re.search(rf"^det: the last write to counter before event {seq}: T{tid} in worker at "
                     rf"gdb_counter\.c:{unl}, after its event {lock} \(mutex_lock mutex \d+ \(lock\)\)", out, re.M), out
    assert f"det: written at gdb_counter.c:{add} (counter += id;)" in out
    assert f"det: counter: old value {now - tid}, new value {now} (" in out
    assert re.search(rf"^det: the last write to counter before T{tid} in worker at gdb_counter\.c:{unl}: T{prev_tid} "
                     rf"in worker at gdb_counter\.c:{unl}, after its event {prev_lock} ", out, re.M), out
    assert f"det: counter: old value {now - tid - prev_tid}, new value {now - tid} (" in out
    assert marks(out, "cnt") == [[now], [now - tid]]
    assert marks(out, "id") == [[tid]]
    for msg in ("det: det last-write: No symbol \"nosuchvar\" in current context.",
                "det: det last-write: '1+1' is not in memory (not an lvalue)",
                "det: det last-write: which expression?"):
        assert msg in out, (msg, out)


def test_reverse_continue_and_reverse_step(counter: Path) -> None:
    evs = events(counter)
    seq, tid = unlock_near(evs, 0.6)
    other = 3 - tid
    last_other = max(e[0] for e in evs if e[0] < seq and e[1] == other and e[2] == MUTEX_LOCK)
    add, lock_line = source_line("counter += id"), source_line("pthread_mutex_lock(m)")
    pick = source_line("pthread_mutex_t *m =")
    out = gdb_batch(counter, f"break gdb_counter.c:{add} if id == {other}", f"det goto {seq}",
                    "det reverse-continue", CNT, 'printf "@id %d\\n", id', "det reverse-step", "det reverse-step",
                    "delete", "watch counter", f"det goto {seq}", "det reverse-continue", CNT,
                    "delete", "det reverse-continue")
    assert re.search(rf"^det: det reverse-continue: Breakpoint 1 \(gdb_counter\.c:{add}\), the last hit before "
                     rf"event {seq}: T{other} in worker at gdb_counter\.c:{add}, after its event {last_other} ", out,
                     re.M), out
    cnt = marks(out, "cnt")
    assert cnt[0] == [counter_at(evs, last_other)]  # stopped before its add
    assert marks(out, "id") == [[other]]
    backs = re.findall(rf"^det: T{other} back at worker at gdb_counter\.c:(\d+), ", out, re.M)
    assert backs == [str(lock_line), str(pick)], out
    # A watchpoint: the last change of counter before seq is tid's add.
    assert re.search(rf"^det: det reverse-continue: Watchpoint \d+ \(counter\), the last hit before event {seq}: "
                     rf"T{tid} ", out, re.M), out
    assert cnt[1] == [counter_at(evs, seq)]
    assert "det: det reverse-continue: no enabled breakpoint or watchpoint to go back to" in out


def test_last_write_from_a_signal_stop(aborted: Path) -> None:
    """The position a reverse command comes back to can be a signal stop."""
    line = crash_line("assert(zero == 1)")
    out = gdb_batch(aborted, "continue", "det last-write zero", "det status")
    assert (f"det: det last-write: zero did not change between the program's start and T1 in victim at "
            f"crash.c:{line} (SIGABRT) (it is 0)") in out, out
    # T0 locks on until the abort kills the process: in the recording it
    # may have done more events after T1's abort, so the stop can be before
    # the end (`at event N of M ... stopped between events`).
    status = out[out.rindex("det: at "):]
    assert re.match(r"det: at (the end of the recording|event \d+ of \d+, .*stopped between events)", status), status
    assert re.search(r"^\* T1: .* stopped by SIGABRT; in victim", status, re.M), status


def test_objects_have_one_name_in_every_tool(counter: Path, tmp_path: Path) -> None:
    """detrec, detrec info, detreplay and gdb give an object the same number
    and name: the variable (`ledger`), or for a heap mutex where it was first
    used, and in gdb the pointer that reaches it (`shared->lock`); glibc's
    FILE objects are stdout/stderr everywhere."""
    trace = tmp_path / "dl.db"
    r = detrec("--timeout", "2", "-o", trace, program("deadlock"))
    err = r.stderr.decode()
    assert r.returncode == 124, err
    src = (ROOT / "tests" / "programs" / "deadlock.c").read_text().splitlines()
    first_use = next(i + 1 for i, ln in enumerate(src) if "pthread_mutex_lock(mine ? &ledger" in ln)
    m = re.search(rf"deadlock: T1 holds mutex (\d+) \(ledger\) and waits for mutex (\d+) \(first used at "
                  rf"deadlock\.c:{first_use}\); T2 holds mutex \2 \(first used at deadlock\.c:{first_use}\) and "
                  rf"waits for mutex \1 \(ledger\)", err)
    assert m, err
    ledger, heap = m.groups()
    info = detrec("info", trace).stdout.decode()
    assert f"T1 in mutex_lock on mutex {heap} (first used at deadlock.c:{first_use}) at" in info, info
    assert "T0 in thread_join on T1 at" in info, info
    rr = detreplay(trace)
    assert m.group(0) in rr.stderr.decode(), rr.stderr.decode()
    out = gdb_batch(trace, "det goto end", "det status")
    assert re.search(rf"^[ *] T1: .*holds mutex {ledger} \(ledger\); .* blocked in mutex_lock on mutex {heap} "
                     r"\(shared->lock\) at", out, re.M), out
    assert re.search(rf"^deadlock: T1 holds mutex {ledger} \(ledger\) .* waits for mutex {heap} \(shared->lock\)",
                     out, re.M), out
    # glibc's stdout: `stdout` in gdb (not _IO_2_1_stdout_), as in detdiff.
    out = gdb_batch(counter, "det until stdio_write")
    assert re.search(r"^det: event \d+ of \d+: T0 stdio_write file \d+ \(stdout\) at gdb_counter\.c:\d+", out,
                     re.M), out
    assert "_IO_2_1_" not in out


def test_a_freed_mutex_is_not_named_by_the_block_malloc_reused(tmp_path: Path) -> None:
    """Issue 24.5: wrapped_heap_lock late frees its queue (q = NULL), malloc
    hands the block out again as `scratch` (a char *), and two threads lock
    the old queue's destroyed mutex. gdb named it `(char *)scratch+64` (the
    nearest static pointer, into a block of another type); it names it by
    the source (`old->mut`) and says where the mutex there was destroyed."""
    trace = tmp_path / "late.db"
    r = detrec("-q", "-o", trace, "--", program("wrapped_heap_lock"), "late")
    assert r.returncode == 0, r.stderr.decode()
    evs = events(trace)
    seq, _tid, _kind, obj = [e for e in evs if e[2] == MUTEX_LOCK][-1]
    destroyed = next(o for _s, _t, kind, o in evs if kind == ev.MUTEX_DESTROY)
    src = (ROOT / "tests" / "programs" / "wrapped_heap_lock.c").read_text().splitlines()
    destroy_line = next(i for i, text in enumerate(src, 1) if text.strip() == "pthread_mutex_destroy(&q->mut);")
    out = gdb_batch(trace, f"det goto {seq}", "det status")
    assert "scratch" not in out, out
    assert re.search(rf"^det: event {seq} of \d+: T\d+ mutex_lock mutex {obj} \(old->mut; after mutex {destroyed} "
                     rf"\(q->mut\) was destroyed there at wrapped_heap_lock\.c:{destroy_line}\)", out, re.M), out


def test_divergence_reported_in_gdb(counter: Path, tmp_path: Path) -> None:
    bad = tmp_path / "diverge.db"
    shutil.copy(counter, bad)
    db = sqlite3.connect(bad)
    env = json.loads(db.execute("SELECT value FROM meta WHERE key = 'env'").fetchone()[0])
    env["GDB_DIVERGE"] = "1"
    db.execute("UPDATE meta SET value = ? WHERE key = 'env'", (json.dumps(env),))
    db.commit()
    db.close()
    reseal(bad)
    evs = events(counter)
    sixth = [e[0] for e in evs if e[1] == 1 and e[2] == MUTEX_LOCK][5]
    line = source_line("pthread_mutex_lock(m)")
    out = gdb_batch(bad, "continue", "det status", "continue")
    assert re.search(rf"det: the replay diverged: divergence at event {sixth} \(T1\): recorded "
                     r"mutex_lock\(mutex \d+ \(lock\)\), got mutex_lock\(an object at 0x[0-9a-f]+ \(other\)\) at "
                     rf"gdb_counter\.c:{line}", out), out
    assert re.search(rf"^#\d+ .* in worker \(arg=0x1\) at tests/programs/gdb_counter.c:{line}", out, re.M), out
    assert "exited with code 0175" in out  # 125: det stopped the program


def test_relaxed_replay(counter: Path) -> None:
    evs = events(counter)
    late, late_tid = unlock_near(evs, 0.6)
    early, early_tid = unlock_near(evs, 0.25)
    out = gdb_batch(counter, f"det goto {late}", EV, CNT, f"det goto {early}", EV, CNT, f"det goto {late}", EV,
                    CNT, "det status", opts=("--relaxed",))
    assert marks(out, "ev") == [[late, late_tid], [early, early_tid], [late, late_tid]]
    assert marks(out, "cnt") == [[counter_at(evs, late)], [counter_at(evs, early)], [counter_at(evs, late)]]
    assert "relaxed replay" in out
    out = gdb_batch(counter, f"det goto {late}", "det last-write counter", opts=("--relaxed",))
    assert "det: det last-write: going back needs an ordered replay (start gdb without --relaxed)" in out, out


def test_bad_input(counter: Path, tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_text("not a trace")
    for args in (["--gdb", junk], ["--gdb", "-g", "999999", counter], ["--gdb", tmp_path / "none.db"]):
        r = detreplay(*args, timeout=60)
        err = r.stderr.decode()
        assert r.returncode == 2 and "Traceback" not in err, err
        assert len(err.strip().splitlines()) == 1 and err.startswith("detreplay: "), err
    r = detreplay(counter, "--", "-batch", timeout=60)
    assert r.returncode == 2 and b"add --gdb" in r.stderr
    out = gdb_batch(counter, "det goto 99999999", "det goto banana", "det next 0", "det back 99999999",
                    "det step-thread 7", "det break-event thread", "det until any", "det timeline 5 1",
                    "det frobnicate", EV)
    for msg in ("det: det goto: event 99999999 is not in the recording", "det: det goto: 'banana' is not a number",
                "det: det next: N must be at least 1", "det: det back: already at the first event (event 0)",
                "det: det step-thread: no thread T7", "det: det until: `any` needs an object",
                "det: det timeline: TO is before FROM", "det: unknown command 'det frobnicate'"):
        assert msg in out, (msg, out)
    assert marks(out, "ev")[0][0] == events(counter)[0][0]  # nothing moved


def test_exact_argv_env_cwd(tmp_path: Path) -> None:
    work = tmp_path / "a dir"
    work.mkdir()
    env = {"PATH": "/usr/bin:/bin", "SPACED VALUE": " a  b ", "EMPTY": "", "LAST": "x"}
    trace = tmp_path / "env.db"
    r = detrec("-q", "-o", trace, program("gdb_env"), "one two", "", " three ", cwd=work, env=env)
    assert r.returncode == 0, r.stderr.decode()
    recorded = r.stdout.decode()
    # The program writes to a terminal of its own (gdb's --tty, where det's relay shows its output):
    # on gdb's stdout its lines and gdb's notices ("[Thread ... exited]", "[Inferior 1 ... exited
    # normally]") can cut through each other, as in any gdb session sharing one terminal.
    master, slave = os.openpty()
    try:
        tty.setraw(slave)
        out = gdb_batch(trace, "continue", gdb_opts=(f"--tty={os.ttyname(slave)}",))
        os.set_blocking(master, False)
        shown = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except (BlockingIOError, OSError):
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(master)
        os.close(slave)
    assert shown.decode() == recorded, out
    assert "argv[1]=<one two>" not in out, out  # none of it on gdb's stdout
    assert b"LINES=" not in shown and b"COLUMNS=" not in shown


def test_disas(counter: Path) -> None:
    seq, tid = unlock_near(events(counter), 0.5)
    out = gdb_batch(counter, f"det goto {seq}", "det disas", f"det disas T{tid}")
    assert re.search(r"^=> 0x[0-9a-f]+ <worker\+\d+>\s+call 0x[0-9a-f]+ <pthread_mutex_unlock@plt>", out, re.M), out
    # Without capstone or pyelftools importable: one clear hint.
    hint = subprocess.run([sys.executable, "-I", "-S", "-c",
                           f"import sys; sys.path.insert(0, {str(Path(det.__file__).parent.parent)!r}); "
                           "from det import disasm; print(disasm.missing([]))"],
                          capture_output=True, text=True, timeout=60)
    assert "needs the Python packages capstone and pyelftools" in hint.stdout, hint.stdout + hint.stderr
    assert "x/20i $pc" in hint.stdout


def tmux(*args: str) -> str:
    r = subprocess.run([need("tmux"), *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout


def wait_for(session: str, pattern: str, timeout: float = 60, after: int = 0) -> str:
    """Wait until the pane (below its first `after` lines) matches pattern."""
    end = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < end:
        screen = tmux("capture-pane", "-p", "-J", "-S", "-2000", "-t", session)
        if re.search(pattern, "\n".join(screen.splitlines()[after:]), re.M):
            return screen
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {pattern!r}; screen:\n{screen}")


def test_interactive_session_in_tmux(deadlock: Path) -> None:
    need("gdb")
    session = f"detgdb{os.getpid()}"
    cmd = f"{DETREPLAY} --gdb {deadlock} -- -nx -q"
    tmux("new-session", "-d", "-s", session, "-x", "200", "-y", "60", cmd)
    try:
        screen = wait_for(session, r"^\(gdb\) $")
        assert "det: event 0 of" in screen

        def seen(screen: str) -> int:
            return len(screen.rstrip().splitlines()) - 1  # from the prompt line on is new

        n = seen(screen)

        def typed(text: str, pattern: str) -> str:
            nonlocal n
            tmux("send-keys", "-t", session, text, "Enter")
            out = wait_for(session, pattern, after=n)
            n = seen(out)
            return out

        typed("det goto end", r"^deadlock: T\d holds mutex")
        typed("det status", r"^deadlock: T1 holds .* T2 holds ")
        typed("info threads", r'"T2"')
        # Back to the last lock taken: where it lies depends on the recorded run (the deadlock may come at the
        # first transfer, with a thread's start three events before the end).
        evs = events(deadlock)
        last_lock = max(i for i, (_, _, kind, _) in enumerate(evs) if kind == MUTEX_LOCK)
        screen = typed(f"det back {len(evs) - last_lock}", rf"^det: event {last_lock} of \d+: T\d mutex_lock")
        assert "Traceback" not in screen
        typed("p $det_event", r"^\$1 = \d+")
        typed("quit", r"Quit anyway\? \(y or n\)")
        tmux("send-keys", "-t", session, "y", "Enter")
        end = time.monotonic() + 30
        while time.monotonic() < end:
            if session not in subprocess.run(["tmux", "list-sessions"], capture_output=True, text=True).stdout:
                break
            time.sleep(0.2)
        else:
            raise AssertionError("gdb did not quit")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def test_strict_trace_replays_in_strict_order_under_gdb(tmp_path: Path) -> None:
    """A strict trace with det-cc's scheduling points (cc_yield events, which
    only strict order has) replays under gdb to its recorded end, as plain
    detreplay does; gdb once replayed it in ordered mode and diverged at the
    first cc_yield."""
    t = tmp_path / "cc.db"
    detrec("--chaos", "--strict", "--seed", "1", "--depth", "3", "--pct-k", "52", "-o", t, "--",
           sample_bin("lost_update.mem"))
    with sqlite3.connect(t) as db:
        yields = db.execute("SELECT count(*) FROM event_rows e JOIN calls c ON c.call = e.call "
                            "WHERE c.kind = ?", (ev.CC_YIELD,)).fetchone()[0]
    assert yields > 0, "the recording has no cc_yield: this test needs one to test anything"
    out = gdb_batch(t, "det status", "continue")
    assert "strict replay" in out and ", strict replay; recorded:" in out, out
    assert "diverged" not in out, out
    assert re.search(r"det: the replay ended with exit code \d+; recorded: exit \d+", out), out


def test_status_at_the_end_names_the_crash(tmp_path: Path) -> None:
    """After a recorded crash, `det status` at the end says which thread died
    of what, in which call at which line (det.ending), not just the signal."""
    trace = tmp_path / "crash.db"
    r = detrec("-q", "-o", trace, program("lock_fault"))
    assert r.returncode == 139, r.stderr.decode()
    src = (ROOT / "tests" / "programs" / "lock_fault.c").read_text().splitlines()
    line = next(i + 1 for i, x in enumerate(src) if "/* CRASH */" in x)
    out = gdb_batch(trace, "det goto end", "det status")
    assert re.search(r"recorded: T1 died of SIGSEGV \(address 0x[0-9a-f]+\) in pthread_mutex_lock called at "
                     rf"lock_fault\.c:{line} \(consumer\)", out), out
