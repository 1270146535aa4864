"""One-line errors: every user-facing failure is a DetError, printed as
`<tool>: <message>` with a non-zero exit, never a traceback."""

from __future__ import annotations

# What would break the line: control characters, and what str.splitlines()
# breaks at besides. A message quotes paths and values read from files,
# which may hold any of them: they are shown escaped, as in a Python string.
_LINE_BREAKERS = {c: repr(chr(c))[1:-1] for c in (*range(32), 0x7F, 0x85, 0x2028, 0x2029)}


class DetError(Exception):
    """A problem to report in one line; `status` is the exit status."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(str(message).translate(_LINE_BREAKERS))
        self.status = status


class TraceDamage(DetError):
    """What is wrong with a trace, in one line (the path is added by the caller)."""
