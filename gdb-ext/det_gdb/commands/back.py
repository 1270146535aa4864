"""`det back [N]`: go back N events (a restart of the replay).

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line.
"""

from __future__ import annotations

import gdb

from det_gdb.registry import DetCommand, command
from det_gdb.session import session


@command("det back", gdb.COMMAND_RUNNING)
class DetBack(DetCommand):
    """Go back N events (default 1): restart the replay and run to that event.

Usage: det back [N]"""

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = session()
        a = self.args(arg, s)
        n = a.int(default=1)
        if n < 1:
            raise a.error("N must be at least 1")
        m = s.model
        if not s.alive() or s.pos is None:
            raise gdb.GdbError("det: det back: the program is not running; use `det goto N`")
        i = m.index_of(s.pos.seq)
        if i == 0:
            raise gdb.GdbError(f"det: det back: already at the first event ({m.label(s.pos.seq)})")
        if i - n < 0:
            print(f"det: det back: only {i} events before {m.label(s.pos.seq)}; going to the first")
            n = i
        s.goto(m.seq_at(i - n))
