"""The trace directory: where traces go when `-o` is not given, and
`detrec ls` / `detrec rm`.

    detrec ls [--json]
    detrec rm [--all] TRACE...

Rules: the directory is $DET_TRACE_DIR, else $XDG_DATA_HOME/det/traces,
else ~/.local/share/det/traces; it is created mode 0700 (traces hold the
program's environment and inputs). A trace there is NAME-N.db, N counting
up per program name; `latest-trace` is a symlink to the last one recorded,
which `detreplay` with no argument replays. A TRACE argument is a path, or
a name in the directory (with or without .db). `rm` removes det traces only
(it checks the file's SQLite application id), never anything else.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from . import __version__
from .errors import DetError
from .outpath import is_det_trace_file
from .trace import INCOMPLETE, Trace

LATEST = "latest-trace"
SUFFIX = ".db"


def trace_argument(p: argparse.ArgumentParser, *names: str, **kw: Any) -> argparse.Action:
    """An argument naming a trace; shell completion offers trace names and files."""
    action = p.add_argument(*names, **kw)
    action.complete = "trace"  # read by tools/gen_cli_docs.py
    return action


def trace_dir() -> Path:
    """Where traces go by default (not created here)."""
    env = os.environ.get("DET_TRACE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_DATA_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "share"  # the XDG spec ignores relative
    return base / "det" / "traces"


def ensure_dir() -> Path:
    d = trace_dir()
    try:
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as e:
        raise DetError(f"cannot create the trace directory {d}: {e.strerror} (set DET_TRACE_DIR, or use -o)") from None
    if not d.is_dir():
        raise DetError(f"{d}: the trace directory is not a directory (set DET_TRACE_DIR, or use -o)")
    return d


def _stem(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+-]", "_", os.path.basename(name)) or "program"


def new_trace_path(program: str) -> Path:
    """A fresh NAME-N.db in the trace directory for a recording of `program`."""
    d = ensure_dir()
    stem = _stem(program)
    pat = re.compile(re.escape(stem) + r"-(\d+)(?:-pass)?\.db(?:\.incomplete|\.lock)?$")
    taken = [int(m.group(1)) for p in d.iterdir() if (m := pat.match(p.name))]
    return d / f"{stem}-{max(taken, default=0) + 1}{SUFFIX}"


def note_latest(path: Path) -> None:
    """Point latest-trace at `path` when it is in the trace directory."""
    d = trace_dir()
    try:
        if not path.exists() or path.resolve().parent != d.resolve():
            return
        tmp = d / f".{LATEST}.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        os.symlink(path.name, tmp)
        os.replace(tmp, d / LATEST)
    except OSError:
        pass  # a convenience: never fail a recording over it


def traces() -> list[Path]:
    """The traces in the trace directory, oldest first."""
    d = trace_dir()
    if not d.is_dir():
        return []
    found = [p for p in d.iterdir()
             if (p.name.endswith(SUFFIX) or p.name.endswith(SUFFIX + INCOMPLETE)) and p.is_file()
             and not p.name.startswith(".")]
    return sorted(found, key=lambda p: (p.stat().st_mtime, p.name))


def latest() -> Path:
    """The trace `detreplay` replays when given none."""
    d = trace_dir()
    link = d / LATEST
    if link.is_symlink() and link.resolve().is_file():
        return link.resolve()
    complete = [p for p in traces() if p.name.endswith(SUFFIX)]
    if not complete:
        raise DetError(f"no trace to replay in {d}: record one with `detrec PROGRAM`, or name a trace")
    return complete[-1]


def resolve(name: str) -> Path:
    """A trace named on the command line: a path, or a name in the trace directory."""
    p = Path(name)
    if p.exists() or "/" in name:
        return p
    d = trace_dir()
    for cand in (d / name, d / (name + SUFFIX)):
        if cand.exists():
            return cand
    return p  # the reader says "no such trace"


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
            if o is None:
                row["outcome"] = "incomplete"
            elif o["status"] == "exited":
                row["outcome"] = f"exit {o['exit_code']}"
            elif o["status"] == "signaled":
                row["outcome"] = f"signal {o['signal']}"
            else:
                row["outcome"] = o["status"]
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
        if not ns.quiet:
            print(f"removed {path}")
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
