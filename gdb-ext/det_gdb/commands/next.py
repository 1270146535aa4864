"""`det next [N]`: let the schedule advance N events.

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line.
"""

from __future__ import annotations

import gdb

from det_gdb.registry import DetCommand, command
from det_gdb.session import running


@command("det next", gdb.COMMAND_RUNNING)
class DetNext(DetCommand):
    """Let the schedule advance N events (default 1) and stop before the next one.

Usage: det next [N]
Your breakpoints and break-events stop it earlier, as gdb's `next` would."""

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = running()
        a = self.args(arg, s)
        n = a.int(default=1)
        if n < 1:
            raise a.error("N must be at least 1")
        m = s.model
        pos = s.pos or s.position_from(s.live())
        i = m.index_of(pos.seq)
        if i >= m.total:
            raise gdb.GdbError("det: det next: already at the end of the recording")
        if i + n > m.total:
            # clamped to the recording, as every range is
            print(f"det: det next: only {m.total - i} events left; going to the end")
            n = m.total - i
        target = m.seq_at(i + n)
        s.goto(target, honor=True, what=m.label(target))
