"""det's gdb commands, one module each: importing one registers its command
(det_gdb/registry.py's @command); define_all() defines them in gdb.

Rules of this package:
  - A command's module holds its class and what only it uses; what several
    commands share is in det_gdb (session, frames, args, reexec).
  - A new command is a new module here and its name in the import below.
"""

from __future__ import annotations

from det_gdb.commands import (  # noqa: F401 - imported for their @command
    back,
    break_event,
    disas,
    gdb_reverse,
    goto,
    last_write,
    next,
    prefix,
    reverse_continue,
    reverse_step,
    show_frames,
    snapshots,
    status,
    step_thread,
    thread,
    threads,
    timeline,
    until,
    when,
)
from det_gdb.registry import define_all


def register() -> None:
    """Define det's settings and commands in gdb (once, at start)."""
    define_all()
