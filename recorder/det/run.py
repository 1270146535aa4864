"""detrun: run a program deterministically, in logical time, keeping no trace.

    detrun [--seed S] [--timeout S] [--] PROGRAM [ARGS...]

Threads run in parallel and synchronize in an order fixed by logical clocks
(replayer/logical.c): the same program with the same input synchronizes the
same way, and prints the same, on every run; --seed S picks another order,
again the same on every run. It is `detrec --logical` without the trace (to
keep one, for replay, stepping or diffing, use `detrec --logical`).

Rules: the program's output goes where it would natively; detrun prints
only its own errors. Exit status: the program's, as a shell reports it; 124
when --timeout stopped it; 125 when det had to stop it; 2 for bad usage.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from . import __version__
from .errors import DetError
from .launch import resolve_program, stdin_source
from .record import INTERRUPT, Options, record_run


def say(msg: str) -> None:
    print(f"detrun: {msg}", file=sys.stderr, flush=True)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="detrun",
        description="Run a multithreaded program deterministically (logical time), keeping no trace.",
        epilog="Exit status: the program's (128+N for signal N), 124 when --timeout stopped it, 125 when det "
               "stopped it, 2 for bad usage.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s (det) {__version__}")
    p.add_argument("--seed", type=int, metavar="S", help="another deterministic order (a positive number)")
    p.add_argument("--timeout", type=float, metavar="S", help="stop the program after S seconds")
    p.add_argument("--max-threads", type=int, default=4096, metavar="N", help="threads a run may create (default 4096)")
    p.add_argument("program", help="the program to run").complete = "command"
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return p


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = build_parser()
    ns = p.parse_args(argv)
    if ns.seed is not None and ns.seed <= 0:
        p.error("--seed must be a positive number")
    if ns.timeout is not None and ns.timeout <= 0:
        p.error("--timeout needs a positive number of seconds")
    if not 1 <= ns.max_threads <= 65535:
        p.error("--max-threads must be between 1 and 65535")
    return ns


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    tmp = None
    try:
        ns = parse_args(argv)
        exe = resolve_program(ns.program)
        opts = Options(timeout=ns.timeout, max_threads=ns.max_threads, forward=True, stdin=stdin_source(),
                       strict=True, logical=True, seed=ns.seed or 0)
        INTERRUPT.install()
        # The run's log is written and thrown away: the scheduler is the
        # point here, and one code path for runs with and without a trace
        # keeps them the same run.
        tmp = Path(tempfile.mkdtemp(prefix="detrun-"))
        res = record_run(exe, [ns.program] + ns.args, tmp / "run.db", opts)
        if res.status in ("timeout", "stopped"):
            say(res.message)
        return res.exit_status
    except DetError as e:
        say(str(e))
        return e.status
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
