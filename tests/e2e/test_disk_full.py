"""A capture log that cannot be written (a full disk, a file size limit)
ends the recording at once: the program is stopped as --timeout stops it,
detrec says so in one line, and what was captured is kept, as a trace when
there is room for one, else as the capture log to salvage once there is."""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import pytest

from conftest import DETREC, detrec, outcome, program, query, run

# detrec ends within this (the program is stopped at once; the rest is
# converting a few MB on a loaded machine); before the fix it never ended
BOUND_S = 60


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.fail("this test mounts a small tmpfs: it needs root (CI runs as root)", pytrace=False)


def mount_tmpfs(d: Path, size: str) -> None:
    need_root()
    d.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(d)], check=True)


@pytest.fixture
def small_fs(tmp_path: Path):
    """A directory for a small tmpfs (mount_tmpfs), unmounted whatever the test does."""
    d = tmp_path / "fs"
    try:
        yield d
    finally:
        if d.is_mount():
            subprocess.run(["umount", "-l", str(d)], check=True)


def holding(d: Path, mb: int) -> list[str]:
    """spinner holding mb MB of d, then taking a lock for ever."""
    return [str(program("spinner")), str(d), str(mb)]


def the_line(err: bytes) -> str:
    """detrec's one line, of a run without a traceback."""
    text = err.decode()
    lines = [ln for ln in text.splitlines() if ln.startswith("detrec") and not ln.startswith("detrec: note:")]
    assert "Traceback" not in text and len(lines) == 1, text
    return lines[0]


def no_program_left(argv: list[str]) -> None:
    left = run(["pgrep", "-x", "-f", " ".join(argv)])
    assert left.returncode == 1, f"the program outlived detrec: pid {left.stdout.decode().split()}"


def readable(trace: Path) -> int:
    """detrec info reads the trace; its events."""
    i = detrec("info", trace)
    assert i.returncode == 0 and "Traceback" not in i.stderr.decode(), i.stderr.decode()
    return query(trace, "SELECT count(*) FROM events")[0][0]


def test_full_disk_stops_the_program_and_keeps_the_log(small_fs: Path) -> None:
    """The log fills the disk: the program is stopped, and what was captured
    is kept: as the trace when it fits in the room left (the log's torn last
    chunk, cut off, frees some: how much depends on how far the capture was
    behind, so on the machine's load), else as the log, with the command
    that makes it a trace once there is room."""
    mount_tmpfs(small_fs, "3m")
    trace, log = small_fs / "t.db", small_fs / "t.db.incomplete.log"
    argv = holding(small_fs, 0)
    r = detrec("-o", trace, *argv, timeout=BOUND_S, stdin=subprocess.DEVNULL)
    line = the_line(r.stderr)
    assert r.returncode != 0, line
    assert "capture log could not be written (No space left on device)" in line, line
    assert "program was stopped" in line, line
    no_program_left(argv)
    if f"trace saved to {trace}" in line:
        assert not log.exists()
        o = outcome(trace)
        assert o["status"] == "stopped" and "capture log could not be written" in o["message"], o
        assert o["events"] > 1000 and readable(trace) == o["events"]
        return
    assert f"detrec salvage {log}" in line, line
    assert log.stat().st_size > 0 and not trace.exists()
    # once there is room, the log becomes a trace of the events captured
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_fs)], check=True)
    s = detrec("salvage", log)
    assert s.returncode == 0, s.stderr.decode()
    assert readable(small_fs / "t.db.incomplete") > 1000


def test_full_disk_keeps_the_trace_when_stopping_the_program_frees_space(small_fs: Path) -> None:
    """The program itself holds half the disk: stopped, it gives it back,
    and the events captured until the disk was full become the trace."""
    mount_tmpfs(small_fs, "8m")
    trace = small_fs / "t.db"
    argv = holding(small_fs, 4)
    r = detrec("-o", trace, *argv, timeout=BOUND_S, stdin=subprocess.DEVNULL)
    line = the_line(r.stderr)
    assert r.returncode == 125, line
    assert "capture log could not be written (No space left on device)" in line, line
    assert "program was stopped" in line and f"trace saved to {trace}" in line, line
    no_program_left(argv)
    assert not (small_fs / "t.db.incomplete.log").exists()
    o = outcome(trace)
    assert o["status"] == "stopped" and "capture log could not be written" in o["message"], o
    assert o["events"] > 1000 and readable(trace) == o["events"]


def test_file_size_limit_keeps_the_events_as_a_trace(tmp_path: Path) -> None:
    """Another write error through the same path: RLIMIT_FSIZE, set on
    detrec once the program runs, fails the log's writes with EFBIG at
    8 MB; the trace of those events is smaller than the log, so it fits."""
    trace = tmp_path / "t.db"
    argv = holding(tmp_path, 0)
    p = subprocess.Popen([str(DETREC), "-o", str(trace), *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        assert p.stdout.readline() == b"holding\n"
        resource.prlimit(p.pid, resource.RLIMIT_FSIZE, (8 << 20, 8 << 20))
        _, err = p.communicate(b"go\n", timeout=BOUND_S)
    finally:
        p.kill()
        p.wait()
    line = the_line(err)
    assert p.returncode == 125, line
    assert "capture log could not be written (File too large)" in line, line
    assert "program was stopped" in line and f"trace saved to {trace}" in line, line
    no_program_left(argv)
    o = outcome(trace)
    assert o["status"] == "stopped" and o["events"] > 1000 and readable(trace) == o["events"], o


def test_full_disk_ends_a_hunt(small_fs: Path) -> None:
    """A hunt's run stops at once too (not at its --timeout), and the hunt with it."""
    mount_tmpfs(small_fs, "3m")
    argv = holding(small_fs, 0)
    r = detrec("--until-fail", "5", "--timeout", "600", "-o", small_fs / "t.db", *argv, timeout=BOUND_S,
               stdin=subprocess.DEVNULL)
    line = the_line(r.stderr)
    assert r.returncode != 0, line
    assert "capture log could not be written (No space left on device)" in line, line
    no_program_left(argv)
