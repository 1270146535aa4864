"""`det threads`: gdb's thread numbers next to det's.

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line.
"""

from __future__ import annotations

import gdb

from det_gdb.frames import thread_where
from det_gdb.registry import DetCommand, command
from det_gdb.session import running


@command("det threads", gdb.COMMAND_STATUS)
class DetThreads(DetCommand):
    """gdb's thread numbers next to det's thread numbers, with each thread's state.

Usage: det threads"""

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = running()
        live = s.live()
        cur = gdb.selected_thread()
        by_lwp = {t.ptid[1]: t for t in gdb.selected_inferior().threads()}
        print(f"  {'gdb':<5}{'det':<5}{'LWP':<9}{'state':<16}{'done':<12}where")
        for t in live:
            th = by_lwp.get(t.lwp) if t.lwp is not None else None
            if th is None:
                if t.state != "free":
                    print(f"  {'-':<5}T{t.num:<4}{'-':<9}{t.state:<16}{t.done}/{t.count}")
                continue
            mark = "*" if th == cur else " "
            state = t.state
            if s.pos is not None and s.pos.det_stop and s.pos.thread == t.num:
                state = "at its event"
            elif t.ended_blocked:
                state = "blocked (end)"
            elif t.state == "running" and t.at_turnstile:
                state = "waits its turn"
            print(f"{mark} {th.num:<5}T{t.num:<4}{t.lwp:<9}{state:<16}{str(t.done) + '/' + str(t.count):<12}"
                  f"{thread_where(th)}")
        known = set(s.lwp_to_num)
        for lwp, th in by_lwp.items():
            if lwp not in known:
                print(f"  {th.num:<5}{'-':<5}{lwp:<9}(not a det thread)")
