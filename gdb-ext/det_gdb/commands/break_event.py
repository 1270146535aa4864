"""`det break-event`: stop before recorded events of a kind, on an object, by a thread.

Rules of this file (as every det_gdb module): no inferior function calls,
standard library only, every user error one gdb.GdbError line.
"""

from __future__ import annotations

import gdb

from det_gdb.args import Args
from det_gdb.registry import DetCommand, command
from det_gdb.session import BreakEvent, Session, session


@command("det break-event", gdb.COMMAND_BREAKPOINTS)
class DetBreakEvent(DetCommand):
    """Stop before recorded events of a kind, on an object, or by a thread.

Usage: det break-event [KIND|any] [OBJ] [obj OBJ] [thread T]
       det break-event                list them
       det break-event delete [N...]  delete them (all without N)
       det break-event disable|enable N...
Examples: det break-event mutex_lock 4;  det break-event thread T2;
          det break-event any obj &b.lock
They stop `continue`, `det next`, `det until` and `det step-thread`;
`det goto` and `det back` pass them."""

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = session()
        a = self.args(arg, s)
        w = a.words()
        if not w:
            if not s.breaks:
                print("det: no break-events")
            for b in s.breaks:
                print(f"det: break-event {b.number}: {describe_break(s, b)}"
                      f"{'' if b.enabled else ' (disabled)'}; hit {b.hits} time(s)")
            return
        if w[0] in ("delete", "disable", "enable"):
            numbers = Args(f"{a.cmd} {w[0]}", arg, s)
            nums = [numbers.int(x) for x in w[1:]]
            targets = [b for b in s.breaks if not nums or b.number in nums]
            missing = set(nums) - {b.number for b in s.breaks}
            if missing:
                raise gdb.GdbError(f"det: no break-event {min(missing)}")
            for b in targets:
                if w[0] == "delete":
                    s.breaks.remove(b)
                else:
                    b.enabled = w[0] == "enable"
        else:
            kind = obj = thread = None
            i = 0
            if w[0] not in ("obj", "thread"):
                kind = a.kind(w[0])
                i = 1
                if i < len(w) and w[i] not in ("obj", "thread"):
                    obj = a.obj(w[i])
                    i += 1
            while i < len(w):
                if w[i] in ("obj", "thread") and i + 1 < len(w):
                    if w[i] == "obj":
                        obj = a.obj(w[i + 1])
                    else:
                        thread = a.thread(w[i + 1])
                    i += 2
                else:
                    raise a.error(f"unexpected '{w[i]}' (see `help det break-event`)")
            if kind is None and obj is None and thread is None:
                raise a.error("`any` needs an object or a thread")
            b = BreakEvent(s.next_break, kind, obj, thread)
            s.next_break += 1
            s.breaks.append(b)
            print(f"det: break-event {b.number}: {describe_break(s, b)}")
        if s.alive():
            s.arm()


def describe_break(s: Session, b: BreakEvent) -> str:
    from det.trace import kind_name

    parts = [f"before every {kind_name(b.kind) if b.kind is not None else 'event'}"]
    if b.obj is not None:
        parts.append(f"on {s.model.obj_name(b.obj)}")
    if b.thread is not None:
        parts.append(f"by T{b.thread}")
    return " ".join(parts)
