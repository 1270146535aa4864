"""det's gdb commands, one module each; register() defines them in gdb.

Rules of this package:
  - A command's module holds its gdb.Command class and what only it uses;
    what several commands share is in det_gdb (session, frames, args,
    reexec).
"""

from __future__ import annotations

from det_gdb.commands import (
    back,
    break_event,
    disas,
    goto,
    last_write,
    prefix,
    reverse_continue,
    reverse_step,
    show_frames,
    status,
    step_thread,
    thread,
    threads,
    timeline,
    until,
    when,
)
from det_gdb.commands import next as next_


def register() -> None:
    """Define det's settings and commands in gdb (once, at start)."""
    show_frames.DetSetPrefix("set")
    show_frames.DetSetPrefix("show")
    show_frames.DetShowFrames(show_frames.DetFrameFilter())
    for cls in (prefix.DetPrefix, status.DetStatus, when.DetWhen, next_.DetNext, back.DetBack, goto.DetGoto,
                step_thread.DetStepThread, until.DetUntil, break_event.DetBreakEvent, timeline.DetTimeline,
                thread.DetThread, threads.DetThreads, disas.DetDisas, last_write.DetLastWrite,
                reverse_continue.DetReverseContinue, reverse_step.DetReverseStep):
        cls()
