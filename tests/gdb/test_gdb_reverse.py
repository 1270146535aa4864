"""gdb's own habits in a det session (issue 24.6): reverse-continue,
reverse-next, reverse-step, reverse-finish and their aliases go back by
det's re-execution; the program's output is shown once however often the
replay goes back; `det goto end` after a crash says it is where the
recording ended; the banner and `det status` name the replay's mode.

Rules (as tests/gdb/test_gdb.py): real gdb through .venv/bin/detreplay on
traces recorded by detrec here; lines are found in the program's source by
their text, values read from the program are what its source says they must
be. A missing gdb or tmux fails the test.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from conftest import DETREPLAY, ROOT, detrec, gdb_batch, marks, need, program, source_line

SOURCE = ROOT / "tests" / "programs" / "gdb_reverse.c"


def line_of(text: str, path: Path = SOURCE) -> int:
    return source_line(path, text)


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    t = tmp_path_factory.mktemp("reverse") / "rev.db"
    r = detrec("-q", "-o", t, program("gdb_reverse"), "20")
    assert r.returncode == 0, r.stderr.decode()
    return t


def backs(out: str) -> list[tuple[str, int]]:
    """(function, line) of each `det: T2 back at ...` line, in order."""
    found = re.findall(r"^det: T2 back at (?:the call of \w+: )?(\w+) at gdb_reverse\.c:(\d+), ", out, re.M)
    return [(f, int(n)) for f, n in found]


def test_gdb_reverse_commands_go_back(trace: Path) -> None:
    """rc/reverse-continue to a breakpoint, reverse-step into the call the
    previous line made, reverse-finish to that call, reverse-next over it."""
    cond, unlock = line_of("if (now < 0)"), line_of("pthread_mutex_unlock(&lock)")
    call, lock, close = line_of("add_twice(id);"), line_of("pthread_mutex_lock(&lock)"), line_of("return total;") + 1
    out = gdb_batch(trace, f"break gdb_reverse.c:{cond} if id == 2", "continue", "continue",
                    'printf "@i %d\\n", i', "rc", 'printf "@i %d\\n", i', "reverse-step", "rs",
                    'printf "@v %d\\n", v', "reverse-finish", "reverse-next", "rn", "reverse-continue",
                    "reverse-stepi")
    assert "does not support this command" not in out, out
    # The second hit (i 1), then back to the first (i 0).
    assert marks(out, "i") == [[1], [0]], out
    assert re.search(rf"^det: reverse-continue: Breakpoint 1 \(gdb_reverse\.c:{cond}\), the last hit before T2 in "
                     rf"worker at gdb_reverse\.c:{cond}: T2 in worker at gdb_reverse\.c:{cond}, ", out, re.M), out
    # rn from the lock line of T2's first iteration: the loop's start.
    loop = line_of("for (long i = 0; i < iters; i++)")
    assert backs(out) == [("worker", unlock), ("add_twice", close), ("worker", call), ("worker", lock),
                          ("worker", loop)], out
    assert marks(out, "v") == [[2]]  # in T2's own call of add_twice
    # No breakpoint hit before the first: said, with where to go instead.
    assert re.search(r"^det: reverse-continue: none of your breakpoints or watchpoints was hit between the "
                     r"program's start and ", out, re.M), out
    assert "det: reverse-stepi: det goes back by re-execution to lines, not instructions: reverse-step" in out, out


def test_gdb_reverse_commands_say_why_not(trace: Path) -> None:
    out = gdb_batch(trace, "reverse-next 0", "reverse-step x", "rc", "continue", "continue", "reverse-finish")
    assert "det: reverse-next: N must be at least 1" in out, out
    assert "det: reverse-step: 'x' is not a number" in out, out
    assert "det: reverse-continue: no enabled breakpoint or watchpoint to go back to (`det goto start`" in out, out
    assert "det: the program is not running; `det goto N` starts the replay again" in out, out
    out = gdb_batch(trace, "break add_twice", "continue", "reverse-finish", "reverse-finish", "reverse-next",
                    opts=("--relaxed",))
    assert "det: reverse-finish: going back needs an ordered replay (start gdb without --relaxed)" in out, out
    assert "det: reverse-next: going back needs an ordered replay" in out, out
    out = gdb_batch(trace, "det goto end", "rn", "break worker", "det goto start", "continue", "reverse-finish")
    assert re.search(r"^det: reverse-next: no line table for _start, T0's innermost frame in the program's code "
                     r"\(compiled without -g, or past main's return\); `det back \[N\]`", out, re.M), out
    assert re.search(r"^det: reverse-finish: worker is T\d's outermost function in the program's code \(called by "
                     r"\w+\); `det goto N` or `det back` go further back", out, re.M), out


OUTPUT = re.compile(r"^output line \d: .*$", re.M)  # (not gdb's listing of the printf)


def test_output_is_shown_once(trace: Path) -> None:
    """Going back (goto, back, reverse-*) re-executes the program; what it
    printed before the furthest point reached is not printed again."""
    out = gdb_batch(trace, "det goto end", "det goto 10", "det goto end", "det back 3", "break add_twice",
                    "det goto 20", "continue", "rc", "det goto start", "delete", "continue")
    lines = OUTPUT.findall(out)
    assert [ln.split(":")[0] for ln in lines] == ["output line 1", "output line 2", "output line 3"], out
    assert "det: the replay ended with exit code 0" in out


def test_output_once_in_a_terminal(trace: Path) -> None:
    """The same in a real terminal (tmux): the program writes to a terminal
    det relays, which drops what was shown."""
    need("gdb")
    tmux = need("tmux")
    session = f"detrev{os.getpid()}"
    subprocess.run([tmux, "new-session", "-d", "-s", session, "-x", "200", "-y", "80",
                    f"{DETREPLAY} --gdb {trace} -- -nx -q"], check=True, timeout=30)

    def screen() -> str:
        return subprocess.run([tmux, "capture-pane", "-p", "-J", "-S", "-2000", "-t", session],
                              capture_output=True, text=True, timeout=30).stdout

    def typed(text: str, pattern: str, count: int = 1) -> str:
        subprocess.run([tmux, "send-keys", "-t", session, text, "Enter"], check=True, timeout=30)
        end = time.monotonic() + 90
        while time.monotonic() < end:
            s = screen()
            if len(re.findall(pattern, s, re.M)) >= count:
                return s
            time.sleep(0.2)
        raise AssertionError(f"timed out waiting for {pattern!r}; screen:\n{screen()}")

    try:
        typed("", r"^\(gdb\) ")
        typed("det goto end", r"^det: at the end of the recording")
        typed("det goto 10", r"^det: event 10 of")
        typed("det goto end", r"^det: at the end of the recording", count=2)
        typed("det goto 60", r"^det: event 60 of")
        s = typed("rs", r"^det: (T\d back at|reverse-step: )")
        assert "does not support" not in s, s
        s = typed("det goto end", r"^det: at the end of the recording", count=3)
        assert [ln.split(":")[0] for ln in OUTPUT.findall(s)] == ["output line 1", "output line 2",
                                                                  "output line 3"], s
    finally:
        subprocess.run([tmux, "kill-session", "-t", session], capture_output=True, timeout=30)


@pytest.fixture(scope="module")
def aborted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    t = tmp_path_factory.mktemp("abort") / "abort.db"
    r = detrec("-q", "-o", t, program("crash"), "assert")
    assert r.returncode == 134, r.stderr.decode()
    return t


def test_goto_end_after_a_crash(aborted: Path) -> None:
    line = line_of("assert(zero == 1)", ROOT / "tests" / "programs" / "crash.c")
    out = gdb_batch(aborted, "det goto end", "det goto end", "det goto 5", "det goto end")
    recorded = f"(recorded: T1 failed an assertion: `zero == 1' at crash.c:{line} (victim), SIGABRT)"
    said = (f"det: at the end of the recording: T1 received SIGABRT in victim at crash.c:{line}, as the recorded "
            f"run ended {recorded}; `continue` lets it end")
    assert out.count(said) == 2, out
    assert f"det: already at the end of the recording: T1 stopped by SIGABRT, as the recorded run ended {recorded}" \
        in out, out
    assert "stopped before reaching the end of the recording" not in out, out
    assert "Program terminated" not in out, out


def test_banner_and_status_name_the_mode(trace: Path, tmp_path: Path) -> None:
    strict = tmp_path / "strict.db"
    r = detrec("-q", "--strict", "-o", strict, program("gdb_reverse"), "5")
    assert r.returncode == 0, r.stderr.decode()
    out = gdb_batch(strict, "det status")
    assert re.search(r"^det: replaying .*, strict replay; recorded: exit 0$", out, re.M), out
    assert "det: strict replay: every event and every shared-memory access in its recorded place" in out, out
    assert re.search(r"^det: at event \d+ of \d+, strict replay: T0 is about to do ", out, re.M), out
    out = gdb_batch(trace, "det status")
    assert re.search(r"^det: replaying .*, all-ordered replay; recorded: exit 0$", out, re.M), out
    assert re.search(r"^det: at event \d+ of \d+, all-ordered replay: T0 is about to do ", out, re.M), out
    out = gdb_batch(trace, "det status", opts=("--relaxed",))
    assert re.search(r"^det: at event \d+ of \d+, relaxed replay: T0 is about to do ", out, re.M), out
