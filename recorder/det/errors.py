"""One-line errors: every user-facing failure is a DetError, printed as
`<tool>: <message>` with a non-zero exit, never a traceback."""

from __future__ import annotations


class DetError(Exception):
    """A problem to report in one line; `status` is the exit status."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status
