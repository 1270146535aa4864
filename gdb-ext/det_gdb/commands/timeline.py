"""`det timeline [FROM [TO]]`: a text swimlane of the events around the current one.

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line.
"""

from __future__ import annotations

import gdb

from det_gdb.registry import DetCommand, command
from det_gdb.session import session


@command("det timeline", gdb.COMMAND_STATUS)
class DetTimeline(DetCommand):
    """A text swimlane of the events around the current one, one column per thread.

Usage: det timeline [FROM [TO]]
Each row is one event, in the recorded order, written in the column of the
thread that did it; `|` marks a thread running between its events, `:` one
waiting in a condition or barrier wait, `#` one blocked where the recording
ended; `=>` marks the current event. Default: 10 events either side."""

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = session()
        m = s.model
        if m.total == 0:
            print("det: the recording has no events")
            return
        live = s.live() if s.alive() else []
        pos = s.pos.seq if s.pos is not None else m.first
        a = self.args(arg, s)
        w = a.words()
        if len(w) > 2:
            raise a.error("usage: det timeline [FROM [TO]]")
        if w:
            # A range is clamped to the recording (`det timeline 0 40` on a
            # 36-event trace shows events 0 to 35).
            lo = a.bound(w[0])
            hi = a.bound(w[1]) if len(w) > 1 else m.seq_at(min(m.index_of(lo) + 20, m.total - 1))
            if hi < lo:
                raise a.error("TO is before FROM")
            lo, hi = min(max(lo, m.first), m.end - 1), min(max(hi, m.first), m.end - 1)
        else:
            i = m.index_of(pos)
            lo, hi = m.seq_at(max(0, i - 10)), m.seq_at(min(m.total - 1, i + 10))
        for ln in m.timeline_text(lo, min(hi, m.end - 1), pos, live):
            print(ln)
