"""What a replay runs, checked before it runs: detreplay's and detreplay
--gdb's one set of checks (det.replay.cli and det.replay.gdb both use it).

Rules: a refusal is a DetError of one line (status 2); what this machine
lacks is said first (`detreplay: ...` lines on stderr), unless quiet.
"""

from __future__ import annotations

import os
import sys

from det.errors import DetError
from det.events import PROC_STOP
from det.trace import Trace
from det.trust import check_libraries, check_owner, sha256_file

from .view import PackedView, host_differences, is_packed


def say(msg: str) -> None:
    print(f"detreplay: {msg}", file=sys.stderr, flush=True)


def stops_processes(tr: Trace) -> bool:
    """The program stopped another of its processes (a PROC_STOP event)."""
    return tr.q1("SELECT EXISTS (SELECT 1 FROM calls WHERE kind = ?)", (PROC_STOP,)) == 1


def replay_order(meta: dict, relaxed: bool, stops_processes: bool = False) -> tuple[bool, bool]:
    """(relaxed, strict) for a replay of a trace with these meta rows: a
    strict trace replays in strict order (its scheduling events, det-cc's
    yields among them, are in no other order), whatever was asked. So does
    a trace whose program stops another of its processes (PROC_STOP: job
    control, a tracer's attach) in the recorded order: the stop is sent
    where the recording made it, and the stopped process must not have run
    ahead of that place, which no object of the per-object order carries
    (job_control's child, run ahead, had exited before its stop: 5 relaxed
    replays of 5 failed)."""
    strict = meta.get("mode") == "strict"
    if strict and relaxed:
        say("note: a strict trace replays in strict order; --relaxed ignored")
    elif relaxed and stops_processes:
        say("note: the program stops another of its processes (job control or a tracer), which only the "
            "recorded order keeps in its place: --relaxed ignored")
        relaxed = False
    return relaxed and not strict, strict


def check_binary(tr: Trace, force: bool, trust: bool = False, view: PackedView | None = None,
                 quiet: bool = False) -> str:
    """Everything a replay runs, checked before it runs: whose trace it is
    (det.trust), the binary, the directory, then (after saying what this
    machine lacks, unless quiet) every library it loaded; in a packed
    trace's view when there is one."""
    m = tr.meta
    check_owner(tr.path, m, trust)
    exe = m.get("binary")
    here = (lambda p: view.host_path(p)) if view is not None else (lambda p: p)
    if not exe or not os.path.exists(here(exe)):
        hint = ("the trace carries it: replay without --host-files" if is_packed(tr)
                else "`detrec pack` on the recording machine carries it with the trace")
        raise DetError(f"{exe}: the recorded program is gone; {hint}", status=2)
    if not force and sha256_file(here(exe)) != m.get("binary_sha256"):
        raise DetError(f"{exe} changed since it was recorded (its sha256 differs); --force replays it anyway",
                       status=2)
    if not os.path.isdir(here(m.get("cwd", ""))):
        raise DetError(f"{m.get('cwd')}: the recorded working directory is gone", status=2)
    if not quiet:  # what is gone or changed here, before a refusal names one of them
        for line in host_differences(tr, view):
            say(line)
    check_libraries(m, force, here)
    return exe
