"""`det reverse-step`: go back to the previous line of the current thread;
and the going back by lines that gdb's own reverse-next, reverse-step and
reverse-finish do in a det session (det_gdb/commands/gdb_reverse.py).

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line; how a
re-execution finds its way back: det_gdb/reexec.py.
  - A logged line start is at one of three levels of the current thread's
    stack: "here" (the current call of the current function: its caller's
    stack pointer is the same), "caller" (the call that called it), "callee"
    (a function the current one called directly, with line information).
    The line to go back to is picked from their order alone (pick_line).
"""

from __future__ import annotations

import re

import gdb

from det_gdb.frames import frame_kind, pc_kind, user_frame, where
from det_gdb.reexec import Hit, Logger, Run, arrive, begin, between, figures, search, where_now
from det_gdb.registry import DetCommand, command
from det_gdb.session import Session

MAX_LINES = 4096  # line-start breakpoints of one going back
CALL = re.compile(r"^call[q]?\s+(0x[0-9a-f]+)")


def frame_key(f: gdb.Frame) -> int:
    """The caller's stack pointer: the same for every line of one call of a function."""
    o = f.older()
    return int(o.read_register("rsp")) if o is not None else 0


def function_block(pc: int) -> gdb.Block | None:
    try:
        block = gdb.block_for_pc(pc)
    except RuntimeError:
        return None
    while block is not None and block.function is None:
        block = block.superblock
    return block


def line_starts_at(pc: int) -> list[int]:
    """The pcs where the lines of the function at pc begin."""
    block = function_block(pc)
    symtab = gdb.find_pc_line(pc).symtab
    if block is None or symtab is None:
        return []
    entries = sorted((e.pc, e.line) for e in symtab.linetable() if block.start <= e.pc < block.end and e.line)
    body = after_prologue(entries)
    return sorted({pc for pc, _ in entries[body:]})


def after_prologue(entries: list[tuple[int, int]]) -> int:
    """The index of the function's first body line among its (pc, line)
    entries: a step never stops in the prologue (the entry's line, the
    function's opening, before the body's lines), so going back does not
    either; from the body's first line it goes back to the caller (as gdb's
    skip_prologue_using_sal finds the prologue's end)."""
    if not entries or entries[0][1] != min(line for _, line in entries):
        return 0
    return next((i for i, (_, line) in enumerate(entries) if line != entries[0][1]), 0)


def line_starts(f: gdb.Frame) -> list[int]:
    """The pcs where the lines of f's function begin."""
    return line_starts_at(f.pc())


def direct_callees(f: gdb.Frame) -> list[int]:
    """Entry pcs of the program's functions (with line information) that
    f's function calls directly (a call through a pointer is not seen)."""
    block = function_block(f.pc())
    if block is None:
        return []
    out = set()
    for insn in f.architecture().disassemble(block.start, block.end - 1):
        m = CALL.match(insn["asm"])
        if m is None:
            continue
        target = int(m.group(1), 16)
        if not block.start <= target < block.end and pc_kind(target) == "program" \
                and gdb.find_pc_line(target).symtab is not None:
            out.add(target)
    return sorted(out)


def stack_level(hit: Hit) -> str:
    return hit.detail["level"]


def pick_line(hits: list[Hit], line: int) -> Hit | None:
    """Where going back one line from `line` lands, given the logged line
    starts before the position in order: the start of the previous line run
    in this call, or (into a call that line made) the start of the callee's
    last line, or at the function's first line the start of its caller's."""
    def same(a: Hit, b: Hit) -> bool:
        return a.detail["level"] == b.detail["level"] and a.detail["line"] == b.detail["line"] \
            and a.detail["func"] == b.detail["func"]

    def run_start(i: int) -> Hit:
        while i > 0 and same(hits[i - 1], hits[i]):
            i -= 1
        return hits[i]

    i = len(hits)
    # The current line's own start, and the calls it made before the position.
    while True:
        j = i
        while j > 0 and stack_level(hits[j - 1]) == "callee":
            j -= 1
        if j > 0 and stack_level(hits[j - 1]) == "here" and hits[j - 1].detail["line"] == line:
            i = j - 1
            continue
        break
    if i == 0:
        return None
    last = hits[i - 1]
    if stack_level(last) != "here":
        return run_start(i - 1)
    # Back through the previous line: into the last call it made, if any
    # (calls between two of its own hits).
    k = i - 1
    while k > 0:
        if same(hits[k - 1], last):
            k -= 1
            continue
        c = k
        while c > 0 and stack_level(hits[c - 1]) == "callee":
            c -= 1
        if c < k and c > 0 and same(hits[c - 1], last):
            return run_start(k - 1)
        break
    return hits[k]


