"""Going back from snapshots (issue 26.2): `det goto` backward and
`reverse-continue` resume the nearest snapshot of the whole multithreaded
replay (replayer/snapshot.c, gdb-ext/det_gdb/snapshots.py) and land exactly
where re-execution from the program's start lands (same event, thread,
variables, thread-local and thread-specific values); the program's output
and exit after a resume are the plain replay's.

Rules (as tests/gdb/test_gdb.py): real gdb through .venv/bin/detreplay on a
trace recorded by detrec here; each comparison is between one session with
snapshots and one with `det snapshots off`, and a session with snapshots
must say it went back from one (else the comparison proves nothing). The
program (tests/programs/snapshot_threads.c) checks its own totals and
exits 1 when a recreated thread lost its state. A missing gdb fails.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import ROOT, detrec, detreplay, gdb_batch, marks, program, source_line

SOURCE = ROOT / "tests" / "programs" / "snapshot_threads.c"
EVERY = 20   # events between snapshots: several at most positions of a 600-event trace


def line_of(text: str) -> int:
    return source_line(SOURCE, text)


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    t = tmp_path_factory.mktemp("snapshots") / "snap.db"
    r = detrec("-q", "-o", t, program("snapshot_threads"), "40")
    assert r.returncode == 0, r.stderr.decode()
    return t


def resumes(out: str) -> int:
    found = re.findall(r"^det: snapshots every \d+ events, at most \d+: before events (?:[\d, ]+|none yet); "
                       r"gone back from one (\d+) times?$", out, re.M)
    assert found, out
    return int(found[-1])


def both(trace: Path, *cmds: str) -> tuple[str, str]:
    """The session with snapshots (every EVERY events), and without."""
    snap = gdb_batch(trace, f"det snapshots every {EVERY}", *cmds, "det snapshots")
    plain = gdb_batch(trace, "det snapshots off", *cmds)
    assert resumes(snap) > 0, snap
    return snap, plain


STATE = ('printf "@at %d %d %d\\n", $det_event, $det_thread, $_inferior_thread_count',
         'printf "@v %d %d %d %d %d\\n", counter, progress[0], progress[1], progress[2], mine')


def test_goto_backward_lands_where_reexecution_does(trace: Path) -> None:
    cmds = ["det goto 420"]
    for target in (400, 333, 212, 131, 57, 3):
        cmds += [f"det goto {target}", *STATE, "det goto 420"]
    snap, plain = both(trace, *cmds)
    at, values = marks(snap, "at"), marks(snap, "v")
    assert [a[0] for a in at] == [400, 333, 212, 131, 57, 3], snap
    assert at == marks(plain, "at"), (snap, plain)
    assert values == marks(plain, "v"), (snap, plain)
    assert "det: the replay diverged" not in snap, snap


def test_reverse_continue_lands_where_reexecution_does(trace: Path) -> None:
    where = line_of("progress[id] = mine;")
    # (the thread's own values: `counter` there is the other workers' too,
    # and they run on between their events while T2 goes to the breakpoint)
    cmds = [f"break snapshot_threads.c:{where} if id == 1", "det goto 450", "reverse-continue",
            'printf "@rc %d %d %d %d\\n", $det_thread, i, now, mine', "reverse-continue",
            'printf "@rc %d %d %d %d\\n", $det_thread, i, now, mine']
    snap, plain = both(trace, *cmds)
    got = marks(snap, "rc")
    assert len(got) == 2 and got[0][1] == got[1][1] + 1, snap  # T2 (id 1): two rounds back in a row
    assert got == marks(plain, "rc"), (snap, plain)


def test_output_and_exit_after_a_resume_are_the_replays(trace: Path) -> None:
    """Forward to 150 only: every line after it comes from the resumed snapshot."""
    plain = detreplay("-q", str(trace))
    assert plain.returncode == 0, plain.stderr.decode()
    want = plain.stdout.decode().splitlines()
    # (gdb's own "[New Thread ...]" lines would cut through the program's
    # on the one stdout they share)
    out = gdb_batch(trace, "set print thread-events off", "set print inferior-events off",
                    f"det snapshots every {EVERY}", "det goto 150", "det goto 60", "det snapshots", "continue")
    assert resumes(out) > 0, out
    lines = [ln for ln in out.splitlines() if ln.startswith(("worker ", "counter "))]
    assert lines == want, out
    assert want[-1].startswith("counter 240 of 240, 0 workers wrong"), want
    assert "det: the replay ended with exit code 0; recorded: exit 0" in out, out
