"""A live replica: `detreplay --follow LOG` replays a recording while
detrec makes it (`detrec --follow` starts it), from the capture log as it
grows (replayer/follow.c feeds the region), with detreplay's enforcement.

Rules of this module:
 - The replica never holds the recording up: it only reads the log, and
   whatever happens to it (a divergence, a crash, a kill, falling too far
   behind) ends the replica only.
 - What it says is one `detreplay: replica ...` line per fact on stderr, the
   divergence the moment the runtime records it; its progress goes to the
   status file (JSON, replaced whole: captured, done, lag_events, lag_s,
   state, message), which detrec reads at the end and on SIGUSR1.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import socket
import struct
import threading
import time
from pathlib import Path

from det.analysis import describe_divergence
from det.constants import DET_F_RELAXED
from det.errors import DetError
from det.launch import EXIT_STOPPED, Program, describe_status
from det.native import FollowState, Region, lib, log_meta
from det.symbols import Symbolizer

from .checks import say

MAX_THREADS = 1024  # threads the replica has room for
DATA_BYTES = 64 << 20  # its input data ring
STATUS_EVERY = 0.1  # seconds between status file writes
START_WAIT = 30.0  # how long the log may take to name the program's first thread
END_WAIT = 2.0  # how long after the replica's end the recording may take to end too


class Follower(Region):
    """A replay region fed from a capture log as detrec writes it."""

    def __init__(self, log_path: Path, flags: int, max_lag: int) -> None:
        err = ctypes.create_string_buffer(512)
        h = lib().det_sup_follow_new(os.fsencode(log_path), MAX_THREADS, flags, DATA_BYTES, max_lag, err, 512)
        if not h:
            raise DetError(f"{log_path}: {err.value.decode(errors='replace')}")
        super().__init__(h)
        self.error: str | None = None
        self.thread = threading.Thread(target=self._run, name="det-follow", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        if lib().det_sup_follow_run(self.h) != 0:
            self.error = lib().det_sup_error(self.h).decode(errors="replace")

    def state(self) -> FollowState:
        st = FollowState()
        lib().det_sup_follow_state(self.h, ctypes.byref(st))
        return st

    def close(self) -> None:
        if self.h and self.thread is not None:
            lib().det_sup_follow_stop(self.h)
            self.thread.join()
            self.thread = None
        super().close()


CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def own_network() -> None:
    """In the replica's child before the program: a network namespace of its
    own with its loopback up. Replay performs a server's bind and listen,
    and the primary holds the same ports on this machine (memcached's
    replica failed its bind and took another path). Without the right to
    (not root, and no user namespace), the replica shares the network."""
    if ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWNET) != 0:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sH", fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack("16sH22x", b"lo", 0))[:18])[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))


class _LiveNames:
    """What describe_divergence needs of det.names.ObjectNames, without a
    trace (there is none yet): objects by number, code by the replica's
    modules."""

    def __init__(self, region: Region) -> None:
        self.sym = Symbolizer(region.modules())

    def label(self, obj: int) -> str:
        return f"object {obj}"

    def at(self, addr: int) -> str:
        return f"0x{addr:x}"


class LagStats:
    """The replica's lag over the run, sampled as detreplay watches it."""

    def __init__(self) -> None:
        self.max_events = self.samples = 0
        self.max_s = self.sum_s = 0.0

    def add(self, st: FollowState) -> None:
        self.max_events = max(self.max_events, st.captured - min(st.done, st.captured))
        self.max_s = max(self.max_s, st.lag_ns / 1e9)
        self.sum_s += st.lag_ns / 1e9
        self.samples += 1


def write_status(path: Path | None, st: FollowState, state: str, message: str = "",
                 lag: LagStats | None = None, returncode: int | None = None) -> dict[str, object]:
    info: dict[str, object] = {
        "pid": os.getpid(), "state": state, "captured": st.captured, "fed": st.fed, "done": st.done,
        "lag_events": max(0, st.captured - st.done), "lag_s": round(st.lag_ns / 1e9, 4), "message": message,
        "returncode": returncode,
    }
    if lag is not None:
        info.update(max_lag_events=lag.max_events, max_lag_s=round(lag.max_s, 4),
                    mean_lag_s=round(lag.sum_s / max(1, lag.samples), 4))
    if path is not None:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(info) + "\n")
        os.replace(tmp, path)
    return info


