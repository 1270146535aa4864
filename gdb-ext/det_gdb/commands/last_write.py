"""`det last-write EXPR`: go back to the last write that changed EXPR.

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line; how a
re-execution finds its way back: det_gdb/reexec.py.
"""

from __future__ import annotations

import os

import gdb

from det_gdb.reexec import (
    Logger,
    Run,
    arrive,
    begin,
    between,
    figures,
    hardware_watch,
    search,
    value_log,
    watch_spec,
    where_now,
)
from det_gdb.registry import DetCommand, command


@command("det last-write", gdb.COMMAND_RUNNING, completer=gdb.COMPLETE_EXPRESSION)
class DetLastWrite(DetCommand):
    """Go back to the last change of EXPR before the current position.

Usage: det last-write EXPR
det replays the recording again, from a little before where you are (and
further back if it finds nothing) up to where you are, with a hardware
watchpoint on EXPR's address, and stops at the last write that changed it:
the thread, its line, the events around it, the old and new value. Run it
again to go to the write before that one. Your breakpoints are kept and do
not stop the re-executions."""

    def invoke(self, arg: str, from_tty: bool) -> None:
        cmd = self.det_name
        s, mark = begin(cmd, arg, takes_arg=True)
        expr = arg.strip()
        spec, now = watch_spec(expr, cmd)
        now_text = str(now)

        def loggers(run: Run) -> list[gdb.Breakpoint]:
            return [hardware_watch(Logger, run, 0, spec, value_log(spec), gdb.WP_WRITE, cmd, expr)]

        hit, start, fig = search(s, cmd, mark, loggers)
        if hit is None:
            print(f"det: {cmd}: {expr} did not change between the program's start and {mark.what} "
                  f"(it is {now_text}) {figures(fig, start, s)}")
            return
        frame = arrive(s, hit)
        wrote = writer(hit.pc)
        lines = [f"det: the last write to {expr} before {mark.what}: T{hit.thread} in "
                 f"{where_now()}, {between(s, hit.thread, hit.done)}",
                 f"det: written at {wrote}" if wrote else "",
                 f"det: {expr}: old value {hit.detail['old']}, new value {hit.detail['new']} "
                 f"{figures(fig, start, s)}"]
        for ln in lines + frame:
            if ln:
                print(ln)


def writer(pc: int) -> str:
    """The source line of the instruction before pc (a watchpoint reports the
    instruction after the write): decoded from the function's start, as x86
    cannot be decoded backwards."""
    try:
        block = gdb.block_for_pc(pc)
        while block is not None and block.function is None:
            block = block.superblock
        if block is None or pc - block.start > 1 << 16:
            return ""
        insns = gdb.selected_frame().architecture().disassemble(block.start, pc)
        before = [i["addr"] for i in insns if i["addr"] < pc]
        if not before:
            return ""
        sal = gdb.find_pc_line(before[-1])
    except (gdb.error, RuntimeError):
        return ""
    if sal.symtab is None or not sal.line:
        return ""
    text = source_text(sal.symtab.fullname(), sal.line)
    return f"{os.path.basename(sal.symtab.filename)}:{sal.line}" + (f" ({text})" if text else "")


def source_text(path: str, line: int) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for i, ln in enumerate(f, 1):
                if i == line:
                    return ln.strip()
    except OSError:
        pass
    return ""
