"""`det goto N|start|end`: go to an event, forward or backward.

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line.
"""

from __future__ import annotations

import gdb

from det_gdb.registry import DetCommand, command
from det_gdb.session import session


@command("det goto", gdb.COMMAND_RUNNING)
class DetGoto(DetCommand):
    """Go to event N, forward or backward: events before N done, N next.

Usage: det goto N | start | end
Backward, det restarts the replay and runs it to N; your breakpoints are
disabled meanwhile and kept, as are watchpoints and displays. `end` is after
the last recorded event: where a hung recording ended (every thread waits
for its lock, `det status` names the cycle), or just before the program
exits. N may be an expression, e.g. `det goto $det_event + 10`."""

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = session()
        a = self.args(arg, s)
        if not a:
            raise a.error("which event? (det goto N | start | end)")
        s.goto(a.event())
