"""`det-dap`: det's Debug Adapter Protocol server, on stdin and stdout.

Usage: det-dap [--log FILE]
An editor starts it and sends `launch` with {"trace": "PATH"} (a trace
detrec wrote); see docs/editor.md.

Rules of this file: stdout carries only DAP messages (a stray print would
break the client's framing), so det's own messages go to stderr or --log;
bad input on the wire is said on stderr and ends the session with status 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import IO, Any

from det import __version__

from .adapter import serve
from .wire import WireError, Writer, read_message


class Logged:
    """A byte stream that copies what passes into a log file."""

    def __init__(self, stream: IO[bytes], log: IO[str], arrow: str) -> None:
        self.stream, self.log, self.arrow = stream, log, arrow

    def readline(self) -> bytes:
        return self.stream.readline()

    def read(self, n: int) -> bytes:
        data = self.stream.read(n)
        self.log.write(f"{self.arrow} {data.decode(errors='replace')}\n")
        self.log.flush()
        return data

    def write(self, data: bytes) -> int:
        body = data.split(b"\r\n\r\n", 1)[-1]
        self.log.write(f"{self.arrow} {body.decode(errors='replace')}\n")
        self.log.flush()
        return self.stream.write(data)

    def flush(self) -> None:
        self.stream.flush()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="det-dap", description="det's Debug Adapter Protocol server, on stdin and stdout: an editor "
        "(VS Code, nvim-dap, ...) starts it and launches a trace with {\"trace\": PATH}; see docs/editor.md.")
    p.add_argument("--log", metavar="FILE", help="append every message in and out to FILE")
    p.add_argument("--version", action="version", version=f"%(prog)s (det) {__version__}")
    return p


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    stdin: Any = sys.stdin.buffer
    stdout: Any = sys.stdout.buffer
    sys.stdout = sys.stderr          # nothing but DAP on the real stdout
    if a.log:
        try:
            log = open(a.log, "a")  # noqa: SIM115 - open for the whole session
        except OSError as e:
            print(f"det-dap: --log {a.log}: {e.strerror}", file=sys.stderr)
            return 2
        stdin, stdout = Logged(stdin, log, "->"), Logged(stdout, log, "<-")
    out = Writer(stdout)
    status = 0

    def reader() -> dict[str, Any] | None:
        nonlocal status
        try:
            return read_message(stdin)
        except WireError as e:
            out.event("output", {"category": "stderr", "output": f"det-dap: {e}\n"})
            print(f"det-dap: {e}", file=sys.stderr)
            status = 2
            return None

    try:
        serve(reader, out)
    except (BrokenPipeError, KeyboardInterrupt):
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main())

