"""`det step-thread [T]`: run until a thread completes its next event.

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line.
"""

from __future__ import annotations

import gdb

from det_gdb.registry import DetCommand, command
from det_gdb.session import Goal, running


@command("det step-thread", gdb.COMMAND_RUNNING)
class DetStepThread(DetCommand):
    """Run until thread T (the selected thread) completes its next event.

Usage: det step-thread [T]      (T: 2 or T2)
The other threads move only as the schedule requires. T defaults to the
selected thread; gdb then selects T."""

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = running()
        m = s.model
        a = self.args(arg, s)
        if a:
            t = a.thread()
        else:
            t = s.det_num()
            if t is None:
                raise a.error("the selected thread is not one of det's; name one")
        live = {x.num: x for x in s.live()}
        done = live[t].done if t in live else 0
        seq = m.thread_seq(t, done)
        if seq is None:
            raise a.error(f"T{t} has no more recorded events (it did all {m.thread_count(t)})")
        what = f"its event {seq} ({m.what(m.event(seq))})"
        if s.relaxed:
            if m.thread_seq(t, done + 1) is None:
                s.resume(Goal(what, end=True, select=t))
            else:
                s.resume(Goal(what, thread=t, after_idx=done, select=t))
        else:
            target = m.seq_at(m.index_of(seq) + 1)
            s.goto(target, honor=True, select=t, what=what)
