"""detreplay of a detrec --ptrace trace (meta mode "ptrace"): the program runs
again under build/detptrace (ptracer/), which gives threads their turns in
the recorded order, injects the recorded inputs and checks every other traced
call; the first mismatch is the divergence, in one line.

Rules: the checks before the run are every replay's (det.replay.checks); the
outcome is compared as every replay compares it (status, stdout, stderr); the
schedule goes to the supervisor as its log (det.ptracelog), from event_rows,
calls and data, nothing else.
"""

from __future__ import annotations

from pathlib import Path

from det.launch import EXIT_STOPPED, EXIT_TIMEOUT
from det.ptracelog import supervise, work_dir, write_log
from det.trace import Trace

from . import outcome
from .checks import check_binary

EXIT_DIVERGED = EXIT_STOPPED


def replay_ptrace(trace_path: str, force: bool = False, trust: bool = False, forward: bool = True,
                  timeout: float | None = None) -> tuple[int, list[str], bool]:
    """(exit status, lines to say, diverged)."""
    with Trace(trace_path) as tr:
        exe = check_binary(tr, force, trust, None, quiet=True)
        m = tr.meta
        rec = outcome.recorded(tr, trace_path, "a --ptrace")
        rows = tr.q("SELECT e.seq, e.tid, c.kind, c.aux, e.result, coalesce(d.bytes, x'') FROM event_rows e "
                    "JOIN calls c ON c.call = e.call LEFT JOIN data d ON d.seq = e.seq ORDER BY e.seq")
        total = len(rows)
        if timeout is None:  # a replay that stalls: a schedule the program cannot follow
            timeout = max(30.0, 20 * rec["duration_ns"] / 1e9)
        with work_dir() as d:
            write_log(Path(d) / "events.log", ((tid, kind, aux, result, bytes(data))
                                               for _, tid, kind, aux, result, data in rows))
            cut = rec["status"] not in ("exited", "signaled")  # stopped by detrec: so is the replay, at the end
            run = supervise("replay-cut" if cut else "replay", Path(d), exe, m["argv"], m["env"], m["cwd"],
                            (m.get("stdout"), m.get("stderr")), forward, timeout)
    if run.how == "diverged":
        return EXIT_DIVERGED, [run.what], True
    if run.how == "timeout":
        return EXIT_DIVERGED, [f"replay stalled: {run.what} (the program does not follow the recorded order)"], True
    if run.how == "stopped":
        return EXIT_TIMEOUT, [f"replayed all {total} events (ptrace); the recording was stopped there "
                              f"({rec['status']}), and so was the replay"], False
    return outcome.compare(rec, run, total, "ptrace")
