"""detrec ls / detrec rm: the traces in the trace directory (det.tracedir).

    detrec ls [--json]
    detrec rm [--all] TRACE...

Rules: `rm` removes det traces only (it checks the file's SQLite application
id), never anything else; after it, latest-trace points at the newest trace
left, or is gone, and the kept copies (det.objects) no trace left in the
directory names are removed.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from det import __version__
from det.errors import DetError
from det.objects import prune
from det.outpath import is_det_trace_file
from det.trace import Trace, outcome_words
from det.tracedir import LATEST, SUFFIX, note_latest, resolve, trace_argument, trace_dir, traces


def human_size(n: int) -> str:
    for unit in ("B", "K", "M", "G"):
        if n < 1024 or unit == "G":
            return f"{n:.0f}{unit}" if unit == "B" or n >= 10 else f"{n:.1f}{unit}"
        n /= 1024
    return f"{n}"


def human_age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(max(seconds, 0))}s"


def describe(path: Path, now: float) -> dict[str, Any]:
    """One `detrec ls` row."""
    st = path.stat()
    row: dict[str, Any] = {"name": path.name[:-len(SUFFIX)] if path.name.endswith(SUFFIX) else path.name,
                           "path": str(path), "bytes": st.st_size, "age_s": round(now - st.st_mtime, 1)}
    try:
        with Trace(path) as tr:
            m = tr.meta
            o = tr.outcome()
            row["program"] = shlex.join(m.get("argv") or [])
            mode = m.get("mode") or "?"
            if m.get("chaos"):
                mode += "+chaos"
            if tr.q1("SELECT count(*) FROM sqlite_master WHERE name = 'packed'") and \
                    tr.q1("SELECT count(*) FROM packed"):
                mode += ",packed"
            row["mode"] = mode
            row["events"] = tr.event_count()
            row["outcome"] = outcome_words(o)
    except DetError as e:
        row.update(program="?", mode="?", events=None, outcome=f"unreadable: {e}".replace(f"{path}: ", ""))
    return row


def ls_main(argv: list[str]) -> int:
    ns = ls_parser().parse_args(argv)
    now = time.time()
    rows = [describe(p, now) for p in traces()]
    latest_name = None
    link = trace_dir() / LATEST
    if link.is_symlink():
        latest_name = os.readlink(link)
    if ns.json:
        for r in rows:
            r["latest"] = Path(r["path"]).name == latest_name
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    if not rows:
        print(f"no traces in {trace_dir()}", file=sys.stderr)
        return 0
    head = ("NAME", "PROGRAM", "OUTCOME", "MODE", "EVENTS", "SIZE", "AGE")
    table = [head] + [
        ((r["name"] + (" *" if Path(r["path"]).name == latest_name else "")),
         r["program"] if len(r["program"]) <= 40 else r["program"][:37] + "...",
         r["outcome"], r["mode"], "-" if r["events"] is None else str(r["events"]),
         human_size(r["bytes"]), human_age(r["age_s"]))
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for row in table:
        print("  ".join(c.ljust(w) if i not in (4, 5) else c.rjust(w) for i, (c, w) in
                        enumerate(zip(row, widths, strict=True))).rstrip())
    print(f"({trace_dir()}; * = latest, what `detreplay` with no argument replays)")
    return 0


def rm_main(argv: list[str]) -> int:
    p = rm_parser()
    ns = p.parse_args(argv)
    if not ns.traces and not ns.all:
        p.error("name the traces to remove, or --all")
    targets = traces() if ns.all else [resolve(t) for t in ns.traces]
    status = 0
    dirs: set[Path] = set()
    for path in targets:
        if not path.exists():
            print(f"detrec rm: {path}: no such trace", file=sys.stderr)
            status = 1
            continue
        if not path.is_file() or not is_det_trace_file(path):
            print(f"detrec rm: {path}: not a det trace; left alone", file=sys.stderr)
            status = 1
            continue
        for f in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            try:
                f.unlink()
            except FileNotFoundError:
                pass
            except OSError as e:
                print(f"detrec rm: {f}: {e.strerror}", file=sys.stderr)
                status = 1
        dirs.add(path.parent)
        if not ns.quiet:
            print(f"removed {path}")
    for d in dirs:  # the kept copies no trace left there needs
        try:
            prune(d)
        except OSError as e:
            print(f"detrec rm: {d}: cannot prune its kept copies ({e.strerror})", file=sys.stderr)
            status = 1
    _repair_latest()
    return status


def _repair_latest() -> None:
    """After rm: latest-trace points at the newest trace left, or is gone."""
    link = trace_dir() / LATEST
    if link.is_symlink() and not link.exists():
        link.unlink()
        left = [p for p in traces() if p.name.endswith(SUFFIX)]
        if left:
            note_latest(left[-1])


def ls_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="detrec ls",
        description="List the traces in the trace directory, oldest first: name, program, outcome, mode, "
                    "events, size and age.",
        epilog="The trace directory is $DET_TRACE_DIR, else $XDG_DATA_HOME/det/traces, else "
               "~/.local/share/det/traces.",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--version", action="version", version=f"%(prog)s (det) {__version__}")
    return p


def rm_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="detrec rm",
        description="Remove det traces: names in the trace directory, or paths. Files that are not det "
                    "traces are left alone.",
    )
    trace_argument(p, "traces", nargs="*", metavar="TRACE", help="a trace name (see detrec ls) or path")
    p.add_argument("--all", action="store_true", help="every trace in the trace directory")
    p.add_argument("-q", "--quiet", action="store_true", help="say nothing about what was removed")
    p.add_argument("--version", action="version", version=f"%(prog)s (det) {__version__}")
    return p
