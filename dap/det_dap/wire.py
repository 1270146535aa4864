"""The Debug Adapter Protocol's framing: `Content-Length: N\\r\\n\\r\\n` and N
bytes of JSON, in both directions.

Rules of this file: standard library only; a malformed message is a
WireError (the caller answers it or ends), never a traceback; writing is
one lock, so events from any thread never interleave with responses.
"""

from __future__ import annotations

import json
import threading
from typing import IO, Any

from det.errors import DetError

MAX_MESSAGE = 64 << 20


class WireError(DetError):
    """The client sent something that is not a DAP message."""


def read_message(stream: IO[bytes]) -> dict[str, Any] | None:
    """The next message; None at the end of the input."""
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        line = line.rstrip(b"\r\n")
        if not line:
            if length is None:
                continue  # blank lines between messages
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                raise WireError(f"bad Content-Length {value.strip()!r}") from None
            if not 0 <= length <= MAX_MESSAGE:
                raise WireError(f"Content-Length {length} out of range")
    body = stream.read(length)
    if len(body) < length:
        return None
    try:
        msg = json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise WireError(f"not JSON: {e}") from None
    if not isinstance(msg, dict):
        raise WireError("a message is a JSON object")
    return msg


class Writer:
    """Numbered messages out (seq), one at a time."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        self.lock = threading.Lock()
        self.seq = 0

    def send(self, msg: dict[str, Any]) -> None:
        with self.lock:
            self.seq += 1
            msg["seq"] = self.seq
            body = json.dumps(msg).encode()
            self.stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.stream.flush()

    def event(self, name: str, body: dict[str, Any] | None = None) -> None:
        self.send({"type": "event", "event": name, "body": body or {}})

    def respond(self, request: dict[str, Any], body: dict[str, Any] | None = None, error: str | None = None) -> None:
        msg: dict[str, Any] = {"type": "response", "request_seq": request.get("seq", 0),
                               "command": request.get("command", ""), "success": error is None}
        if error is not None:
            msg["message"] = error
            msg["body"] = {"error": {"id": 1, "format": error.replace("{", "{{").replace("}", "}}"),
                                     "showUser": True}}
        else:
            msg["body"] = body or {}
        self.send(msg)
