"""`det reverse-step`: go back to the previous line of the current thread.

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line; how a
re-execution finds its way back: det_gdb/reexec.py.
"""

from __future__ import annotations

import gdb

from det_gdb.frames import frame_kind, user_frame, where
from det_gdb.reexec import Hit, Logger, Run, arrive, begin, between, figures, search, where_now
from det_gdb.registry import DetCommand, command

MAX_LINES = 4096  # line-start breakpoints for reverse-step


def frame_key(f: gdb.Frame) -> int:
    """The caller's stack pointer: the same for every line of one call of a function."""
    o = f.older()
    return int(o.read_register("rsp")) if o is not None else 0


def line_starts(f: gdb.Frame) -> list[int]:
    """The pcs where the lines of f's function begin."""
    block = f.block()
    while block is not None and block.function is None:
        block = block.superblock
    sal = f.find_sal()
    if block is None or sal.symtab is None:
        return []
    pcs = set()
    for entry in sal.symtab.linetable():
        if block.start <= entry.pc < block.end and entry.line:
            pcs.add(entry.pc)
    return sorted(pcs)[:MAX_LINES]


@command("det reverse-step", gdb.COMMAND_RUNNING)
class DetReverseStep(DetCommand):
    """Go back to the previous line of the current thread.

Usage: det reverse-step
Goes back to the previous line the current thread ran in its current
function (calls are stepped over, as by gdb's reverse-next); at the
function's first line, to the line that called it."""

    def invoke(self, arg: str, from_tty: bool) -> None:
        cmd = self.det_name
        s, mark = begin(cmd, arg)
        num = mark.thread if mark.thread is not None else s.det_num()
        if num is None:
            raise gdb.GdbError(f"det: {cmd}: no det thread selected")
        th = s.gdb_thread(num)
        if th is None:
            raise gdb.GdbError(f"det: {cmd}: T{num} is not running")
        th.switch()
        f = user_frame()
        if f is None or frame_kind(f) != "program":
            raise gdb.GdbError(f"det: {cmd}: T{num} is not in the program's code")
        key, line = frame_key(f), f.find_sal().line
        caller = f.older()
        while caller is not None and frame_kind(caller) != "program":
            caller = caller.older()
        funcs = [(line_starts(f), key)]
        ckey = frame_key(caller) if caller is not None else None
        if caller is not None:
            funcs.append((line_starts(caller), ckey))
        if not funcs[0][0]:
            raise gdb.GdbError(f"det: {cmd}: no line table for {where(f)} (compiled without -g?)")

        def loggers(run: Run) -> list[gdb.Breakpoint]:
            out: list[gdb.Breakpoint] = []
            n = 0
            for pcs, k in funcs:
                for pc in pcs:
                    def accept(tnum: int, done: int, k: int = k) -> dict | None:
                        if tnum != num:
                            return None
                        fr = gdb.newest_frame()
                        if frame_key(fr) != k:
                            return None
                        return {"key": k, "line": fr.find_sal().line}

                    out.append(Logger(run, n, f"*{pc:#x}", accept))
                    n += 1
            return out

        def starts(hits: list[Hit]) -> list[Hit]:
            """The first hit of each run of hits on one line: where the thread began a line."""
            return [h for i, h in enumerate(hits) if i == 0 or hits[i - 1].detail["line"] != h.detail["line"]]

        def pick(hits: list[Hit]) -> Hit | None:
            mine = starts([h for h in hits if h.detail["key"] == key])
            # The line the thread is in now is not "before" it.
            if mine and mine[-1].detail["line"] == line:
                mine.pop()
            if mine:
                return mine[-1]
            up = starts([h for h in hits if h.detail["key"] == ckey])
            return up[-1] if up else None

        hit, start, fig = search(s, cmd, mark, loggers, pick)
        if hit is None:
            print(f"det: {cmd}: T{num} ran no earlier line of {f.name()} (or its caller) since the program's start "
                  f"{figures(fig, start, s)}")
            return
        frame = arrive(s, hit)
        lines = [f"det: T{num} back at {where_now()}, {between(s, num, hit.done)} {figures(fig, start, s)}"]
        for ln in lines + frame:
            print(ln)
