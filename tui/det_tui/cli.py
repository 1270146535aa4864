"""dettui's command line: the parser (man page and completion are generated
from it, by a Python that may not have Textual) and the entry point.

Rules: nothing here imports Textual; the app is imported when it runs, and a
missing Textual is one line naming the package, not a traceback. Before
anything opens a path or draws, every path is a regular file (or nothing:
the UI says what is missing) and stdin, stdout and stderr are a terminal;
else one `dettui:` line and exit status 2.
"""

from __future__ import annotations

import argparse
import os
import shlex
import stat
import sys
from pathlib import Path

from det import __version__
from det.outpath import file_kind

NEEDS_A_TERMINAL = (
    "dettui needs a terminal: it reads keys from stdin and draws on stderr, so with stdin, stdout or stderr "
    "not a terminal (a pipe, a file, a job without one) it refuses, rather than draw into a file for ever. "
    "There is no headless mode: for text, `detrec info TRACE` says what a trace holds, `detdiff A B` "
    "compares two, `detreplay --gdb TRACE` steps one."
)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dettui", description="See, step and compare det schedules in a terminal.",
                                epilog=NEEDS_A_TERMINAL)
    p.add_argument("--version", action="version", version=f"%(prog)s (det) {__version__}")
    p.add_argument("traces", nargs="+", metavar="TRACE",
                   help="a trace (a regular file); two traces: compare them")
    p.add_argument("--live", action="store_true", help="step a replay of TRACE in gdb (detreplay --gdb)")
    return p


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = build_parser()
    ns = p.parse_args(argv)
    if len(ns.traces) > 2:
        p.error("one trace, or two to compare")
    if ns.live and len(ns.traces) != 1:
        p.error("--live takes one trace")
    return ns


def not_a_trace_file(path: str) -> str | None:
    """Why dettui will not open `path`, from its stat alone: a FIFO blocks the
    open (q and Ctrl-C unheard), a device or socket is no trace, a directory
    neither. None for a regular file (through symbolic links), and for a
    path that is not there or not reachable: the UI says so, or finds the
    capture log a killed detrec left for that name."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return None if stat.S_ISREG(st.st_mode) else f"{path}: is {file_kind(st)}, not a trace"


def no_terminal(ns: argparse.Namespace) -> str | None:
    """Why dettui cannot run here (a stream that is not a terminal), with the text tool doing its job."""
    streams = {name: getattr(sys, name) for name in ("stdin", "stdout", "stderr")}
    name = next((n for n, s in streams.items() if s is None or not s.isatty()), None)
    if name is None:
        return None
    if ns.live:
        text = ["detreplay", "--gdb", *ns.traces]
    elif len(ns.traces) == 2:
        text = ["detdiff", *ns.traces]
    else:
        text = ["detrec", "info", *ns.traces]
    return f"needs a terminal ({name} is not one); in text: {shlex.join(text)}"


def main(argv: list[str] | None = None) -> int:
    ns = parse_args(sys.argv[1:] if argv is None else argv)
    refusal = next(filter(None, map(not_a_trace_file, ns.traces)), None) or no_terminal(ns)
    if refusal:
        print(f"dettui: {refusal}", file=sys.stderr)
        return 2
    try:
        from .app import DetTui
    except ModuleNotFoundError as e:
        print(f"dettui: needs the Python package {e.name!r} (pip install 'det[tui]', or run `make` in det's "
              "checkout)", file=sys.stderr)
        return 2
    app = DetTui([str(Path(t)) for t in ns.traces], live=ns.live)
    try:
        app.run()
    except KeyboardInterrupt:
        return 130
    return app.return_code or 0


if __name__ == "__main__":
    sys.exit(main())
