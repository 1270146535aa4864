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
   state, message), which detrec reads at the end and on SIGUSR1, and
   `detreplay --follow --gdb` reads to find the replica (program_pid).
 - Its program may be traced by any process of the user (PR_SET_PTRACER
   where Yama would refuse): gdb attaches to it from another terminal.
 - A standby (--standby S) keeps every thread at its next event when the
   log ends, and det's entry holds a thread at a fatal signal in place
   (DET_F_HOLD_FAULTS); if the program died (detrec's primary.json beside
   the status says how it ended; no word and detrec gone counts as died),
   the replica holds that state for S seconds (state "holding"), whether
   or not detrec is still there, and removes the status's directory when it
   ends; otherwise it lets the threads end as the program did.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import shutil
import signal
import socket
import struct
import tempfile
import threading
import time
from pathlib import Path

from det.analysis import describe_divergence
from det.constants import DET_F_HOLD_FAULTS, DET_F_RELAXED
from det.errors import DetError
from det.launch import EXIT_STOPPED, Program, describe_status, signal_name
from det.native import FollowState, Region, lib, log_meta
from det.symbols import Symbolizer

from .checks import say
from .replica_files import FILES_NOTE, private_files

MAX_THREADS = 1024  # threads the replica has room for
DATA_BYTES = 64 << 20  # its input data ring
STATUS_EVERY = 0.1  # seconds between status file writes
START_WAIT = 30.0  # how long the log may take to name the program's first thread
END_WAIT = 2.0  # how long after the replica's end the recording may take to end too
HOLD_SETTLE = 0.3  # a standby whose events are all done waits this long before it holds


class Follower(Region):
    """A replay region fed from a capture log as detrec writes it."""

    def __init__(self, log_path: Path, flags: int, max_lag: int, hold: bool = False) -> None:
        err = ctypes.create_string_buffer(512)
        h = lib().det_sup_follow_new(os.fsencode(log_path), MAX_THREADS, flags, DATA_BYTES, max_lag, err, 512)
        if not h:
            raise DetError(f"{log_path}: {err.value.decode(errors='replace')}")
        super().__init__(h)
        if hold:
            lib().det_sup_follow_hold(h)
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

    def release(self) -> None:
        """A standby's threads may end as the program's did."""
        lib().det_sup_follow_release(self.h)

    def close(self) -> None:
        if self.h and self.thread is not None:
            lib().det_sup_follow_stop(self.h)
            self.thread.join()
            self.thread = None
        super().close()


CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
PR_SET_PTRACER, PR_SET_PTRACER_ANY = 0x59616D61, ctypes.c_ulong(-1)


def replica_child(upper: str) -> None:
    """In the replica's child before the program: gdb may attach from
    anywhere (Yama's ptrace_scope 1 lets only ancestors; without Yama the
    call fails and changes nothing), a network of its own, and files of its
    own (det.replay.replica_files)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0)
    own_network(libc)
    private_files(upper)


def own_network(libc: ctypes.CDLL) -> None:
    """A network namespace of its own with its loopback up. Replay performs
    a server's bind and listen, and the primary holds the same ports on this
    machine (memcached's replica failed its bind and took another path).
    Without the right to (not root, and no user namespace), the replica
    shares the network."""
    if libc.unshare(CLONE_NEWNET) != 0:
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
                 lag: LagStats | None = None, returncode: int | None = None,
                 about: dict[str, object] | None = None) -> dict[str, object]:
    info: dict[str, object] = {
        "pid": os.getpid(), "state": state, "captured": st.captured, "fed": st.fed, "done": st.done,
        "lag_events": max(0, st.captured - st.done), "lag_s": round(st.lag_ns / 1e9, 4), "message": message,
        "returncode": returncode, **(about or {}),
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
           quiet: bool = False, standby: float = 0.0) -> int:
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
    flags = (DET_F_RELAXED if relaxed else 0) | (DET_F_HOLD_FAULTS if standby else 0)
    rep = Follower(log_path, flags, max_lag, hold=bool(standby))
    prog = None
    own = Path(tempfile.mkdtemp(prefix="det-replica-files-"))  # (its upper layers' tmpfs: the child's alone)
    try:
        while not rep.state().ready:
            if rep.error or time.monotonic() > deadline:
                raise DetError(f"replica not started: {rep.error or 'the program never started'}")
            time.sleep(0.005)
        # The replica's output is hashed, not shown (the program's own is);
        # its stdin is empty: a program that reads stdin diverges there.
        devnull = os.open(os.devnull, os.O_RDONLY)
        (own / "upper").mkdir()
        prog = Program(m["binary"], m["argv"], m["env"], m["cwd"], rep.fd, False, devnull,
                       (m.get("stdout"), m.get("stderr")), preexec=lambda: replica_child(str(own / "upper")))
        prog.region = rep
        shared = _shared_files(own / FILES_NOTE)
        if shared and not quiet:
            say(f"replica shares {', '.join(shared)} with the program: what it writes there, the program's files get")
        about = {"program_pid": prog.pid, "detrec_pid": os.getppid(), "binary": m["binary"],
                 "argv": m["argv"], "standby_s": standby}
        return _watch(rep, prog, status, quiet, about, standby)
    finally:
        if prog is not None and prog.wait(0) is None:
            prog.kill()
            prog.wait()
        rep.close()
        shutil.rmtree(own, ignore_errors=True)


def _shared_files(note: Path) -> list[str]:
    """What the replica's child could not give it a copy of (replica_files.FILES_NOTE)."""
    try:
        return note.read_text().splitlines()
    except OSError:
        return ["/ (the replica could not say what it shares)"]


FAULT_SIGNALS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT, signal.SIGSYS)
FAULT_WAIT = 5.0  # how long a standby waits for the fault its program died of to come in the replica too


