"""`det step-thread [T]`: run until a thread completes its next event.

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line.
"""

from __future__ import annotations

import gdb

from det_gdb.args import parse_thread
from det_gdb.session import Goal, running


class DetStepThread(gdb.Command):
    """Run until thread T completes its next event; the other threads move only as
the schedule requires. T defaults to the selected thread; gdb then selects T.

Usage: det step-thread [T]      (T: 2 or T2)"""

    def __init__(self) -> None:
        super().__init__("det step-thread", gdb.COMMAND_RUNNING)

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = running()
        m = s.model
        if arg.strip():
            t = parse_thread(s, arg, "det step-thread")
        else:
            t = s.det_num()
            if t is None:
                raise gdb.GdbError("det: det step-thread: the selected thread is not one of det's; name one")
        live = {x.num: x for x in s.live()}
        done = live[t].done if t in live else 0
        seq = m.thread_seq(t, done)
        if seq is None:
            raise gdb.GdbError(f"det: det step-thread: T{t} has no more recorded events "
                               f"(it did all {m.thread_count(t)})")
        what = f"its event {seq} ({m.what(m.event(seq))})"
        if s.relaxed:
            if m.thread_seq(t, done + 1) is None:
                s.resume(Goal(what, end=True, select=t))
            else:
                s.resume(Goal(what, thread=t, after_idx=done, select=t))
        else:
            target = m.seq_at(m.index_of(seq) + 1)
            s.goto(target, honor=True, select=t, what=what)
