"""detrec --isolated (issue 27): a run in isolated mode (isolated/, one fixed
commit order, races included) recorded as an ordinary trace: detreplay runs
it isolated again with the recorded inputs and checks every event and the
outcome; detrec info/dump, detdiff and dettui read it; what it cannot
record is refused in one line.

Rules: expectations come from the recording's own output and the trace
(sqlite3), never from libdetiso.so's log; replay loops are short.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
from pathlib import Path

import pytest

from conftest import BIN, ROOT, detrec, detreplay, outcome, program, query, run, sample_bin
from det.tui.app import DetTui

REPLAYS = 10


def kinds(trace: Path) -> set[str]:
    return {k for (k,) in query(trace, "SELECT DISTINCT k.name FROM events e JOIN event_kinds k USING (kind)")}


def first_obj(trace: Path) -> int:
    return query(trace, "SELECT min(obj) FROM objects WHERE kind = 2")[0][0]


def one_line(r: subprocess.CompletedProcess, tool: str) -> str:
    err = r.stderr.decode()
    lines = [ln for ln in err.splitlines() if ln.startswith(f"{tool}:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def record(trace: Path, *argv: str | Path, stdin: bytes = b"") -> subprocess.CompletedProcess:
    r = detrec("--isolated", "-o", trace, *argv, input=stdin, timeout=120)
    assert trace.exists(), r.stderr.decode()
    return r


# (sample, arguments): racy samples whose native output varies run to run
RACY = [("racy_counter", ["2000"]), ("flag_handoff", ["300"]), ("last_zero", [])]


@pytest.mark.parametrize(("name", "args"), RACY, ids=[r[0] for r in RACY])
def test_racy_sample_replays_identically(tmp_path: Path, name: str, args: list[str]) -> None:
    trace = tmp_path / f"{name}.db"
    r = record(trace, sample_bin(name), *args)
    assert r.stdout.strip(), r.stderr.decode()
    assert "isolated" == query(trace, "SELECT value FROM meta WHERE key = 'mode'")[0][0]
    assert {"thread_create", "thread_start", "mutex_lock"} <= kinds(trace), kinds(trace)
    want = outcome(trace)
    for i in range(REPLAYS):
        rr = detreplay(trace, timeout=120)
        assert rr.returncode == r.returncode, f"replay {i + 1}: {rr.stderr.decode()}"
        assert rr.stdout == r.stdout, f"replay {i + 1}: output differs\n{rr.stdout!r}\n{r.stdout!r}"
        assert f"replayed {want['events']} events (isolated); outcome matches" in one_line(rr, "detreplay")


def test_inputs_come_from_the_trace(tmp_path: Path) -> None:
    """Time, random bytes (getrandom, /dev/urandom), stdin and a file differ
    run to run: each recording replays to its own output, whatever the
    clock and stdin say at replay; a changed file is a one-line divergence."""
    data = tmp_path / "input.txt"
    data.write_text("first\n")
    outs = []
    for n in range(2):
        trace = tmp_path / f"inputs{n}.db"
        r = record(trace, program("iso_inputs"), data, stdin=f"line {n}\n".encode())
        assert r.returncode == 0, r.stderr.decode()
        assert r.stdout.endswith(f"stdin = line {n}, file = first\n".encode()), r.stdout
        assert {"clock_gettime", "getrandom", "read", "file_read", "mutex_lock"} <= kinds(trace), kinds(trace)
        for i in range(3):
            rr = detreplay("-q", trace, input=b"something else\n", timeout=120)
            assert rr.returncode == 0, f"replay {i + 1}: {rr.stderr.decode()}"
            assert rr.stdout == r.stdout, f"replay {i + 1}: output differs\n{rr.stdout!r}\n{r.stdout!r}"
        outs.append(r.stdout)
    assert outs[0] != outs[1]  # (the clock and random bytes moved: they are inputs, not constants)
    data.write_text("changed\n")
    rr = detreplay(trace, timeout=120)
    assert rr.returncode == 125 and "file_read" in one_line(rr, "detreplay"), rr.stderr.decode()


def test_every_tool_reads_the_trace(tmp_path: Path) -> None:
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    for t in (a, b):
        record(t, sample_bin("racy_counter"), "2000")
    info = detrec("info", a, timeout=60)
    assert info.returncode == 0 and b"(isolated)" in info.stdout, info.stderr.decode()
    (events,) = query(a, "SELECT count(*) FROM event_rows")[0]
    assert f"events:     {events}".encode() in info.stdout
    dump = detrec("dump", a, "--thread", "T1", timeout=60)
    assert dump.returncode == 0 and b"thread_start" in dump.stdout and b"mutex_lock" in dump.stdout, dump.stderr
    # the mutex, an object at its address, named by the program's symbols (the modules are in the trace)
    (lock,) = re.findall(r"static pthread_mutex_t (\w+)", (ROOT / "samples" / "racy_counter.c").read_text())
    assert f"mutex_lock             mutex {first_obj(a)} ({lock})" in dump.stdout.decode(), dump.stdout.decode()
    diff = run([BIN / "detdiff", a, b], timeout=60)  # one order, every time
    assert diff.returncode == 0 and b"Identical: the same schedule" in diff.stdout, diff.stdout.decode()

    async def go() -> str:
        app = DetTui([str(a)])
        async with app.run_test(size=(120, 40)) as pilot:
            for _ in range(200):
                await pilot.pause(0.05)
                if getattr(app.screen, "lanes_loaded", False):
                    break
            return type(app.screen).__name__ + " " + str(getattr(app.screen, "lanes_loaded", False))
    assert asyncio.run(go()).endswith("True")


def test_deadlock_is_recorded_and_replays(tmp_path: Path) -> None:
    trace = tmp_path / "deadlock.db"
    r = record(trace, program("deadlock"))
    assert r.returncode == 125 and b"deadlock: every thread is blocked" in r.stderr, r.stderr.decode()
    rr = detreplay(trace, timeout=120)
    assert rr.returncode == 125 and "outcome matches" in one_line(rr, "detreplay"), rr.stderr.decode()


def test_refusals_are_one_line(tmp_path: Path) -> None:
    out = tmp_path / "x.db"
    for flags, words in ((["--strict"], "not with --strict"), (["--ptrace"], "pick one"),
                         (["--until-fail", "3"], "not with --until-fail")):
        r = detrec("--isolated", *flags, "-o", out, sample_bin("racy_counter"), "10", timeout=60)
        assert r.returncode == 2 and words in one_line(r, "detrec"), (flags, r.stderr.decode())
    r = detrec("--isolated", "-o", out, program("ptrace_static"), timeout=60)
    assert r.returncode == 2 and "statically linked" in one_line(r, "detrec"), r.stderr.decode()
    # fork: its child's events and inputs would not be in the trace
    r = detrec("--isolated", "-o", out, sample_bin("fork_pool"), timeout=60)
    assert r.returncode == 125 and "fork() is not recorded" in one_line(r, "detrec --isolated"), r.stderr.decode()
    assert not out.exists()
    trace = tmp_path / "rc.db"
    record(trace, sample_bin("racy_counter"), "10")
    for flags, words in ((["--relaxed"], "one recorded order"), (["--gdb"], "without gdb")):
        r = detreplay(*flags, trace, timeout=60)
        assert r.returncode == 2 and words in one_line(r, "detreplay"), (flags, r.stderr.decode())


def test_a_timeout_recording_replays_to_the_same_limit(tmp_path: Path) -> None:
    trace = tmp_path / "forever.db"
    r = detrec("--isolated", "--timeout", "2", "-o", trace, program("iso_forever"), timeout=120)
    assert r.returncode == 124 and trace.exists(), r.stderr.decode()
    assert outcome(trace)["status"] == "timeout"
    rr = detreplay(trace, timeout=120)
    assert rr.returncode == 124 and "events (isolated) the same" in one_line(rr, "detreplay"), rr.stderr.decode()
