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

from det.errors import DetError
from det.launch import EXIT_STOPPED, EXIT_TIMEOUT, describe_status, shell_status
from det.ptracelog import supervise, work_dir, write_log
from det.trace import Trace

from .checks import check_binary

EXIT_DIVERGED = EXIT_STOPPED


def replay_ptrace(trace_path: str, force: bool = False, trust: bool = False, forward: bool = True,
                  timeout: float | None = None) -> tuple[int, list[str], bool]:
    """(exit status, lines to say, diverged)."""
    with Trace(trace_path) as tr:
        exe = check_binary(tr, force, trust, None, quiet=True)
        m = tr.meta
        rec = tr.outcome()
        if rec is None:
            raise DetError(f"{trace_path}: the recording did not finish; a --ptrace replay needs its outcome",
                           status=EXIT_STOPPED)
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
    rc = int(run.what) if run.how == "exited" else -int(run.what)
    recorded = rec["exit_code"] if rec["status"] == "exited" else -(rec["signal"] or 0)
    problems = []
    if rec["status"] in ("exited", "signaled") and rc != recorded:
        problems.append(f"recorded {describe_status(recorded)}, replay {describe_status(rc)}")
    for name, info in (("stdout", run.stdout), ("stderr", run.stderr)):
        if info["sha256"] != rec[f"{name}_sha256"]:
            problems.append(f"{name} differs ({info['bytes']} bytes, recorded {rec[f'{name}_bytes']})")
    if problems:
        return EXIT_DIVERGED, [f"replayed {total} events, but the outcome differs: " + "; ".join(problems)], True
    return shell_status(rc), [f"replayed {total} events (ptrace); outcome matches the recording: "
                              f"{describe_status(rc)}"], False
