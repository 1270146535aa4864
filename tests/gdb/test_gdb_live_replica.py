"""gdb on a live replica (`detrec --follow`): `detreplay --follow --gdb`
attaches a real gdb to the replica while the program is still recorded; the
replica pauses and steps while the recording goes on, then catches up. A
warm standby (`detrec --follow --standby`) holds a program that died (killed,
crashed) at the recording's last event, for gdb.

Rules: real gdb, real detrec and detreplay; values read from the replica
are checked against the finished trace (tests/programs/standby_counter.c:
`counter` is its number of recorded mutex_lock events), never against
numbers from an earlier run. Each test keeps its replicas in its own
temporary directory (TMPDIR), so another test's replica is never found, and
kills whatever it leaves. A missing gdb fails the test.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import DETREC, DETREPLAY, need, program, query, sample_bin

COUNTER = program("standby_counter")


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "TMPDIR": str(tmp_path)}


def _statuses(tmp_path: Path) -> list[dict]:
    out = []
    for p in tmp_path.glob("det-follow-*/status.json"):
        try:
            out.append(json.loads(p.read_text()))
        except (OSError, ValueError):
            pass
    return out


def _wait_status(tmp_path: Path, ok, timeout: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for st in _statuses(tmp_path):
            if ok(st):
                return st
        time.sleep(0.05)
    raise AssertionError(f"no replica status as wanted: {_statuses(tmp_path)}")


def _attach(tmp_path: Path, *cmds: str, pid: int | None = None) -> str:
    need("gdb")
    args = [DETREPLAY, "--follow", *([str(pid)] if pid is not None else []), "--gdb", "--", "-nx", "-batch"]
    for c in cmds:
        args += ["-ex", c]
    r = subprocess.run(args, env=_env(tmp_path), capture_output=True, timeout=120)
    out = r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")
    assert "Traceback" not in out and "Python Exception" not in out, out
    return out


def _kill(pid: object) -> None:
    if isinstance(pid, int):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture
def replicas(tmp_path: Path):
    """Kills every replica (and its program) the test left."""
    yield
    for st in _statuses(tmp_path):
        _kill(st.get("pid"))
        _kill(st.get("program_pid"))


def _locks(trace: Path) -> int:
    return query(trace, "SELECT count(*) FROM events e JOIN event_kinds k ON k.kind = e.kind "
                        "WHERE k.name = 'mutex_lock'")[0][0]


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _primary(status: dict) -> int:
    """The recorded program: the counter under this replica's detrec that is not the replica's."""
    mine = []
    for p in subprocess.check_output(["pgrep", "-x", "-f", str(COUNTER)]).split():
        pid = up = int(p)
        while up > 1 and up not in (status["detrec_pid"], status["pid"]):
            up = _parent(up)
        if up == status["detrec_pid"]:
            mine.append(pid)
    assert len(mine) == 1, (mine, status)
    return mine[0]


def _record(tmp_path: Path, trace: Path, *args: str, standby: bool = True) -> subprocess.Popen:
    flags = ["--standby", "120"] if standby else []
    return subprocess.Popen([DETREC, "--follow", *flags, "-o", trace, "--", COUNTER, *args], env=_env(tmp_path),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _held_line(p: subprocess.Popen) -> tuple[str, int]:
    """detrec's output once it ended (it does not wait for the standby), and the pid it names."""
    out, err = p.communicate(timeout=90)
    text = err.decode(errors="replace")
    m = re.search(r"^detrec: replica holds the program's state at the recording's last event.*"
                  r"`detreplay --follow --gdb (\d+)` attaches gdb to it; it ends in 120 s, or with `kill \1`$",
                  text, re.M)
    assert m, text
    return text, int(m[1])


def test_standby_holds_a_killed_programs_state_for_gdb(tmp_path: Path, replicas: None) -> None:
    trace = tmp_path / "killed.db"
    p = _record(tmp_path, trace)
    st = _wait_status(tmp_path, lambda s: s.get("state") == "following" and s.get("done", 0) > 300)
    os.kill(_primary(st), signal.SIGKILL)
    err, pid = _held_line(p)
    assert "detrec: killed by SIGKILL" in err, err
    assert pid == st["pid"]
    out = _attach(tmp_path, "det status", "print counter", pid=pid)
    assert "det: standby replica" in out and "the program died" in out, out
    assert re.search(r"^  T1  held before its next call into det", out, re.M), out
    # the replica is where the recording ended: every recorded lock, each followed by its increment
    m = re.search(r"^\$1 = (\d+)$", out, re.M)
    assert m and int(m[1]) == _locks(trace), out
    # gdb detached: it still holds, and a second look sees the same
    assert re.search(r"^\$1 = (\d+)$", _attach(tmp_path, "print counter"), re.M)[1] == m[1]
    os.kill(pid, signal.SIGKILL)


