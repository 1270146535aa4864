"""`set/show det show-frames`: whether backtraces show det's own frames
(a frame filter hides them).

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line.
"""

from __future__ import annotations

from collections.abc import Iterator

import gdb

from det_gdb.frames import in_det
from det_gdb.registry import command


class DetFrameFilter:
    """Hides libdet.so's frames from `bt` (gdb's frame-filter protocol).

    det's frames are how a thread waits for its turn, never the program's
    business; `set det show-frames on` (or gdb's `bt -no-filters`) shows
    them. Frame numbers stay gdb's, so `frame N` still means what bt says."""

    def __init__(self) -> None:
        self.name = "det"
        self.priority = 100
        self.enabled = True
        gdb.frame_filters[self.name] = self

    def filter(self, frames: Iterator) -> Iterator:
        return (d for d in frames if not in_det(d.inferior_frame()))


class DetSetPrefix(gdb.Command):
    """det's settings: `set det show-frames on|off`."""

    def __init__(self, verb: str) -> None:
        super().__init__(f"{verb} det", gdb.COMMAND_DATA, gdb.COMPLETE_NONE, prefix=True)


@command("det show-frames", gdb.COMMAND_STACK)
class DetShowFrames(gdb.Parameter):
    """Show det's own frames in backtraces (off).

Usage: set det show-frames on|off
Whether backtraces show det's own frames (libdet.so: how a thread waits for
its turn). Off by default: `bt` shows the program's frames and the libraries
it called."""

    set_doc = "Set whether backtraces show det's own frames."
    show_doc = "Show whether backtraces show det's own frames."

    def __init__(self) -> None:
        DetSetPrefix("set")
        DetSetPrefix("show")
        flt = DetFrameFilter()
        super().__init__(self.det_name, self.det_category, gdb.PARAM_BOOLEAN)
        self.value = False
        self.flt = flt

    def get_set_string(self) -> str:
        self.flt.enabled = not self.value
        return f"det: backtraces {'show' if self.value else 'hide'} det's frames"

    def get_show_string(self, svalue: str) -> str:
        return f"det: backtraces {'show' if self.value else 'hide'} det's frames"
