"""dettui in a real terminal (tmux), driven as a person would: keys typed,
the screen read back.

Rules: tmux is required (tools/setup.sh installs it): missing, the test
fails. Each run uses its own tmux session name and kills only that session.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from tuitraces import deadlock, in_tmp  # noqa: F401 - fixtures

from conftest import BIN, ROOT, detrec, program


def tmux(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=30)


def screen(name: str) -> str:
    return tmux("capture-pane", "-p", "-t", name).stdout


def wait_for(name: str, text: str, timeout: float = 30) -> str:
    end = time.monotonic() + timeout
    shown = ""
    while time.monotonic() < end:
        shown = screen(name)
        if text in shown:
            return shown
        time.sleep(0.2)
    pytest.fail(f"{text!r} did not appear on the screen in {timeout:g} s; the screen:\n{shown}")


def keys(name: str, *ks: str) -> None:
    for k in ks:
        assert tmux("send-keys", "-t", name, k).returncode == 0
        # A terminal sends Escape then q as Alt+q when they come together: pause after it, as a person does.
        time.sleep(0.6 if k == "Escape" else 0.15)


def test_a_person_reads_a_deadlock_in_a_terminal(deadlock: str, in_tmp: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed (tools/setup.sh installs it)")
    name = f"dettui-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    status = in_tmp / "status"
    cmd = f"{BIN / 'dettui'} {deadlock}; echo $? > {status}"
    assert tmux("new-session", "-d", "-s", name, "-x", "140", "-y", "40", cmd).returncode == 0
    try:
        first = wait_for(name, "Timeline  events 0..29 of 30")
        assert "deadlock: T1 holds mutex 4 and waits for mutex 5" in first
        assert "T1 ✖" in first and "T2 ✖" in first
        keys(name, "End")
        wait_for(name, "Event 29")
        assert "then blocked" in screen(name)
        keys(name, "g")
        wait_for(name, "Go to event")
        keys(name, "1", "2", "Enter")
        wait_for(name, "Event 12")
        keys(name, "/")
        keys(name, "T", "2", "Enter", "Escape")
        wait_for(name, "Event 27")          # T2 starts at 27 (the first T2 event after 12)
        keys(name, "f")
        wait_for(name, "Filter the events")
        keys(name, "T", "2", "Enter")
        wait_for(name, "filter: T2  (2 of 30")
        keys(name, "?")
        wait_for(name, "what it does")
        keys(name, "Escape", "q")
        end = time.monotonic() + 15
        while time.monotonic() < end and not status.exists():
            time.sleep(0.2)
        assert status.exists(), f"dettui did not quit on q; the screen:\n{screen(name)}"
        assert status.read_text().strip() == "0"
    finally:
        tmux("kill-session", "-t", name)


def test_heap_objects_are_named_and_wrapped_locks_placed_at_their_caller(in_tmp: Path) -> None:
    """Issue 24.5 in a real terminal (wide: the details pane shows the whole
    label): a freed queue's mutex, locked through the program's one-line
    wrapper, is `old->mut`, said to be used where one was destroyed, at the
    wrapper's caller's line (tests/programs/wrapped_heap_lock.c)."""
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed (tools/setup.sh installs it)")
    src = (Path(__file__).parents[1] / "programs" / "wrapped_heap_lock.c").read_text().splitlines()
    late_lock = next(i for i, t in enumerate(src, 1)
                     if t.strip() == "lock(&old->mut);")
    destroy = next(i for i, t in enumerate(src, 1) if t.strip() == "pthread_mutex_destroy(&q->mut);")
    trace = in_tmp / "late.db"
    r = subprocess.run([str(BIN / "detrec"), "-q", "-o", str(trace), "--", str(Path(__file__).parents[1] / "bin" /
                        "wrapped_heap_lock"), "late"], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    db = sqlite3.connect(trace)
    (seq, obj), = db.execute("SELECT e.seq, e.obj FROM events e JOIN event_kinds k ON k.kind = e.kind "
                             "WHERE k.name = 'mutex_lock' ORDER BY e.seq DESC LIMIT 1").fetchall()
    (before,), = db.execute("SELECT e.obj FROM events e JOIN event_kinds k ON k.kind = e.kind "
                            "WHERE k.name = 'mutex_destroy'").fetchall()
    db.close()
    name = f"dettui-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    assert tmux("new-session", "-d", "-s", name, "-x", "250", "-y", "50",
                # (after a pause: a detached session's pane takes its size a moment after the command starts)
                f"sleep 0.5; exec {BIN / 'dettui'} {trace}").returncode == 0
    try:
        wait_for(name, "Timeline")
        keys(name, "g")
        wait_for(name, "Go to event")
        keys(name, *str(seq), "Enter")
        shown = wait_for(name, f"Event {seq}")
        # the details pane (right of the list: after `││`), its wrapped lines joined
        joined = " ".join(" ".join(line.split("││", 1)[1].rstrip().rstrip("│").split())
                          for line in shown.splitlines() if "││" in line)
        assert f"mutex {obj} (old->mut; after mutex {before} (q->mut) was destroyed there at " \
               f"wrapped_heap_lock.c:{destroy})" in joined, shown
        assert f"wrapped_heap_lock.c:{late_lock} (late, through lock)" in joined, shown
        keys(name, "q")
    finally:
        tmux("kill-session", "-t", name)


def test_a_crash_is_named_in_the_header_and_x_goes_to_it(in_tmp: Path) -> None:
    """A thread's fault inside pthread_mutex_lock: the header names the
    thread, the signal, the call and the line (not "all threads blocked"
    for main's join), and x goes to that thread's last event (det.ending)."""
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed (tools/setup.sh installs it)")
    trace = in_tmp / "crash.db"
    r = detrec("-q", "-o", trace, program("lock_fault"))
    assert r.returncode == 139, r.stderr.decode()
    src = (ROOT / "tests" / "programs" / "lock_fault.c").read_text().splitlines()
    line = next(i + 1 for i, x in enumerate(src) if "/* CRASH */" in x)
    name = f"dettui-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    assert tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "40",
                f"{BIN / 'dettui'} {trace}").returncode == 0
    try:
        first = wait_for(name, "T1 died of SIGSEGV")
        banner = " ".join(x.strip().lstrip("█").strip() for x in first.splitlines())  # (wrapped lines)
        assert f"in pthread_mutex_lock called at lock_fault.c:{line} (consumer)" in banner, first
        assert "all threads blocked" not in first and "deadlock" not in first, first
        shown = wait_for(name, "Event 0")  # (the first event is selected at first)
        last = max(int(n) for n in re.findall(r"^\S*\s*(\d+)\s+T1\s", shown, re.M))
        assert last > 0, shown
        keys(name, "x")
        wait_for(name, f"Event {last}")  # T1's last event: the unlock of the gate
    finally:
        tmux("kill-session", "-t", name)
