"""`det goto N|start|end`: go to an event, forward or backward.

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line.
"""

from __future__ import annotations

import gdb

from det_gdb.args import parse_event
from det_gdb.session import session


class DetGoto(gdb.Command):
    """Go to event N, forward or backward: events before N done, N next.

Usage: det goto N | start | end
Backward, det restarts the replay and runs it to N; your breakpoints are
disabled meanwhile and kept, as are watchpoints and displays. `end` is after
the last recorded event: where a hung recording ended (every thread waits
for its lock, `det status` names the cycle), or just before the program
exits. N may be an expression, e.g. `det goto $det_event + 10`."""

    def __init__(self) -> None:
        super().__init__("det goto", gdb.COMMAND_RUNNING)

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = session()
        if not arg.strip():
            raise gdb.GdbError("det: det goto: which event? (det goto N | start | end)")
        s.goto(parse_event(s, arg, "det goto"))