def _primary_end(status: Path | None, detrec_gone: bool) -> tuple[bool, int | None]:
    """How the recorded program ended, as detrec wrote it beside the status:
    (known, its status). Not known while detrec has not said; detrec gone
    without a word counts as known, status None (it died with detrec)."""
    try:
        return True, json.loads(status.with_name("primary.json").read_text())["returncode"] if status else None
    except (OSError, ValueError, KeyError):
        return detrec_gone, None


def _fault(rep: Follower) -> dict[str, object]:
    """The thread held at the signal it died of (det's entry noted it in its slot), if one is."""
    t = next((t for t in rep.threads() if t.crash_sig), None)
    return {} if t is None else {"fault_thread": int(t.num), "fault_signal": signal_name(int(t.crash_sig))}


def _watch(rep: Follower, prog: Program, status: Path | None, quiet: bool, about: dict[str, object],
           standby: float) -> int:
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
        detrec_gone = os.getppid() != parent
        if detrec_gone and not standby:  # nobody reads what the replica finds
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
        if st.all_fed and st.done >= st.fed or (standby and detrec_gone and st.done >= st.fed):
            # the recording ended and the replica did all of it: a program
            # stopped by detrec (a timeout) leaves threads waiting here, and
            # a standby's threads all wait here
            ended_at = ended_at or now
            if standby:
                known, prc = _primary_end(status, detrec_gone)
                if known and prc is not None and prc >= 0:  # it ended well: so does the replica
                    rep.release()
                    standby = 0.0
                elif known and now - ended_at > HOLD_SETTLE:
                    fault = _fault(rep)
                    # (a thread may still be on its way to the fault its program died of)
                    if fault or prc is None or -prc not in FAULT_SIGNALS or now - ended_at > FAULT_WAIT:
                        return _hold(rep, prog, status, lag, {**about, **fault}, standby)
            elif now - ended_at > 2.0:
                verdict, message = "done", f"replica did all {st.done} events of the recording"
                break
        if now - last_write >= STATUS_EVERY:
            write_status(status, st, "following", lag=lag, about=about)
            last_write = now
    if verdict != "done" and not quiet:
        say(message)
    if prog.wait(0) is None:
        prog.kill()
        prog.wait()
    write_status(status, rep.state(), verdict, message, lag, rc, about)
    return 0 if verdict == "done" else EXIT_STOPPED


def _hold(rep: Follower, prog: Program, status: Path | None, lag: LagStats, about: dict[str, object],
          standby: float) -> int:
    """A standby whose program died: keep it as it is (gdb may attach) for
    `standby` seconds or until it ends (killed), then end quietly: detrec
    may be long gone."""
    about = {**about, "held_at": "fault" if "fault_thread" in about else "end"}
    # detrec ends now, and whoever reads its output (a pipe) waits for every
    # holder of it: the replica says nothing more
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    deadline = time.monotonic() + standby
    message = "replica holds the program's state at the recording's last event"
    rc = None
    told: list[int] = []  # `kill PID` (SIGTERM), SIGINT, SIGHUP end the hold, and the program with it
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda n, _f: told.append(n))
    while time.monotonic() < deadline and rc is None and not told:
        write_status(status, rep.state(), "holding", message, lag, None, about)
        rc = prog.wait(0.5)
    if rc is None:
        prog.kill()
        rc = prog.wait()
    write_status(status, rep.state(), "held", "replica held the program's state, and ended", lag, rc, about)
    if status is not None and os.getppid() != int(about["detrec_pid"]):  # (detrec left its directory to it)
        for f in (status, status.with_name("primary.json")):
            f.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            status.parent.rmdir()
    return 0
