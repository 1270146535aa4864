"""`det status`: where the replay is, thread by thread.

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line.
"""

from __future__ import annotations

import gdb

from det_gdb import live as replica
from det_gdb.frames import thread_where
from det_gdb.registry import DetCommand, command
from det_gdb.session import running


@command("det status", gdb.COMMAND_STATUS)
class DetStatus(DetCommand):
    """Where the replay is: the event, every thread's next event.

Usage: det status
The current event and total, the thread about to do it, and for every
thread its next recorded event with its source line, what it holds, and
whether it waits for its turn. At the end of a recording that hung, the
deadlock cycle (or what every thread waits for). Attached to a live
replica (detreplay --follow --gdb): how far behind the recording it is,
and every thread's state, events done and what it waits for."""

    def invoke(self, arg: str, from_tty: bool) -> None:
        if replica.REPLICA is not None:  # (gdb attached to a live replica: no trace, its status and slots)
            for ln in replica.status_lines():
                print(ln)
            return
        s = running()
        live = s.live()
        pos = s.pos or s.position_from(live)
        for t in live:
            if t.gdb_num is not None:
                th = s.gdb_thread(t.num)
                if th is not None:
                    t.where = thread_where(th)
            if s.signalled is not None and s.signalled[0] == t.num:
                t.signal = s.signalled[1]
        lines = s.model.status_text(pos.seq, pos.thread if pos.det_stop else None, live, s.mode,
                                    selected=s.det_num())
        if s.divergence:
            lines.insert(1, f"det: the replay diverged: {s.divergence}")
        for ln in lines:
            print(ln)
