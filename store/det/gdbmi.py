"""det.gdbmi: a `detreplay --gdb TRACE` session driven over gdb/MI
(pygdbmi), shared by dettui's live mode (tui/) and det-dap (dap/).

Rules of this file:
  - Every step is one of det's own gdb commands (det next, det step-thread,
    det back, det goto: gdb-ext/det_gdb/commands/), sent as console commands;
    the position is read back from gdb ($det_event, $det_thread), never
    computed here.
  - gdb runs commands in order (MI's synchronous mode): a tokened
    `-data-evaluate-expression $det_event` after a command is answered only
    when the command is over, which is how completion is known.
  - The session runs in its own process session (detreplay, gdb). The
    program gets a pseudo-terminal of its own (gdb's --tty; raw, so its bytes
    are unchanged), where det's output relay (gdb-ext/det_gdb/output.py)
    shows what it writes: its output never lands inside gdb's MI records,
    and gdb makes it a session of its own, found by that terminal. Closing asks gdb to
    exit (it kills the program), then kills whatever of both sessions is
    left, by pid: quitting leaves no process.
  - pygdbmi is imported when a session starts (the `tui` extra has it);
    nothing else outside the standard library.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
import time
import tty
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from det.errors import DetError

START_TIMEOUT = 120.0
STEP_TIMEOUT = 300.0
FRAMES = 12
# Frames in these places are det's own, or libc's, around the program's code.
INNER = ("/preload/", "/recorder/", "/replayer/", "sysdeps/", "nptl/")


class LiveError(DetError):
    """The gdb session failed."""


def detreplay_path() -> str:
    here = Path(sys.executable).parent / "detreplay"
    if here.exists():
        return str(here)
    found = shutil.which("detreplay")
    if found is None:
        raise LiveError("detreplay is not installed (run `make`)")
    return found


@dataclass
class Frame:
    level: int
    func: str
    file: str | None
    line: int | None
    inner: bool              # det's or libc's frame


@dataclass
class ThreadState:
    gdb_id: str
    name: str                # "T1"
    frames: list[Frame] = field(default_factory=list)


@dataclass
class Position:
    event: int | None        # the next event to run (the total at the end)
    thread: int | None       # det's thread about to do it
    said: list[str]          # what det printed
    records: list[dict[str, Any]] = field(default_factory=list)  # every MI record the command produced
    output: str = ""         # what the program wrote (stdout and stderr) since the last position


class LiveSession:
    """One `detreplay --gdb TRACE` under gdb/MI."""

    def __init__(self, trace: str | os.PathLike[str], timeout: float = START_TIMEOUT) -> None:
        try:
            from pygdbmi.gdbcontroller import GdbController
        except ImportError:
            raise LiveError("pygdbmi is not installed (det's `tui` or `dap` extra: pip install pygdbmi)") from None

        # The first program runs os.setsid() and becomes detreplay: the
        # session id is its pid, shared by gdb and the program it starts.
        launcher = "import os, sys; os.setsid(); os.execv(sys.argv[1], sys.argv[1:])"
        self._pty, self._pty_slave = os.openpty()
        tty.setraw(self._pty_slave)  # no echo, no \n -> \r\n: the program's bytes as written
        os.set_blocking(self._pty, False)
        self._pty_dev = os.fstat(self._pty_slave).st_rdev
        cmd = [sys.executable, "-c", launcher, detreplay_path(), "--gdb", str(Path(trace).resolve()), "--",
               "--interpreter=mi3", f"--tty={os.ttyname(self._pty_slave)}"]
        self._tokens = itertools.count(1)
        self.mi = GdbController(command=cmd, time_to_check_for_additional_output_sec=0.05)
        assert self.mi.gdb_process is not None
        self.process = self.mi.gdb_process
        self.sid = self.process.pid
        self.closed = False
        try:
            self.position = self._barrier([], timeout)
        except LiveError:
            self.close()
            raise

    # ----- talking to gdb

    def _read(self, until_token: int, timeout: float) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise self._exited()
            try:
                rs = self.mi.get_gdb_response(timeout_sec=0.2, raise_error_on_timeout=False)
            except Exception as e:  # noqa: BLE001 - pygdbmi raises bare errors on a closed pipe
                raise LiveError(f"gdb stopped answering ({e})") from None
            for r in rs:
                out.append(r)
                if r.get("token") == until_token and r["type"] == "result" and r["message"] in ("done", "error"):
                    return out
            if time.monotonic() > deadline:
                raise LiveError(f"gdb did not answer in {timeout:g} s")

    def _exited(self) -> LiveError:
        """Why detreplay --gdb ended: the last line it printed."""
        err = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
        said = [ln for ln in err.splitlines() if ln.strip()]
        return LiveError(said[-1] if said else f"detreplay --gdb exited ({self.process.returncode})")

    def _send(self, command: str) -> int:
        token = next(self._tokens)
        try:
            self.mi.write(f"{token}{command}", read_response=False)
        except OSError:
            # detreplay refused the trace and exited before gdb read a line:
            # what it said is the error, not the broken pipe.
            try:
                self.process.wait(timeout=STEP_TIMEOUT)
            except subprocess.TimeoutExpired:
                raise LiveError("gdb stopped reading its commands") from None
            raise self._exited() from None
        return token

    def _barrier(self, before: list[dict[str, Any]], timeout: float) -> Position:
        """Wait until gdb has done what it was sent; the position then."""
        tok = self._send("-data-evaluate-expression $det_event")
        rs = before + self._read(tok, timeout)
        said = [r["payload"].rstrip("\n") for r in rs if r["type"] == "console" and isinstance(r.get("payload"), str)]
        errors = [r["payload"].get("msg", "") for r in rs if r["type"] == "result" and r["message"] == "error"
                  and r.get("token") != tok and isinstance(r.get("payload"), dict)]
        last = rs[-1]
        event = int(last["payload"]["value"]) if last["message"] == "done" and \
            last["payload"].get("value", "").lstrip("-").isdigit() else None
        thread = self.evaluate("$det_thread")
        if errors:
            raise LiveError(errors[-1])
        return Position(event, int(thread) if thread is not None and thread.lstrip("-").isdigit() else None, said,
                        rs, self._program_output())

    def _program_output(self) -> str:
        """The program's bytes waiting on its terminal: all it wrote before gdb answered (a
        write to a pty is in its buffer when the call returns)."""
        chunks = []
        while True:
            try:
                chunk = os.read(self._pty, 65536)
            except (BlockingIOError, OSError):
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks).decode(errors="replace")

    def evaluate(self, expr: str) -> str | None:
        tok = self._send(f"-data-evaluate-expression {expr}")
        r = self._read(tok, STEP_TIMEOUT)[-1]
        return r["payload"].get("value") if r["message"] == "done" else None

    def det(self, command: str, timeout: float = STEP_TIMEOUT) -> Position:
        """Run one of det's gdb commands (`det next`, ...); the position after it."""
        if '"' in command or "\\" in command:
            raise LiveError(f"not a det command: {command!r}")
        return self.console(command, timeout)

    def console(self, command: str, timeout: float = STEP_TIMEOUT) -> Position:
        """Run any gdb console command (`next`, `reverse-continue`); the position after it."""
        self._send(f"-interpreter-exec console {mi_quote(command)}")
        self.position = self._barrier([], timeout)
        return self.position

    def mi_command(self, command: str, timeout: float = STEP_TIMEOUT) -> dict[str, Any]:
        """Run one MI command (`-thread-info`); its result's payload, or LiveError with gdb's message."""
        tok = self._send(command)
        r = self._read(tok, timeout)[-1]
        if r["message"] == "error":
            raise LiveError((r.get("payload") or {}).get("msg", f"{command}: error"))
        return r.get("payload") or {}

    def interrupt(self) -> None:
        """Stop the running program as Ctrl-C would: SIGINT to every process of the session but gdb's
        launcher and gdb itself (MI's synchronous mode reads no -exec-interrupt while the program runs)."""
        gdbs = {p for p in session_pids(self.sid) if _comm(p) == "gdb"}
        for pid in self._pids():
            if pid != self.sid and pid not in gdbs and pid != self.process.pid:
                try:
                    os.kill(pid, signal.SIGINT)
                except ProcessLookupError:
                    pass

    def threads(self) -> list[ThreadState]:
        tok = self._send("-thread-info")
        r = self._read(tok, STEP_TIMEOUT)[-1]
        out = []
        for t in (r.get("payload") or {}).get("threads", []) if r["message"] == "done" else []:
            ts = ThreadState(t["id"], t.get("name") or f"gdb {t['id']}")
            tok = self._send(f"-stack-list-frames --thread {t['id']} 0 {FRAMES - 1}")
            fr = self._read(tok, STEP_TIMEOUT)[-1]
            for f in (fr.get("payload") or {}).get("stack", []) if fr["message"] == "done" else []:
                path = f.get("fullname") or f.get("file")
                ts.frames.append(Frame(int(f.get("level", 0)), f.get("func", "??"), path,
                                       int(f["line"]) if f.get("line", "").isdigit() else None,
                                       bool(path) and any(p in path for p in INNER)))
            out.append(ts)
        return out

    # ----- the end

    def close(self) -> None:
        """gdb exits (and kills the program); then nothing of the session is left."""
        if self.closed:
            return
        self.closed = True
        try:
            if self.process.poll() is None:
                self.mi.write("-gdb-exit", read_response=False)
                self.process.wait(timeout=10)
        except Exception:  # noqa: BLE001 - whatever state gdb is in, the kill below ends it
            pass
        for pid in self._pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.process.wait(timeout=10)
        except Exception:  # noqa: BLE001
            pass
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
        os.close(self._pty)
        os.close(self._pty_slave)

    def _pids(self) -> list[int]:
        """The session's processes: detreplay's session and the program's (its terminal)."""
        return session_pids(self.sid) + [p for p in tty_pids(self._pty_dev) if p != os.getpid()]


def mi_quote(text: str) -> str:
    """text as an MI c-string (an argument of an MI command)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def session_pids(sid: int) -> list[int]:
    """Processes whose session id is sid (the session this module started)."""
    return _pids_where(3, sid)


def tty_pids(dev: int) -> list[int]:
    """Processes whose controlling terminal is the device dev."""
    return _pids_where(4, dev)


def _pids_where(field_index: int, value: int) -> list[int]:
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid pgrp session tty_nr ...: comm may hold spaces and parentheses.
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > field_index and int(fields[field_index]) == value:
            out.append(int(name))
    return out
