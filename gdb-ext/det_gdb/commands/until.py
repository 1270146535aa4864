"""`det until KIND [OBJ]`: run until the next event of a kind (on an object).

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line.
"""

from __future__ import annotations

import gdb

from det_gdb.args import parse_kind, parse_obj, words
from det_gdb.session import Goal, running


class DetUntil(gdb.Command):
    """Run until the next event of KIND, on object OBJ if given.

Usage: det until KIND [OBJ]
KIND is an event kind of events.def (mutex_lock, cond_wait, thread_create,
...) or `any` with OBJ. OBJ is an object number as det prints them
(`mutex 4` is 4) or an expression for its address (&account.lock)."""

    def __init__(self) -> None:
        super().__init__("det until", gdb.COMMAND_RUNNING)

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = running()
        w = words(arg)
        if not w or len(w) > 2:
            raise gdb.GdbError("det: det until: usage: det until KIND [OBJ]")
        kind = parse_kind(w[0], "det until")
        obj = parse_obj(s, w[1], "det until") if len(w) > 1 else None
        if kind is None and obj is None:
            raise gdb.GdbError("det: det until: `any` needs an object")
        pos = s.pos or s.position_from(s.live())
        after = pos.seq if pos.det_stop else pos.seq - 1
        found = s.model.find_next(after, kind, obj)
        what = " ".join(w)
        if found is None:
            raise gdb.GdbError(f"det: det until: no {what} after {s.model.label(pos.seq)} in the recording")
        s.resume(Goal(f"the next {what} (event {found})", kind=kind, obj=obj))
