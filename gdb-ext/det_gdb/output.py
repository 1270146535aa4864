"""The program's output, shown once: going back re-executes the program,
which writes again what the user has already seen; the relay drops it.

The program's stdout and stderr are not gdb's terminal (or pipes) but a
channel each (one for both when gdb's stdout and stderr are the same file):
a pseudo-terminal when gdb's is a terminal (the program still sees a
terminal, and its stdio buffers by lines), else a pipe. When gdb was
given a terminal for the program (--tty, `set inferior-tty`), the output
goes there instead of gdb's stdout. det_exec.py opens
them as fds 1 and 2 on every (re)start. A thread copies what arrives to
gdb's stdout or stderr, except the bytes that an earlier run already showed
at the same place: a replay writes the same bytes in the same order, so
each run's first N bytes, N the most any run has shown, are the same ones.

Rules of this file:
  - As every det_gdb module: standard library only, no inferior calls.
  - Compared, not counted: a byte that differs from what was shown at its
    place (a diverged replay) is shown, and from there on everything.
  - At a stop, at an exit and at a restart, what the program wrote is
    copied first (drain), so its output comes before det's and gdb's lines.
"""

from __future__ import annotations

import os
import select
import signal
import threading

GDB_SIGNALS = {signal.SIGINT, signal.SIGCHLD, signal.SIGALRM, signal.SIGWINCH}
HISTORY = 64 << 20   # bytes of each channel kept for comparison; past it, only counted


class Channel:
    """One stream of the program's output (stdout, stderr or both)."""

    def __init__(self, real_fd: int) -> None:
        self.out = os.dup(real_fd)   # where it is shown: gdb's stdout or stderr
        if os.isatty(real_fd):
            self.read, self.keep = os.openpty()
            self.path = os.ttyname(self.keep)
            try:  # the program sees the terminal's settings and size
                import fcntl
                import termios
                termios.tcsetattr(self.keep, termios.TCSANOW, termios.tcgetattr(real_fd))
                fcntl.ioctl(self.keep, termios.TIOCSWINSZ, fcntl.ioctl(real_fd, termios.TIOCGWINSZ, b"\0" * 8))
            except OSError:
                pass
        else:
            self.read, self.keep = os.pipe()   # (keep: the write end stays open between runs)
            self.path = f"/proc/{os.getpid()}/fd/{self.keep}"
        os.set_blocking(self.read, False)
        self.shown = bytearray()     # what runs have shown, from the start of a run
        self.total = 0               # bytes shown in all (past HISTORY: counted only)
        self.pos = 0                 # this run's bytes so far

    def take(self, data: bytes) -> None:
        """This run wrote data: show what was not shown before."""
        start = self.pos
        self.pos += len(data)
        if start < self.total:
            n = min(len(data), self.total - start)   # bytes at places already shown
            known = bytes(self.shown[start:start + n])  # (shorter past HISTORY: trusted by count)
            if known == data[:len(known)]:
                data, start = data[n:], start + n
            else:
                i = next(i for i in range(len(known)) if known[i] != data[i])
                del self.shown[start + i:]
                self.total = start + i
                data, start = data[i:], start + i
        if not data:
            return
        if start == len(self.shown) and len(self.shown) < HISTORY:
            self.shown += data[:HISTORY - len(self.shown)]
        self.total = start + len(data)
        while data:
            data = data[os.write(self.out, data):]


class Relay:
    """The channels and the thread that copies them."""

    def __init__(self, shown_on: int | None = None) -> None:
        """shown_on: a terminal to show the program's output on (gdb's
        --tty, as a gdb/MI client gives: its stdout carries MI records,
        which the program's bytes must not cut through), else gdb's
        stdout and stderr."""
        same = shown_on is not None or os.fstat(1)[1:3] == os.fstat(2)[1:3]  # (st_ino, st_dev)
        out = Channel(1 if shown_on is None else shown_on)
        self.channels = [out] if same else [out, Channel(2)]
        self.stdout_path = out.path
        self.stderr_path = self.channels[-1].path
        self.lock = threading.Lock()
        # gdb's signals (SIGCHLD above all) must reach gdb's main thread: a
        # thread that could take them hangs gdb in its wait for the program
        # (gdb 14's gdb.block_signals, by hand for gdb 13).
        old = signal.pthread_sigmask(signal.SIG_BLOCK, GDB_SIGNALS)
        try:
            threading.Thread(target=self.copy, name="det-output", daemon=True).start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)

    def copy(self) -> None:
        by_fd = {c.read: c for c in self.channels}
        while True:
            ready, _, _ = select.select(list(by_fd), [], [])
            with self.lock:
                for fd in ready:
                    self.read_all(by_fd[fd])

    @staticmethod
    def read_all(c: Channel) -> None:
        while True:
            try:
                data = os.read(c.read, 65536)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:   # a pty with no writer left: nothing more
                return
            if not data:
                return
            c.take(data)

    def drain(self) -> None:
        """Show what the program wrote so far (it is stopped or gone)."""
        with self.lock:
            for c in self.channels:
                self.read_all(c)

    def new_run(self, at: list[int] | None = None) -> None:
        """A (re)start: the last run's bytes are shown; the next ones are from
        the start again, or, resuming a snapshot, from where it was (`at`)."""
        with self.lock:
            for i, c in enumerate(self.channels):
                self.read_all(c)
                c.pos = at[i] if at is not None else 0

    def positions(self) -> list[int]:
        """Where this run is in each channel (what it wrote so far: it is stopped)."""
        with self.lock:
            for c in self.channels:
                self.read_all(c)
            return [c.pos for c in self.channels]