def test_standby_holds_a_crash_at_its_fault(tmp_path: Path, replicas: None) -> None:
    trace = tmp_path / "crash.db"
    p = _record(tmp_path, trace, "2000")
    err, pid = _held_line(p)
    assert re.search(r"\(T[12] stopped at the SIGSEGV the program died of\)", err), err
    out = _attach(tmp_path, "det status", "print n", "print counter", pid=pid)
    assert re.search(r"^det: gdb thread \d+ took the SIGSEGV the program died of; here:$", out, re.M), out
    assert re.search(r"^#\d+ .*crash_here \(n=.*standby_counter\.c:\d+$", out, re.M), out
    assert re.search(r"^  T[12]  took SIGSEGV, the signal the program died of", out, re.M), out
    assert re.search(r"^\$1 = 2000$", out, re.M), out  # the thread that counted to 2000 wrote through null
    assert int(re.search(r"^\$2 = (\d+)$", out, re.M)[1]) == _locks(trace)
    # held for good: gdb's continue changes nothing; the replica's end is a kill (or its time)
    again = _attach(tmp_path, "continue&", "shell sleep 0.5", "interrupt", "shell sleep 0.2", "print counter", pid=pid)
    assert int(re.search(r"^\$1 = (\d+)$", again, re.M)[1]) == _locks(trace), again
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _statuses(tmp_path):
        time.sleep(0.1)
    assert not _statuses(tmp_path), "a standby told to end left its status behind"


def test_standby_of_a_program_that_ended_well_ends_with_it(tmp_path: Path, replicas: None) -> None:
    r = subprocess.run([DETREC, "--follow", "--standby", "120", "-o", tmp_path / "ok.db", "--",
                        sample_bin("pingpong_ok"), "2000"], env=_env(tmp_path), capture_output=True, timeout=120)
    err = r.stderr.decode()
    assert r.returncode == 0 and re.search(r"^detrec: replica followed all \d+ events", err, re.M), err
    assert not _statuses(tmp_path) or all(s.get("state") == "done" for s in _statuses(tmp_path))


def test_gdb_pauses_and_steps_a_live_replica_which_then_catches_up(tmp_path: Path, replicas: None) -> None:
    trace = tmp_path / "live.db"
    p = _record(tmp_path, trace, standby=False)
    st = _wait_status(tmp_path, lambda s: s.get("state") == "following" and s.get("done", 0) > 300)
    out = _attach(tmp_path, "det status", "shell sleep 1", "det status", "thread 2", "next", "next", "next",
                  "print counter", pid=p.pid)
    heads = re.findall(r"^det: live replica \(pid (\d+)\) of .*standby_counter, following: (\d+) of (\d+) recorded "
                       r"events done, (\d+) events / [\d.]+ s behind the recording$", out, re.M)
    assert len(heads) >= 3 and int(heads[0][0]) == st["pid"], out
    # paused under gdb: it did nothing while the recording went on
    (_, done1, captured1, _), (_, done2, captured2, _) = heads[1], heads[2]
    assert done1 == done2 and int(captured2) > int(captured1), out
    # stepping leaves det's wait and walks the program's own lines
    assert re.search(r"^2[4-9]\t", out, re.M), out
    assert re.search(r"^\$1 = \d+$", out, re.M), out
    os.kill(_primary(st), signal.SIGKILL)
    _, err = p.communicate(timeout=90)
    text = err.decode()
    n = int(re.search(r"; (\d+) events;", text)[1])
    assert re.search(rf"^detrec: replica followed all {n} events: lag at most \d+ events", text, re.M), text


def test_follow_gdb_bad_input(tmp_path: Path) -> None:
    env = _env(tmp_path)
    for args, said in ((["--follow", "--gdb"], "no live replica of yours is running"),
                       (["--follow", "99999999", "--gdb"], "no live replica has pid 99999999"),
                       (["--follow", "abc", "--gdb"], "abc: not a pid"),
                       (["--follow", "--gdb", "--relaxed"], "--follow --gdb attaches gdb to a running replica"),
                       (["--follow"], "--follow needs the capture log")):
        r = subprocess.run([DETREPLAY, *args], env=env, capture_output=True, timeout=30)
        err = r.stderr.decode()
        assert r.returncode == 2 and said in err and "Traceback" not in err, (args, err)
    r = subprocess.run([DETREC, "--standby", "--", COUNTER], env=env, capture_output=True, timeout=30)
    assert r.returncode == 2 and "--standby goes with --follow" in r.stderr.decode()
