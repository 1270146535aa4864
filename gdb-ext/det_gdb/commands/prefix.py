"""`det`: the prefix of det's commands; alone, `help det` (the list of the
commands is built from their docstrings: det_gdb/registry.py).

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line.
"""

from __future__ import annotations

import gdb

from det_gdb.registry import DetCommand, command


@command("det", gdb.COMMAND_RUNNING, completer=gdb.COMPLETE_NONE, prefix=True)
class DetPrefix(DetCommand):
    """Step threads through the recorded interleaving of a det trace.

At an event, every other thread waits at its turnstile: `info threads` and
`bt` show where. $det_event is the current event and $det_thread the thread
about to do it. Breakpoints, watchpoints, continue, next and step work as
usual; det keeps the recorded order. Event numbers are the trace's (as
detrec info and detreplay print them); "event N" means events before N are
done and N is next."""

    def invoke(self, arg: str, from_tty: bool) -> None:
        if arg.strip():
            raise gdb.GdbError(f"det: unknown command 'det {arg.strip()}' (see `help det`)")
        gdb.execute("help det")
