"""detrec --follow: a live replica beside the recording. detrec starts
`detreplay --follow` on the capture log as the program starts, and reads
what it finds from its status file (det.replay.follow writes it).

Rules of this module:
 - The recording never waits for the replica: it is a process of its own
   that only reads the log; detrec looks at it between its own waits, and
   at the end gives it a bounded time to catch up.
 - Whatever happens to the replica is one `detrec: replica ...` line (a
   divergence is said by the replica itself the moment it happens); detrec's
   exit status stays the program's.
 - A standby (--standby) holds a program that died: detrec leaves it
   running, in a session of its own, and says how to attach gdb to it; the
   replica ends itself when its time is up and removes its directory then.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from det.errors import DetError
from det.launch import describe_status

CATCH_UP_S = 30.0  # how long detrec waits at the end for the replica to catch up
STANDBY_S = 600.0  # how long a standby holds a dead program's state by default


def _detreplay() -> list[str]:
    """The detreplay beside this detrec (a venv's, an install's), else PATH's."""
    here = Path(sys.argv[0]).with_name("detreplay")
    found = str(here) if here.exists() else shutil.which("detreplay")
    if found is None:
        raise DetError("--follow needs detreplay, which is not beside detrec or on PATH", status=2)
    return [found]


class Replica:
    def __init__(self, log: Path, max_lag: int = 0, standby: float = 0.0) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="det-follow-"))
        self.status_path = self.dir / "status.json"
        self.standby = standby
        # the log by descriptor: detrec removes it once the trace is written,
        # and the replica may still be reading it then
        fd = os.open(log, os.O_RDONLY | os.O_CLOEXEC)
        try:
            cmd = _detreplay() + ["--follow", f"/dev/fd/{fd}", "--status", str(self.status_path)]
            if max_lag:
                cmd += ["--max-lag", str(max_lag)]
            if standby:
                cmd += ["--standby", f"{standby:g}"]
            # (a standby outlives detrec: not in its terminal's process group)
            self.proc = subprocess.Popen(cmd, pass_fds=(fd,), stdin=subprocess.DEVNULL,
                                         start_new_session=bool(standby))
        finally:
            os.close(fd)
        self.said = False  # its end was said
        self.at_end: dict[str, object] | None = None  # its status when the program ended

    def status(self) -> dict[str, object]:
        try:
            return json.loads(self.status_path.read_text())
        except (OSError, ValueError):
            return {}

    def poll(self) -> str | None:
        """While recording: a line if the replica ended on its own (crashed,
        killed, stopped following), once."""
        if self.said or self.proc.poll() is None:
            return None
        return self._ended_line()

    def _ended_line(self) -> str | None:
        self.said = True
        st = self.status()
        rc = self.proc.returncode
        where = f"after {st['done']} of {st['captured']} events" if st else "before it started following"
        if rc < 0:
            return f"replica {describe_status(rc)} {where}; the recording goes on without it"
        if st.get("state") in ("diverged", "crashed", "stopped"):
            return None  # the replica said it at once
        if st.get("state") != "done":
            return f"replica ended ({describe_status(rc)}) {where}; the recording goes on without it"
        return None

    def now(self) -> str:
        """The lag now (SIGUSR1)."""
        st = self.status()
        if not st:
            return "replica: starting"
        return (f"replica {st.get('state')}: {st.get('done')} of {st.get('captured')} events done, "
                f"{st.get('lag_events')} events / {st.get('lag_s')} s behind")

    def program_ended(self, returncode: int | None) -> None:
        self.at_end = self.status()
        if self.standby:  # (the replica holds the program's state when it died: rc < 0)
            tmp = self.dir / "primary.json.tmp"
            tmp.write_text(json.dumps({"returncode": returncode}) + "\n")
            os.replace(tmp, self.dir / "primary.json")

    def _held(self, wait_s: float) -> dict[str, object] | None:
        """A standby's status once it holds the program's state, or None
        when it ended instead (or did not get there in wait_s)."""
        deadline = time.monotonic() + wait_s
        while self.proc.poll() is None and time.monotonic() < deadline:
            st = self.status()
            if st.get("state") == "holding":
                return st
            time.sleep(0.02)
        return None

    def finish(self, returncode: int | None, wait_s: float = CATCH_UP_S) -> str:
        """After the recording (the program ended with returncode, None: not
        known): let it catch up (at most wait_s), then the line that says how
        it went."""
        t0 = time.monotonic()
        if self.standby and (returncode is None or returncode < 0) and (st := self._held(wait_s)) is not None:
            at = ""
            if st.get("held_at") == "fault":
                who = f"T{st['fault_thread']} " if "fault_thread" in st else ""
                at = f" ({who}stopped at the {st.get('fault_signal') or 'signal'} the program died of)"
            return (f"replica holds the program's state at the recording's last event{at}, {st.get('done')} of "
                    f"{st.get('captured')} events: `detreplay --follow --gdb {self.proc.pid}` attaches gdb to it; "
                    f"it ends in {self.standby:g} s, or with `kill {self.proc.pid}`")
        try:
            self.proc.wait(max(0.0, wait_s - (time.monotonic() - t0)))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            st = self.status()
            line = (f"replica still {st.get('done')} of {st.get('captured')} events behind {wait_s:g} s after the "
                    "recording ended: stopped it")
            self.said = True
        else:
            line = None
            if not self.said:
                line = self._ended_line()
            st = self.status()
        caught = time.monotonic() - t0
        shutil.rmtree(self.dir, ignore_errors=True)
        lag = (f"lag at most {st.get('max_lag_events', '?')} events / {st.get('max_lag_s', '?')} s "
               f"(mean {st.get('mean_lag_s', '?')} s)")
        end = self.at_end or {}
        if not st:
            return line or f"replica ended ({describe_status(self.proc.returncode)}) before it started following"
        if line is not None:
            return f"{line}; {lag}"
        rep_rc = st.get("returncode")
        if st.get("state") == "done" and returncode is not None and rep_rc is not None and rep_rc != returncode:
            return (f"replica ended {describe_status(rep_rc)}, the program {describe_status(returncode)}, after "
                    f"{st.get('done')} of {st.get('captured')} events; {lag}")
        done, captured = st.get("done"), st.get("captured")
        if st.get("state") == "done" and isinstance(done, int) and isinstance(captured, int) and done < captured:
            return f"replica ended after {done} of {captured} events: it did not follow them all; {lag}"
        if st.get("state") == "done":
            behind = (f"; {end.get('lag_events', 0)} events / {end.get('lag_s', 0)} s behind when the program "
                      f"ended, caught up {caught:.2f} s later") if end else ""
            return f"replica followed all {st.get('done')} events: {lag}{behind}"
        if self.said and st.get("state") == "following":  # (killed: its line was said when it ended)
            return f"replica gone after {st.get('done')} of {st.get('captured')} events (said above); {lag}"
        return f"replica {st.get('state')} after {st.get('done')} of {st.get('captured')} events (said above); {lag}"
