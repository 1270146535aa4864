"""`det until KIND [OBJ]`: run until the next event of a kind (on an object).

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line.
"""

from __future__ import annotations

import gdb

from det_gdb.registry import DetCommand, command
from det_gdb.session import Goal, running


@command("det until", gdb.COMMAND_RUNNING)
class DetUntil(DetCommand):
    """Run until the next event of KIND, on object OBJ if given.

Usage: det until KIND [OBJ]
KIND is an event kind of events.def (mutex_lock, cond_wait, thread_create,
...) or `any` with OBJ. OBJ is an object number as det prints them
(`mutex 4` is 4) or an expression for its address (&account.lock)."""

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = running()
        a = self.args(arg, s)
        w = a.words()
        if not w or len(w) > 2:
            raise a.error("usage: det until KIND [OBJ]")
        kind = a.kind(w[0])
        obj = a.obj(w[1]) if len(w) > 1 else None
        if kind is None and obj is None:
            raise a.error("`any` needs an object")
        pos = s.pos or s.position_from(s.live())
        after = pos.seq if pos.det_stop else pos.seq - 1
        found = s.model.find_next(after, kind, obj)
        what = " ".join(w)
        if found is None:
            raise a.error(f"no {what} after {s.model.label(pos.seq)} in the recording")
        s.resume(Goal(f"the next {what} (event {found})", kind=kind, obj=obj))
