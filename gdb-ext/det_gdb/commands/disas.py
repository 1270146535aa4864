"""`det disas [T]`: disassembly around a thread's place in the program's code.

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line.
"""

from __future__ import annotations

import gdb

from det_gdb.frames import on_thread, user_frame
from det_gdb.registry import DetCommand, command
from det_gdb.session import running


@command("det disas", gdb.COMMAND_DATA)
class DetDisas(DetCommand):
    """Disassembly around thread T's code (capstone, pyelftools).

Usage: det disas [T]
Disassembles around thread T's position in the program's code (the call it
waits in), with symbols; T defaults to the selected thread.
Needs the Python packages capstone and pyelftools in gdb's Python
(`make` installs them into det's .venv, which det adds to gdb's path)."""

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = running()
        a = self.args(arg, s)
        try:
            from det import disasm
        except ImportError as e:
            raise a.error(str(e)) from None
        err = disasm.missing(s.cfg.get("site_packages", []))
        if err:
            raise a.error(err)
        num = a.thread() if a else s.det_num()
        th = s.gdb_thread(num) if num is not None else gdb.selected_thread()
        if th is None:
            raise a.error(f"T{num} is not running")
        with on_thread(th):
            f = user_frame() or gdb.newest_frame()
            pc = f.pc()
            call_site = f != gdb.newest_frame()
        modules = s.model.trace.modules()
        for ln in disasm.disassemble(pc, modules, gdb.selected_inferior().read_memory, call_site,
                                     f"T{num}" if num is not None else "this thread"):
            print(ln)