def follow(log_path: Path, status: Path | None, relaxed: bool = False, max_lag: int = 0,
           quiet: bool = False) -> int:
    """Replay the recording being written to log_path, beside it; returns
    0 when the replica followed it to the end, 125 when it diverged or
    could not go on."""
    if not log_path.exists():
        raise DetError(f"{log_path}: no such capture log", status=2)
    deadline = time.monotonic() + START_WAIT
    while True:  # detrec writes the log's META before the program starts
        try:
            m = json.loads(log_meta(log_path))
            break
        except DetError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)
    if m.get("mode") != "record" or m.get("chaos"):
        # (strict: a replica that has done every event waits for the token
        # at the end; what detrec decides there, ran_last, is not in the log)
        raise DetError(f"--follow replays default-mode recordings, not {m.get('chaos') or m.get('mode')} ones",
                       status=2)
    flags = DET_F_RELAXED if relaxed else 0
    rep = Follower(log_path, flags, max_lag)
    prog = None
    try:
        while not rep.state().ready:
            if rep.error or time.monotonic() > deadline:
                raise DetError(f"replica not started: {rep.error or 'the program never started'}")
            time.sleep(0.005)
        # The replica's output is hashed, not shown (the program's own is);
        # its stdin is empty: a program that reads stdin diverges there.
        devnull = os.open(os.devnull, os.O_RDONLY)
        prog = Program(m["binary"], m["argv"], m["env"], m["cwd"], rep.fd, False, devnull,
                       (m.get("stdout"), m.get("stderr")), preexec=own_network)
        prog.region = rep
        return _watch(rep, prog, status, quiet)
    finally:
        if prog is not None and prog.wait(0) is None:
            prog.kill()
            prog.wait()
        rep.close()


def _watch(rep: Follower, prog: Program, status: Path | None, quiet: bool) -> int:
    last_write = 0.0
    ended_at: float | None = None  # when every event was fed and done
    rc = None
    verdict, message = "following", ""
    lag = LagStats()
    parent = os.getppid()
    while True:
        rc = prog.wait(0.01)
        st = rep.state()
        lag.add(st)
        if os.getppid() != parent:  # detrec is gone: nobody reads what the replica finds
            verdict, message = "stopped", "replica stopped: detrec ended"
            break
        div = rep.divergence()
        if div is not None:
            line = describe_divergence(_LiveNames(rep), div[0], div[1])
            verdict, message = "diverged", f"replica diverged: {line}"
            break
        failure = rep.failed()
        if failure:
            verdict, message = "diverged", f"replica stopped: {failure}"
            break
        if rep.error:
            verdict, message = "stopped", f"replica stopped following: {rep.error}"
            break
        if rc is not None:
            # Threads still running when the program ended may stop before
            # their last events (as in detreplay): an end is the recording's
            # when the recording ends too, at most END_WAIT later.
            wait_end = time.monotonic() + END_WAIT
            while not (st := rep.state()).all_fed and st.done < st.captured and time.monotonic() < wait_end:
                time.sleep(0.01)
            if st.all_fed or st.done >= st.captured:
                verdict, message = "done", f"replica ended with the recording: {describe_status(rc)}"
            else:
                verdict, message = "crashed", (f"replica ended early ({describe_status(rc)}) after {st.done} of "
                                               f"{st.captured} events")
            break
        now = time.monotonic()
        if st.all_fed and st.done >= st.fed:
            # the recording ended and the replica did all of it: a program
            # stopped by detrec (a timeout) leaves threads waiting here
            ended_at = ended_at or now
            if now - ended_at > 2.0:
                verdict, message = "done", f"replica did all {st.done} events of the recording"
                break
        if now - last_write >= STATUS_EVERY:
            write_status(status, st, "following", lag=lag)
            last_write = now
    if verdict != "done" and not quiet:
        say(message)
    if prog.wait(0) is None:
        prog.kill()
        prog.wait()
    write_status(status, rep.state(), verdict, message, lag, rc)
    return 0 if verdict == "done" else EXIT_STOPPED
