"""The det commands' arguments: one helper, Args, that takes a command's
argument string apart and reads numbers and expressions, events, threads,
event kinds and objects from it.

Rules of this file:
  - Every bad argument is one gdb.GdbError line naming the command
    ("det: det goto: 'banana' is not a number"); no traceback.
  - A number is also a gdb expression ($det_event + 10); an object is its
    number as det prints it or an expression for its address (&a.lock); a
    thread is 2 or T2.
"""

from __future__ import annotations

import gdb

from det_gdb.session import Session, model_module

START = ("start", "begin", "first")
END = ("end", "$")


class Args:
    """A command's argument string; each reader takes the whole string by
    default, or one of its words."""

    def __init__(self, cmd: str, arg: str, s: Session | None = None) -> None:
        self.cmd = cmd          # "det goto": the prefix of every error
        self.arg = arg
        self.text = arg.strip()
        self.s = s

    def __bool__(self) -> bool:
        return bool(self.text)

    def error(self, message: str) -> gdb.GdbError:
        return gdb.GdbError(f"det: {self.cmd}: {message}")

    def words(self) -> list[str]:
        """The words, split and unquoted as gdb splits a command's arguments."""
        try:
            return gdb.string_to_argv(self.arg)
        except gdb.error as e:
            raise gdb.GdbError(f"det: {e}") from None

    def int(self, text: str | None = None, default: int | None = None) -> int:
        """A number or a gdb expression; `default` when there is no argument."""
        if default is not None and not self:
            return default
        text = (self.text if text is None else text).strip()
        try:
            return int(text, 0)
        except ValueError:
            pass
        try:
            return int(gdb.parse_and_eval(text))
        except (gdb.error, ValueError, TypeError):
            raise self.error(f"'{text}' is not a number") from None

    def event(self, text: str | None = None) -> int:
        """An event of the recording (or `end`, after the last; `start`)."""
        text = self.text if text is None else text
        t = text.strip().lower()
        m = self.s.model
        if t in END:
            return m.end
        if t in START:
            return m.first
        n = self.int(text)
        if n < 0 or n > m.end:
            last = f"events {m.first} to {m.end - 1}" if m.total else "no events"
            raise self.error(f"event {n} is not in the recording ({last}; `end` is after the last)")
        if n == m.end:
            return n
        if not m.has(n):
            raise self.error(f"the trace has no event {n} (its thread died before it was written)")
        return n

    def bound(self, text: str) -> int:
        """An end of a range of events: a number or expression (not checked
        against the recording: ranges are clamped), `start` or `end`."""
        t = text.strip().lower()
        if t in END:
            return self.s.model.end
        if t in START:
            return self.s.model.first
        return self.int(text)

    def thread(self, text: str | None = None) -> int:
        """A recorded thread: 2 or T2."""
        t = (self.text if text is None else text).strip()
        n = self.int(t[1:] if t[:1] in "Tt" and t[1:].isdigit() else t)
        threads = self.s.model.threads
        if n not in threads:
            last = max(threads) if threads else 0
            raise self.error(f"no thread T{n} in the recording (threads T0 to T{last})")
        return n

    def kind(self, text: str) -> int | None:
        """An event kind of events.def (any case); None for `any`."""
        m = model_module()
        if text.lower() == "any":
            return None
        k = m.kind_number(text)
        if k is None:
            names = ", ".join(sorted(m.KIND_BY_NAME))
            raise self.error(f"unknown event kind '{text}' (kinds: {names})")
        return k

    def obj(self, text: str) -> int:
        """A recorded object: its number, or an expression for its address
        (the one live at the current event when several had it)."""
        s = self.s
        t = text.strip()
        if t.isdigit():
            n = int(t)
            if n not in s.model.objects:
                raise self.error(f"no object {n} in the recording (objects 1 to {max(s.model.objects, default=0)})")
            return n
        # Recorded addresses are the replay's (ASLR is off in every det run).
        try:
            addr = int(gdb.parse_and_eval(t))
        except (gdb.error, ValueError, TypeError) as e:
            raise self.error(f"'{t}' is neither an object number nor an address ({e})") from None
        found = s.model.objects_at(addr)
        if not found:
            raise self.error(f"no recorded object at {addr:#x}")
        here = s.pos.seq if s.pos is not None else 0
        live = [o for o, first in found if first <= here]
        return live[-1] if live else found[0][0]
