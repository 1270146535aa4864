"""detreplay --follow [PID] --gdb: gdb attached to a running live replica
(one `detrec --follow` started), with det's extension in its live form
(gdb-ext/det_gdb/live.py).

    detreplay --follow [PID] --gdb [-- GDB ARGS...]

Rules of this module:
 - A replica is found by its status file (det.replay.follow writes it in
   detrec's det-follow-* directory in the temporary directory): one of this
   user's, its replica and program alive, following or holding. PID may be
   the replica's, its program's or its detrec's; it is needed only when
   several run.
 - Everything that can be wrong is one `detreplay:` line before gdb starts.
 - gdb attaches by pid; quitting it detaches, and the replica goes on
   (following: it catches up). Exits with gdb's exit status.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from det.errors import DetError

from .gdb import extension_config, find_gdb, run_with_extension

LIVE_STATES = ("following", "holding")


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def live_replicas() -> list[tuple[Path, dict]]:
    """This user's running replicas: (status file, status)."""
    found = []
    for path in sorted(Path(tempfile.gettempdir()).glob("det-follow-*/status.json")):
        try:
            if path.stat().st_uid != os.getuid():
                continue
            info = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(info, dict) and info.get("state") in LIVE_STATES and _alive(info.get("pid")) \
                and _alive(info.get("program_pid")):
            found.append((path, info))
    return found


def _named(info: dict) -> str:
    return f"{info.get('pid')} ({info.get('binary')}, {info.get('state')})"


def pick_replica(which: str) -> tuple[Path, dict]:
    found = live_replicas()
    if which:
        if not which.isdigit():
            raise DetError(f"{which}: not a pid (the replica's, its program's or its detrec's)", status=2)
        pid = int(which)
        mine = [r for r in found if pid in (r[1].get("pid"), r[1].get("program_pid"), r[1].get("detrec_pid"))]
        if not mine:
            running = "; running: " + ", ".join(_named(i) for _, i in found) if found else ""
            raise DetError(f"no live replica has pid {pid} (nor its program or detrec){running}", status=2)
        found = mine
    if not found:
        raise DetError("no live replica of yours is running (`detrec --follow -- PROG` starts one)", status=2)
    if len(found) > 1:
        raise DetError(f"{len(found)} live replicas are running: name one by pid: "
                       + ", ".join(_named(i) for _, i in found), status=2)
    return found[0]


def attach_gdb(which: str, gdb_args: list[str]) -> int:
    """Attach gdb to the replica's program; returns gdb's exit status."""
    gdb = find_gdb()
    status, info = pick_replica(which)
    with tempfile.TemporaryDirectory(prefix="detreplay-follow-gdb-") as d:
        config = Path(d) / "config.json"
        config.write_text(json.dumps({"status": str(status), "replica_pid": info["pid"], "binary": info.get("binary"),
                                      **extension_config()}))
        return run_with_extension(gdb, Path(d), "attach_or_say", config, gdb_args,
                                  gdb_opts=("-p", str(info["program_pid"])))
