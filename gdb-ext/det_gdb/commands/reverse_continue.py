"""`det reverse-continue`: go back to the last hit of the user's breakpoints
and watchpoints.

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

WATCH_TYPES = {gdb.BP_HARDWARE_WATCHPOINT: gdb.WP_WRITE, gdb.BP_WATCHPOINT: gdb.WP_WRITE,
               gdb.BP_READ_WATCHPOINT: gdb.WP_READ, gdb.BP_ACCESS_WATCHPOINT: gdb.WP_ACCESS}


def user_stops(cmd: str) -> list[tuple[gdb.Breakpoint, str, int | None]]:
    """(the user's breakpoint, the spec of its copy, its watchpoint class) for each enabled one."""
    out = []
    for b in gdb.breakpoints():
        if not b.visible or not b.enabled:
            continue
        if b.type == gdb.BP_BREAKPOINT and b.location:
            out.append((b, b.location, None))
        elif b.type in WATCH_TYPES and b.expression:
            spec, _ = watch_spec(b.expression, cmd)
            out.append((b, spec, WATCH_TYPES[b.type]))
    return out


def back_to_stop(cmd: str, arg: str) -> None:
    """Go back to the last hit of the user's breakpoints and watchpoints (gdb's reverse-continue)."""
    s, mark = begin(cmd, arg)
    stops = user_stops(cmd)
    if not stops:
        raise gdb.GdbError(f"det: {cmd}: no enabled breakpoint or watchpoint to go back to (`det goto start` goes "
                           "to the program's start)")

    def loggers(run: Run) -> list[gdb.Breakpoint]:
        out: list[gdb.Breakpoint] = []
        for i, (b, spec, wp) in enumerate(stops):
            cond = b.condition
            if wp is None:
                def accept(num: int, done: int, cond: str | None = cond) -> dict | None:
                    return {} if cond is None or bool(gdb.parse_and_eval(cond)) else None

                out.append(Logger(run, i, spec, accept))
            else:
                out.append(hardware_watch(Logger, run, i, spec, value_log(spec), wp, cmd, b.expression))
        return out

    hit, start, fig = search(s, cmd, mark, loggers)
    if hit is None:
        print(f"det: {cmd}: none of your breakpoints or watchpoints was hit between the program's start and "
              f"{mark.what} {figures(fig, start, s)}")
        return
    b = stops[hit.logger][0]
    what = "Watchpoint" if stops[hit.logger][2] is not None else "Breakpoint"
    frame = arrive(s, hit)
    shown = b.expression or b.location
    shown = os.path.basename(shown) if shown.startswith("/") else shown
    lines = [f"det: {cmd}: {what} {b.number} ({shown}), the last hit before {mark.what}: "
             f"T{hit.thread} in {where_now()}, {between(s, hit.thread, hit.done)} {figures(fig, start, s)}"]
    if "old" in hit.detail:
        lines.append(f"det: old value {hit.detail['old']}, new value {hit.detail['new']}")
    for ln in lines + frame:
        print(ln)


@command("det reverse-continue", gdb.COMMAND_RUNNING)
class DetReverseContinue(DetCommand):
    """Go back to the last hit of your breakpoints and watchpoints.

Usage: det reverse-continue
Goes back to the last stop of one of your breakpoints or watchpoints before
the current position: det replays the recording again up to where you are with copies of your
enabled breakpoints (their conditions too) and watchpoints, and stops at the
last of their hits. Ignore counts are not applied."""

    def invoke(self, arg: str, from_tty: bool) -> None:
        back_to_stop(self.det_name, arg)
