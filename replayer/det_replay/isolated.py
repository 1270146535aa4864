"""detreplay of a detrec --isolated trace (meta mode "isolated"): the program
runs isolated again (build/libdetiso.so), which is deterministic, taking the
recorded inputs (isolated/trace.c); its log must be the recorded events, one
for one, and its outcome the recorded one.

Rules: the checks before the run are every replay's (det.replay.checks); the
outcome is compared as every replay compares it (status, stdout, stderr);
events are compared as (thread, kind, object address, aux, result) in
det.isolog's canonical order, never by time; the first difference is the
divergence, in one line. libdetiso.so's own "replay diverged" (an input
call that is not the recorded one) is the divergence when it comes first.
"""

from __future__ import annotations

import os
from pathlib import Path

from det import isolog
from det.errors import DetError
from det.launch import EXIT_STOPPED, EXIT_TIMEOUT, FED_KINDS, StdinFeed
from det.trace import Trace, kind_name
from det.trust import sha256_file

from . import outcome
from .checks import check_binary

EXIT_DIVERGED = EXIT_STOPPED
THREAD_OBJKIND = 1


def recorded_events(tr: Trace) -> list[tuple[int, int, int, int, int, bytes]]:
    """(thread, kind, object address or 0, aux, result, data) in the trace's order."""
    return [(tid, kind, addr if okind != THREAD_OBJKIND else 0, aux, result, bytes(data))
            for tid, kind, addr, okind, aux, result, data in tr.q(
                "SELECT e.tid, c.kind, coalesce(o.address, 0), coalesce(o.kind, 0), c.aux, e.result, "
                "coalesce(d.bytes, x'') FROM event_rows e JOIN calls c ON c.call = e.call "
                "LEFT JOIN objects o ON o.obj = c.obj LEFT JOIN data d ON d.seq = e.seq ORDER BY e.seq")]


def _stdin(tr: Trace) -> StdinFeed | int | None:
    src = tr.meta.get("stdin") or {"kind": "tty"}
    if src["kind"] in FED_KINDS:
        return StdinFeed(tr.stdin_chunks(), None, pty=src["kind"] == "pty")
    if src["kind"] == "file":
        if not os.path.exists(src["path"]) or sha256_file(src["path"]) != src["sha256"]:
            raise DetError(f"{src['path']}: the file the program read as stdin is gone or changed since recording",
                           status=2)
        fd = os.open(src["path"], os.O_RDONLY)
        os.lseek(fd, int(src.get("offset", 0)), os.SEEK_SET)
        return fd
    return None


def _event_text(e: tuple[int, int, int, int, int] | None) -> str:
    if e is None:
        return "nothing (the run ended)"
    tid, kind, addr, aux, result = e
    where = f" {addr:#x}" if addr else ""
    return f"T{tid} {kind_name(kind)}{where} aux {aux} = {result}"


def replay_isolated(trace_path: str, force: bool = False, trust: bool = False, forward: bool = True,
                    timeout: float | None = None) -> tuple[int, list[str], bool]:
    """(exit status, lines to say, diverged)."""
    with Trace(trace_path) as tr:
        exe = check_binary(tr, force, trust, None, quiet=True)
        m = tr.meta
        rec = outcome.recorded(tr, trace_path, "an --isolated")
        recorded = recorded_events(tr)
        stopped = rec["status"] == "timeout"  # (detrec's --timeout: so is the replay, at the same limit)
        if timeout is None:  # a replay that never ends: it does not follow the recording
            timeout = m.get("timeout") or 30.0 if stopped else max(30.0, 20 * rec["duration_ns"] / 1e9)
        stdin = _stdin(tr)
        with isolog.work_dir() as d:
            isolog.write_inputs(Path(d) / "inputs", ((t, k, a, r, data) for t, k, _, a, r, data in recorded))
            run = isolog.run("replay", Path(d), exe, m["argv"], m["env"], m["cwd"],
                             (m.get("stdout"), m.get("stderr")), forward, timeout, stdin)
            replayed = [(e.thread, e.kind, e.obj, e.aux, e.result) for e in isolog.read(run.log, True)]
    total = len(recorded)
    want = [r[:5] for r in recorded]
    for i, (a, b) in enumerate(zip(want, replayed, strict=False)):
        if a != b:
            return EXIT_DIVERGED, [f"replay diverged at event {i} of {total}: recorded {_event_text(a)}, "
                                   f"replay {_event_text(b)}"], True
    said = run.stderr["tail"].decode(errors="replace").splitlines()
    if said and said[-1].startswith("detreplay: replay diverged"):  # (its line, on stderr already when forwarded)
        return EXIT_DIVERGED, [] if forward else [said[-1].removeprefix("detreplay: ")], True
    if len(replayed) != total and not (stopped and run.how == "timeout"):
        i = min(len(replayed), total)
        return EXIT_DIVERGED, [f"replay diverged at event {i} of {total}: recorded "
                               f"{_event_text(want[i] if i < total else None)}, replay "
                               f"{_event_text(replayed[i] if i < len(replayed) else None)}"], True
    if run.how == "timeout":
        if stopped:  # (killed at a time, not at an event: the events both runs have agree)
            return EXIT_TIMEOUT, [f"replayed {min(total, len(replayed))} of {total} events (isolated) the same; "
                                  "the recording was stopped by its timeout, and so was the replay"], False
        return EXIT_DIVERGED, [f"replay stalled: {run.what}"], True
    return outcome.compare(rec, run, total, "isolated")
