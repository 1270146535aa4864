"""`det snapshots [on|off|every N]`: the snapshots going back resumes.

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line.
"""

from __future__ import annotations

import gdb

from det_gdb.registry import DetCommand, command
from det_gdb.session import session
from det_gdb.snapshots import CAP


@command("det snapshots", gdb.COMMAND_RUNNING)
class DetSnapshots(DetCommand):
    """Snapshots of the replay, which going back resumes.

Usage: det snapshots [on | off | every N]
det keeps copies (forked processes) of the whole replayed program, every
threads included: one before the first event, then one every N events (by
default a sixteenth of the recording), at most 8. `det goto` backward and
the reverse commands go on from the nearest one instead of restarting the
program. Without an argument: the snapshots kept, and why the last one not
taken was not (a thread not waiting inside det, more than one process).
`off` kills them and goes back by restarting the program."""

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = session()
        snaps = s.snapshots
        words = arg.split()
        if s.relaxed and words and words[0] != "off":
            raise gdb.GdbError("det snapshots: a relaxed replay goes back by restarting the program")
        if not words:
            if not snaps.enabled:
                print("det: snapshots are off; going back restarts the program")
                return
            held = ", ".join(str(x.seq) for x in sorted(snaps.taken, key=lambda x: x.seq)) or "none yet"
            print(f"det: snapshots every {snaps.every} events, at most {CAP}: before events {held}; "
                  f"gone back from one {snaps.resumes} time{'s' if snaps.resumes != 1 else ''}")
            why = snaps.refused() if s.alive() else None
            if why:
                print(f"det: the last snapshot was not taken: {why}")
            return
        if words == ["off"]:
            snaps.enabled = False
            snaps.drop_all()
        elif words == ["on"]:
            snaps.enabled = True
        elif len(words) == 2 and words[0] == "every":
            try:
                every = int(gdb.parse_and_eval(words[1]))
            except gdb.error as e:
                raise gdb.GdbError(f"det snapshots: every: {e}") from None
            if every <= 0:
                raise gdb.GdbError("det snapshots: every N: N is a number of events, at least 1")
            snaps.every = every
            snaps.enabled = True
        else:
            raise gdb.GdbError("det snapshots: takes on, off or every N")
