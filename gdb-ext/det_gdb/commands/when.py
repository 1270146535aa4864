"""`det when`: the current event.

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line.
"""

from __future__ import annotations

import gdb

from det_gdb.registry import DetCommand, command
from det_gdb.session import running


@command("det when", gdb.COMMAND_STATUS)
class DetWhen(DetCommand):
    """The current event, as rr's `when`.

Usage: det when"""

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = running()
        pos = s.pos or s.position_from(s.live())
        m = s.model
        if pos.seq >= m.end:
            print(f"det: at {m.of_total(pos.seq)}")
        elif pos.det_stop and pos.thread is not None:
            print(f"det: at {m.of_total(pos.seq)}: {m.describe(pos.seq)}")
        else:
            print(f"det: between events: {m.of_total(pos.seq)} is next ({m.describe(pos.seq)})")
