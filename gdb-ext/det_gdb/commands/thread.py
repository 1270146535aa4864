"""`det thread T`: select a thread by its T-name.

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line.
"""

from __future__ import annotations

import gdb

from det_gdb.frames import user_frame, where
from det_gdb.registry import DetCommand, command
from det_gdb.session import running


@command("det thread", gdb.COMMAND_STACK)
class DetThread(DetCommand):
    """Select thread T by its T-name, in its innermost frame of the program's code.

Usage: det thread T      (T: 2 or T2; gdb's own `thread N` takes gdb's numbers)"""

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = running()
        a = self.args(arg, s)
        if not a:
            raise a.error("which thread? (det thread T2)")
        num = a.thread()
        th = s.gdb_thread(num)
        if th is None:
            raise a.error(f"T{num} is not running")
        th.switch()
        f = user_frame()
        if f is not None:
            f.select()
        print(f"det: T{num} is in {where(f) or '?'}")
        print(gdb.execute("frame", to_string=True).rstrip("\n"))
