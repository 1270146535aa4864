"""The trace directory: where traces go when `-o` is not given, and how a
TRACE argument names one (`detrec ls` / `detrec rm` are det.record.tracels).

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
import os
import re
from pathlib import Path
from typing import Any

from .errors import DetError
from .trace import INCOMPLETE

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
