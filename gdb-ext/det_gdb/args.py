"""Parsing the det commands' arguments: numbers and expressions, events,
threads, event kinds, objects.

Rules of this file:
  - Every bad argument is one gdb.GdbError line naming the command
    ("det: det goto: 'banana' is not a number"); no traceback.
"""

from __future__ import annotations

import gdb

from det_gdb.session import Session, model_module


def parse_int(text: str, what: str) -> int:
    text = text.strip()
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        v = gdb.parse_and_eval(text)
        return int(v)
    except (gdb.error, ValueError, TypeError):
        raise gdb.GdbError(f"det: {what}: '{text}' is not a number") from None


def parse_event(s: Session, text: str, cmd: str) -> int:
    t = text.strip().lower()
    m = s.model
    if t in ("end", "$"):
        return m.end
    if t in ("start", "begin", "first"):
        return m.first
    n = parse_int(text, cmd)
    if n < 0 or n > m.end:
        last = f"events {m.first} to {m.end - 1}" if m.total else "no events"
        raise gdb.GdbError(f"det: {cmd}: event {n} is not in the recording ({last}; `end` is after the last)")
    if n == m.end:
        return n
    if not m.has(n):
        raise gdb.GdbError(f"det: {cmd}: the trace has no event {n} (its thread died before it was written)")
    return n


def parse_bound(s: Session, text: str, cmd: str) -> int:
    """An end of a range of events: a number or expression (not checked
    against the recording: ranges are clamped), `start` or `end`."""
    t = text.strip().lower()
    if t in ("end", "$"):
        return s.model.end
    if t in ("start", "begin", "first"):
        return s.model.first
    return parse_int(text, cmd)


def parse_thread(s: Session, text: str, cmd: str) -> int:
    t = text.strip()
    n = parse_int(t[1:] if t[:1] in "Tt" and t[1:].isdigit() else t, cmd)
    if n not in s.model.threads:
        last = max(s.model.threads) if s.model.threads else 0
        raise gdb.GdbError(f"det: {cmd}: no thread T{n} in the recording (threads T0 to T{last})")
    return n


def parse_kind(text: str, cmd: str) -> int | None:
    m = model_module()
    if text.lower() == "any":
        return None
    k = m.kind_number(text)
    if k is None:
        names = ", ".join(sorted(m.KIND_BY_NAME))
        raise gdb.GdbError(f"det: {cmd}: unknown event kind '{text}' (kinds: {names})")
    return k


def parse_obj(s: Session, text: str, cmd: str) -> int:
    t = text.strip()
    if t.isdigit():
        n = int(t)
        if n not in s.model.objects:
            raise gdb.GdbError(f"det: {cmd}: no object {n} in the recording (objects 1 to "
                               f"{max(s.model.objects, default=0)})")
        return n
    # An expression for the object's address, like &a.lock: recorded
    # addresses are the replay's (ASLR is off in every det run).
    try:
        addr = int(gdb.parse_and_eval(t))
    except (gdb.error, ValueError, TypeError) as e:
        raise gdb.GdbError(f"det: {cmd}: '{t}' is neither an object number nor an address ({e})") from None
    found = s.model.objects_at(addr)
    if not found:
        raise gdb.GdbError(f"det: {cmd}: no recorded object at {addr:#x}")
    here = s.pos.seq if s.pos is not None else 0
    live = [o for o, first in found if first <= here]
    return live[-1] if live else found[0][0]


def words(arg: str) -> list[str]:
    try:
        return gdb.string_to_argv(arg)
    except gdb.error as e:
        raise gdb.GdbError(f"det: {e}") from None
