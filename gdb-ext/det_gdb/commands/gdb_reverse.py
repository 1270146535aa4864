"""gdb's own reverse-continue, reverse-next, reverse-step and reverse-finish
(and their aliases rc, rn, rs), done by det's re-execution in a det session;
reverse-stepi and reverse-nexti say what det offers instead.

gdb's reverse execution needs a recording target that does not work with
threads ("Target multi-thread does not support this command"); a Python
command of the same name replaces gdb's (its aliases follow it), so the
habit works here as in rr.

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line; the going
back itself is commands/reverse_continue.py's and commands/reverse_step.py's.
"""

from __future__ import annotations

import gdb

from det_gdb.args import Args
from det_gdb.commands.reverse_continue import back_to_stop
from det_gdb.commands.reverse_step import back_a_line, back_to_call
from det_gdb.registry import DetCommand, command
from det_gdb.session import session


def count(cmd: str, arg: str) -> int:
    """gdb's optional repeat count N."""
    a = Args(cmd, arg, session())
    n = a.int(default=1)
    if n < 1:
        raise a.error("N must be at least 1")
    return n


@command("reverse-continue", gdb.COMMAND_RUNNING)
class ReverseContinue(DetCommand):
    """gdb's reverse-continue (rc), by det: back to the last hit of your breakpoints and watchpoints.

Usage: reverse-continue
As `det reverse-continue`: det replays the recording again up to where you
are and stops at the last hit of your enabled breakpoints and watchpoints."""

    def invoke(self, arg: str, from_tty: bool) -> None:
        back_to_stop(self.det_name, arg)


@command("reverse-next", gdb.COMMAND_RUNNING)
class ReverseNext(DetCommand):
    """gdb's reverse-next (rn), by det: back to the previous line, over calls.

Usage: reverse-next [N]
Goes back to the start of the previous line the current thread ran in its
function (at the function's first line, the line that called it), N times."""

    def invoke(self, arg: str, from_tty: bool) -> None:
        for _ in range(count(self.det_name, arg)):
            back_a_line(self.det_name, "", into_calls=False)


@command("reverse-step", gdb.COMMAND_RUNNING)
class ReverseStep(DetCommand):
    """gdb's reverse-step (rs), by det: back to the previous line, into calls.

Usage: reverse-step [N]
As reverse-next, but when the previous line called a function of the
program (directly, with line information), back to the start of the last
line that function ran, N times."""

    def invoke(self, arg: str, from_tty: bool) -> None:
        for _ in range(count(self.det_name, arg)):
            back_a_line(self.det_name, "", into_calls=True)


@command("reverse-finish", gdb.COMMAND_RUNNING)
class ReverseFinish(DetCommand):
    """gdb's reverse-finish, by det: back to where the current function was called.

Usage: reverse-finish
Goes back to the call instruction in the caller that called the current
thread's function in the program's code."""

    def invoke(self, arg: str, from_tty: bool) -> None:
        back_to_call(self.det_name, arg)


class ByInstruction(DetCommand):
    """det goes back by lines, calls and breakpoints, not by instructions."""

    def invoke(self, arg: str, from_tty: bool) -> None:
        raise gdb.GdbError(f"det: {self.det_name}: det goes back by re-execution to lines, not instructions: "
                           "reverse-step, reverse-next, reverse-finish, reverse-continue (with a breakpoint "
                           "at an address: `break *ADDR`), `det last-write EXPR`, `det back [N]`")


@command("reverse-stepi", gdb.COMMAND_RUNNING)
class ReverseStepi(ByInstruction):
    """gdb's reverse-stepi: not in a det session (use reverse-step).

Usage: reverse-stepi"""


@command("reverse-nexti", gdb.COMMAND_RUNNING)
class ReverseNexti(ByInstruction):
    """gdb's reverse-nexti: not in a det session (use reverse-next).

Usage: reverse-nexti"""
