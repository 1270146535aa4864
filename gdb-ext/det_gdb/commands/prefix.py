"""`det`: the prefix of det's commands; alone, `help det`.

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line.
"""

from __future__ import annotations

import gdb


class DetPrefix(gdb.Command):
    """Step threads through the recorded interleaving of a det trace.

det status             where the replay is: the event, every thread's next event
det when               the current event (as rr's `when`)
det next [N]           let the schedule advance N events (1) and stop
det step-thread [T]    run until thread T (the selected thread) completes its next event
det goto N|end         go to event N, forward or backward (restarts the replay)
det back [N]           go back N events (1)
det until KIND [OBJ]   run until the next event of KIND (on object OBJ)
det break-event ...    stop before events of a kind, on an object, by a thread
det timeline [FROM [TO]]  the events around the current one, one column per thread
det thread T           select thread T (T2) in its frame of the program's code
det threads            gdb's thread numbers next to det's T0, T1, ...
det disas [T]          disassembly around thread T's code (capstone, pyelftools)
det last-write EXPR    go back to the last write that changed EXPR (by re-execution)
det reverse-continue   go back to the last hit of your breakpoints and watchpoints
det reverse-step       go back to the previous line of the current thread
set det show-frames on|off   show det's own frames in backtraces (off)

At an event, every other thread waits at its turnstile: `info threads` and
`bt` show where. $det_event is the current event and $det_thread the thread
about to do it. Breakpoints, watchpoints, continue, next and step work as
usual; det keeps the recorded order. Event numbers are the trace's (as
detrec info and detreplay print them); "event N" means events before N are
done and N is next."""

    def __init__(self) -> None:
        super().__init__("det", gdb.COMMAND_RUNNING, gdb.COMPLETE_NONE, prefix=True)

    def invoke(self, arg: str, from_tty: bool) -> None:
        if arg.strip():
            raise gdb.GdbError(f"det: unknown command 'det {arg.strip()}' (see `help det`)")
        gdb.execute("help det")
