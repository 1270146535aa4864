"""dettui's command line: the parser (man page and completion are generated
from it, by a Python that may not have Textual) and the entry point.

Rules: nothing here imports Textual; the app is imported when it runs, and a
missing Textual is one line naming the package, not a traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from det import __version__


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dettui", description="See, step and compare det schedules in a terminal.")
    p.add_argument("--version", action="version", version=f"%(prog)s (det) {__version__}")
    p.add_argument("traces", nargs="+", metavar="TRACE", help="a trace; two traces: compare them")
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


def main(argv: list[str] | None = None) -> int:
    ns = parse_args(sys.argv[1:] if argv is None else argv)
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
