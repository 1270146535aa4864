"""dettui's refusals before any drawing: a path that is not a regular file (a
FIFO would block its open for ever, with q and Ctrl-C unheard), and no
terminal (it would draw into a pipe or a file for ever).

Rules: the real dettui in a child process, with a pseudo-terminal as its
terminal where one is wanted; every run has a timeout, as the bug these
tests guard against is a run that never ends. Files dettui must not open
are made in the test's temporary directory (and /dev/null).
"""

from __future__ import annotations

import os
import pty
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tuitraces import deadlock, in_tmp  # noqa: F401 - fixtures

from conftest import BIN

TIMEOUT = 60  # a refusal takes a second; main blocked or drew for ever


class Run:
    """A finished dettui: its exit status, what it said on stderr, and
    what it wrote to its terminal."""

    def __init__(self, returncode: int, stderr: str, drawn: bytes) -> None:
        self.returncode, self.stderr, self.drawn = returncode, stderr, drawn


def drain(fd: int) -> bytes:
    os.set_blocking(fd, False)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except (BlockingIOError, OSError):  # nothing more; EIO once the child's side is closed
            return out
        if not chunk:
            return out
        out += chunk


def dettui(*args: str, stdin_tty: bool = True, stdout_tty: bool = True) -> Run:
    """dettui with a pseudo-terminal as stdin and stdout, or not (/dev/null, a pipe), and a pipe as stderr
    to read what it said (Textual draws on stderr: a pipe there is itself no terminal, so the path refusals
    must come first)."""
    master, slave = pty.openpty()
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        r = subprocess.run([str(BIN / "dettui"), *args], stdin=slave if stdin_tty else devnull,
                           stdout=slave if stdout_tty else subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=TIMEOUT, start_new_session=True)
        os.close(slave)
        slave = -1
        return Run(r.returncode, r.stderr.decode(errors="replace"), drain(master))
    finally:
        for fd in (master, slave, devnull):
            if fd >= 0:
                os.close(fd)


def assert_one_line_refusal(r: Run, *words: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("dettui: ") and r.stderr.endswith("\n") and r.stderr.count("\n") == 1, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr
    assert r.drawn == b"", f"dettui drew on its terminal before refusing: {r.drawn[:200]!r}"


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    p = tmp_path / "pipe.db"
    os.mkfifo(p)
    return p


@pytest.fixture
def unix_socket(tmp_path: Path) -> Iterator[Path]:
    p = tmp_path / "sock.db"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(p))
    try:
        yield p
    finally:
        s.close()


def test_a_fifo_is_refused_at_once(fifo: Path) -> None:
    assert_one_line_refusal(dettui(str(fifo)), str(fifo), "named pipe")


def test_a_fifo_named_like_a_capture_log_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "t.db.incomplete.log"
    os.mkfifo(log)
    assert_one_line_refusal(dettui(str(log)), str(log), "named pipe")


def test_a_symbolic_link_to_a_fifo_is_refused(fifo: Path, tmp_path: Path) -> None:
    link = tmp_path / "link.db"
    link.symlink_to(fifo)
    assert_one_line_refusal(dettui(str(link)), str(link), "named pipe")


def test_a_fifo_as_the_second_trace_or_live_is_refused(fifo: Path, deadlock: str) -> None:
    assert_one_line_refusal(dettui(deadlock, str(fifo)), str(fifo), "named pipe")
    assert_one_line_refusal(dettui("--live", str(fifo)), str(fifo), "named pipe")


def test_a_directory_a_device_and_a_socket_are_refused(tmp_path: Path, unix_socket: Path) -> None:
    assert_one_line_refusal(dettui(str(tmp_path)), str(tmp_path), "directory")
    assert_one_line_refusal(dettui(os.devnull), os.devnull, "character device")
    assert_one_line_refusal(dettui(str(unix_socket)), str(unix_socket), "socket")


@pytest.mark.parametrize("stream", ["stdin", "stdout", "stderr"])
def test_no_terminal_is_refused(deadlock: str, stream: str) -> None:
    # stderr is a pipe in each (to read the refusal); the refusal names the first stream that is no terminal
    r = dettui(deadlock, stdin_tty=stream != "stdin", stdout_tty=stream not in ("stdin", "stdout"))
    assert_one_line_refusal(r, "needs a terminal", f"({stream} is not one)", f"in text: detrec info {deadlock}")


def test_no_terminal_names_the_text_tool_of_each_mode(deadlock: str, in_tmp: Path) -> None:
    r = dettui(deadlock, deadlock, stdout_tty=False)
    assert_one_line_refusal(r, "needs a terminal", f"detdiff {deadlock} {deadlock}")
    r = dettui("--live", deadlock, stdout_tty=False)
    assert_one_line_refusal(r, "needs a terminal", f"detreplay --gdb {deadlock}")


def test_a_capture_log_is_not_salvaged_without_a_terminal(tmp_path: Path) -> None:
    """The refusal comes before anything is read or written: a killed detrec's log stays as it is."""
    log = tmp_path / "t.db.incomplete.log"
    log.write_bytes(b"DETLOG\r\n")
    r = dettui(str(log), stdout_tty=False)
    assert_one_line_refusal(r, "needs a terminal")
    assert log.read_bytes() == b"DETLOG\r\n" and sorted(p.name for p in tmp_path.iterdir()) == [log.name]


def in_child(code: str) -> str:
    """Python code run in a child with det's packages (a blocked open ends in the timeout, not a hung suite)."""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_files_dettui_reads_itself_are_not_opened_unless_regular(fifo: Path, tmp_path: Path) -> None:
    """The error screen's facts, a source file and an ELF file named by a trace: a FIFO there is said, or
    taken for a missing file, never opened (the error screen is reached through DetTui in-process too, as the
    tests and tools do)."""
    out = in_child(f"""
from det.symbols import Location
from det.tui.dialogs import ErrorScreen
from det.tui.model import disassembly, source_around
print(ErrorScreen({str(fifo)!r}, "not a file")._facts())
print(source_around(Location(0, "", 0, None, {str(fifo)!r}, 3), None).message)
print(disassembly(0x1000, [({str(fifo)!r}, 0)], True, "T1"))
print(disassembly(0x1000, [({str(tmp_path / "gone.so")!r}, 0)], True, "T1"))
""").splitlines()
    assert len(out) == 4, out
    assert out[0].startswith("what is there: ") and "named pipe" in out[0], out
    assert str(fifo) in out[1] and "named pipe" in out[1], out
    assert out[2] == out[3], out
