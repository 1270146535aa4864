"""detdiff A B: what is different about one run of a program compared with another.

    detdiff [--json] [--context N] [--limit N] [--force] [--color WHEN] A.db B.db
    detdiff --bisect [--json] [--keep DIR] [--force] PASS.db FAIL.db

Rules: the comparison is det.compare.diff's (det.compare.bisect's with --bisect) and its
text det.compare.difftext's (det.compare.bisect.report's); this file only prints it. Text is
for humans (colour only on a terminal, never with NO_COLOR set), --json for
tools (the keys are documented in docs/detdiff.md). Exit status like diff(1):
0 when schedules and outcomes are identical, 1 when they differ, 2 for
errors, each told in one line (`detdiff: ...`), never a traceback.
--bisect replays hybrid schedules (det.compare.bisect) and exits 0 when it found
and confirmed a critical pair, 1 when it did not, 2 for errors.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from det import __version__, tracedir
from det.errors import DetError
from det.record.salvage import ensure_trace

from .diff import compare
from .difftext import Style, render

EXIT_SAME, EXIT_DIFFERENT, EXIT_ERROR = 0, 1, 2


def use_color(when: str, stream: Any) -> bool:
    if when == "never":
        return False
    if when == "always":
        return True
    # https://no-color.org: set and not empty disables colour.
    return not os.environ.get("NO_COLOR") and hasattr(stream, "isatty") and stream.isatty()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="detdiff",
        description="Compare two det traces of the same program: where the schedules part, which objects "
                    "are taken in a different order, what happens on one side only, and how the outcomes differ.",
        epilog="Exit status: 0 identical, 1 different, 2 error. A and B are paths, or names listed by `detrec ls`.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s (det) {__version__}")
    tracedir.trace_argument(p, "a", metavar="A", help="a trace (e.g. a passing run)")
    tracedir.trace_argument(p, "b", metavar="B", help="another trace of the same program (e.g. a failing run)")
    p.add_argument("--json", action="store_true", help="machine-readable output (keys: docs/detdiff.md)")
    p.add_argument("-C", "--context", type=int, default=3, metavar="N",
                   help="events shown before and after the divergence (default 3)")
    p.add_argument("--limit", type=int, default=10, metavar="N",
                   help="items listed per section, 0 for all (default 10); counts are always complete")
    p.add_argument("--force", action="store_true", help="compare traces whose arguments differ")
    p.add_argument("--trust", action="store_true",
                   help="with --bisect: replay traces another user owns (see detreplay --trust)")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="colour the text (default: on a terminal, unless NO_COLOR is set)")
    p.add_argument("--bisect", action="store_true",
                   help="A passed, B failed (strict recordings): replay hybrid schedules to find the smallest "
                        "reordering of B that makes it pass")
    p.add_argument("--keep", metavar="DIR",
                   help="with --bisect: keep every replayed hybrid trace in DIR (created if missing; an existing "
                        "one may hold only det traces)").complete = "dir"
    return p


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = build_parser()
    ns = p.parse_args(argv)
    ns.a, ns.b = str(tracedir.resolve(ns.a)), str(tracedir.resolve(ns.b))
    if ns.context < 0:
        p.error("--context needs a number >= 0")
    if ns.limit < 0:
        p.error("--limit needs a number >= 0")
    if ns.keep is not None and not ns.bisect:
        p.error("--keep goes with --bisect")
    return ns


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ns = parse_args(argv)
    try:
        ns.a, ns.b = str(ensure_trace(ns.a)), str(ensure_trace(ns.b))
    except DetError as e:
        print(f"detdiff: {e}", file=sys.stderr)
        return EXIT_ERROR
    if ns.bisect:
        return _bisect_main(ns)
    limit = ns.limit or None
    return _report(ns, lambda: compare(ns.a, ns.b, force=ns.force, context=ns.context, limit=limit, parallel=True),
                   render, lambda r: EXIT_SAME if r.identical else EXIT_DIFFERENT)


def _bisect_main(ns: argparse.Namespace) -> int:
    """detdiff --bisect PASS FAIL: det.compare.bisect's search, rendered."""
    from .bisect import bisect_traces
    from .bisect.report import render as render_bisect

    return _report(ns, lambda: bisect_traces(ns.a, ns.b, force=ns.force, keep=ns.keep, trust=ns.trust), render_bisect,
                   lambda r: EXIT_SAME if r.found and r.confirmed else EXIT_DIFFERENT, closed_pipe=EXIT_ERROR)


def _report(ns: argparse.Namespace, compute: Callable[[], Any], render_text: Callable[[Any, Style], list[str]],
            status: Callable[[Any], int], closed_pipe: int | None = None) -> int:
    """Compute a result, print it (--json or text) and return status(result).
    Errors become one line on stderr; a reader that closed the pipe early
    gets closed_pipe, or the result's status when that is None."""
    try:
        r = compute()
        if ns.json:
            json.dump(r.to_json(), sys.stdout, indent=2)
            sys.stdout.write("\n")
        else:
            sys.stdout.write("\n".join(render_text(r, Style(use_color(ns.color, sys.stdout)))) + "\n")
        sys.stdout.flush()
    except DetError as e:
        print(f"detdiff: {e}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if closed_pipe is not None:
            return closed_pipe
    except KeyboardInterrupt:
        print("detdiff: interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        print(f"detdiff: {e.strerror or e}", file=sys.stderr)
        return EXIT_ERROR
    return status(r)


if __name__ == "__main__":
    sys.exit(main())
