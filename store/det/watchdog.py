"""What outlives detrec or detreplay: nothing of the program, even when
they are killed.

    Watchdog.start(work_dir)   at detrec's start, before any thread
    watchdog.done()            when detrec ends normally

Rules: the watchdog is a process forked from detrec before it starts any
thread; it waits for detrec's end on a pipe. If detrec ends without saying
done (kill -9, a crash), it kills every process of the program, found by
the variable det puts in each one's environment (_DET_SHM names detrec's
pid: it survives exec, setsid and double forks, and needs no cgroup) or, for
a process that wrote over its environment (a process title), by det's region
it maps (the memfd is named by detrec's pid too), and
removes the --until-fail work directory and the private directories of
the traces it was writing (det.tracefile). Standard library only; it never
raises into detrec.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

from .launch import SHM_ENV
from .tracefile import remove_stale_work


def _maps_region(pid: str, region: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/maps", "rb") as f:
            return any(region in line for line in f)
    except OSError:
        return False


def _program_pids(marker: bytes, region: bytes) -> list[int]:
    """Live processes whose environment holds det's variable for this detrec, or that map its region
    (a process that set its title wrote over its environment)."""
    me = os.getpid()
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        if marker in env or env.startswith(marker[1:]) or _maps_region(entry.name, region):
            out.append(int(entry.name))
    return out


def _cleanup(detrec_pid: int, work: str | None, outputs: list[Path]) -> None:
    marker = f"\0{SHM_ENV}={detrec_pid:07d}:".encode()  # as det.launch.program_env writes it
    region = f"/memfd:det-shm-{detrec_pid:07d} ".encode()  # as supervisor/supervisor.c names it
    for _ in range(20):  # until none is left (one may fork while the others die)
        pids = _program_pids(marker, region)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)
    if work:
        shutil.rmtree(work, ignore_errors=True)
    for out in outputs:  # a trace being written when detrec died (its capture log stays, to salvage)
        remove_stale_work(out, detrec_pid)


class Watchdog:
    def __init__(self, write_end: int, pid: int) -> None:
        self.w = write_end
        self.pid = pid

    @classmethod
    def start(cls, work: Path | None = None, outputs: list[Path] | None = None) -> Watchdog | None:
        detrec = os.getpid()
        try:
            r, w = os.pipe()
            pid = os.fork()
        except OSError:
            return None
        if pid == 0:  # the watchdog: never returns
            try:
                os.close(w)
                os.setsid()  # not in detrec's group: a terminal's signals are for detrec
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):  # hold none of detrec's streams open (readers wait for their end)
                    os.dup2(null, fd)
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                signal.signal(signal.SIGHUP, signal.SIG_IGN)
                said = b""
                while chunk := os.read(r, 64):
                    said += chunk
                if b"done" not in said:
                    _cleanup(detrec, str(work) if work else None, outputs or [])
            finally:
                os._exit(0)
        os.close(r)
        os.set_inheritable(w, False)
        return cls(w, pid)

    def done(self) -> None:
        """detrec ends normally: nothing to clean."""
        try:
            os.write(self.w, b"done")
            os.close(self.w)
            os.waitpid(self.pid, 0)
        except OSError:
            pass


@contextlib.contextmanager
def watched(work: Path | None = None, outputs: list[Path] | None = None) -> Iterator[None]:
    """A command's body under a watchdog (started before any thread): however
    the command ends, no process of the program outlives it; `work`, a
    directory of runs, goes too unless it ended normally, and so do the
    work directories of the traces `outputs` (det.tracefile.WorkDir)."""
    watchdog = Watchdog.start(work, outputs)
    try:
        yield
    finally:
        if watchdog is not None:
            watchdog.done()