def back_a_line(cmd: str, arg: str, into_calls: bool) -> None:
    """Go back to the previous line the current thread ran (as gdb's
    reverse-next; into_calls: as its reverse-step, into the last function
    that line called)."""
    s, mark = begin(cmd, arg)
    num, f = program_frame(s, cmd, mark.thread)
    key, line, own_sp = frame_key(f), f.find_sal().line, int(f.read_register("rsp"))
    caller = program_caller(f)
    levels = [("here", line_starts(f), key)]
    if caller is not None:
        levels.append(("caller", line_starts(caller), frame_key(caller)))
    if into_calls:
        for entry in direct_callees(f):
            levels.append(("callee", line_starts_at(entry), own_sp))
    if not levels[0][1]:
        raise gdb.GdbError(f"det: {cmd}: no line table for {where(f)}, T{num}'s innermost frame in the program's "
                           "code (compiled without -g, or past main's return); `det back [N]`, `det goto N`, or "
                           "reverse-continue to a breakpoint go back")

    def accept(tnum: int, done: int) -> dict | None:
        if tnum != num:
            return None
        fr = gdb.newest_frame()
        fk = frame_key(fr)
        lvl = next((lv for lv, _, k in levels if k == fk), None)
        if lvl is None:
            return None
        return {"level": lvl, "line": fr.find_sal().line, "func": fr.name()}

    def loggers(run: Run) -> list[gdb.Breakpoint]:
        out: list[gdb.Breakpoint] = []
        placed: set[int] = set()
        for _, pcs, _ in levels:
            for pc in pcs:
                # (a recursive call's own line starts are "here"; its level is the stack's)
                if pc not in placed and len(placed) < MAX_LINES:
                    placed.add(pc)
                    out.append(Logger(run, len(out), f"*{pc:#x}", accept))
        return out

    hit, start, fig = search(s, cmd, mark, loggers, lambda hits: pick_line(hits, line))
    if hit is None:
        print(f"det: {cmd}: T{num} ran no earlier line of {f.name()} (or its caller) since the program's start "
              f"{figures(fig, start, s)}")
        return
    frame = arrive(s, hit)
    lines = [f"det: T{num} back at {where_now()}, {between(s, num, hit.done)} {figures(fig, start, s)}"]
    for ln in lines + frame:
        print(ln)


def program_frame(s: Session, cmd: str, thread: int | None) -> tuple[int, gdb.Frame]:
    """The det thread going back (the mark's, else the selected) and its innermost frame in the program's code."""
    num = thread if thread is not None else s.det_num()
    if num is None:
        raise gdb.GdbError(f"det: {cmd}: no det thread selected")
    th = s.gdb_thread(num)
    if th is None:
        raise gdb.GdbError(f"det: {cmd}: T{num} is not running")
    th.switch()
    f = user_frame()
    if f is None or frame_kind(f) != "program":
        raise gdb.GdbError(f"det: {cmd}: T{num} is not in the program's code")
    return num, f


def program_caller(f: gdb.Frame) -> gdb.Frame | None:
    caller = f.older()
    while caller is not None and frame_kind(caller) != "program":
        caller = caller.older()
    return caller


def call_instruction(caller: gdb.Frame) -> int | None:
    """The pc of the call instruction the caller frame is in (its return address's)."""
    ret = caller.pc()
    block = function_block(ret - 1)
    if block is None:
        return None
    for insn in caller.architecture().disassemble(max(block.start, ret - 4096), ret - 1):
        if insn["addr"] + insn["length"] == ret and insn["asm"].startswith("call"):
            return int(insn["addr"])
    return None


def back_to_call(cmd: str, arg: str) -> None:
    """Go back to the call of the current thread's function in the program (gdb's reverse-finish)."""
    s, mark = begin(cmd, arg)
    num, f = program_frame(s, cmd, mark.thread)
    caller = f.older()
    if caller is None or frame_kind(caller) != "program":
        by = caller.name() if caller is not None and caller.name() else "the system"
        raise gdb.GdbError(f"det: {cmd}: {f.name()} is T{num}'s outermost function in the program's code "
                           f"(called by {by}); `det goto N` or `det back` go further back")
    call_pc = call_instruction(caller)
    if call_pc is None:
        raise gdb.GdbError(f"det: {cmd}: cannot find the instruction that called {f.name()} in {where(caller)}")
    key = int(caller.read_register("rsp"))
    name = f.name()

    def loggers(run: Run) -> list[gdb.Breakpoint]:
        def accept(tnum: int, done: int) -> dict | None:
            if tnum != num or int(gdb.newest_frame().read_register("rsp")) != key:
                return None
            return {}

        return [Logger(run, 0, f"*{call_pc:#x}", accept)]

    hit, start, fig = search(s, cmd, mark, loggers)
    if hit is None:
        print(f"det: {cmd}: the call of {name} was not found again between the program's start and "
              f"{mark.what} {figures(fig, start, s)}")
        return
    frame = arrive(s, hit)
    lines = [f"det: T{num} back at the call of {name}: {where_now()}, {between(s, num, hit.done)} "
             f"{figures(fig, start, s)}"]
    for ln in lines + frame:
        print(ln)


@command("det reverse-step", gdb.COMMAND_RUNNING)
class DetReverseStep(DetCommand):
    """Go back to the previous line of the current thread.

Usage: det reverse-step
Goes back to the previous line the current thread ran in its current
function (calls are stepped over, as by gdb's reverse-next); at the
function's first line, to the line that called it."""

    def invoke(self, arg: str, from_tty: bool) -> None:
        back_a_line(self.det_name, arg, into_calls=False)
