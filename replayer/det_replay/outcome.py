"""
replayer/det_replay/outcome.py - a replay's ending against the recording's,
for the replays that run under a supervisor of their own (--ptrace and
--isolated traces; det.ptracelog.Supervised): exit status and outputs.

Rules of this file:
  - It compares and words; it runs nothing.
"""

from __future__ import annotations

from det.errors import DetError
from det.launch import EXIT_STOPPED, describe_status, shell_status
from det.ptracelog import Supervised
from det.trace import Trace

EXIT_DIVERGED = EXIT_STOPPED


def recorded(tr: Trace, trace_path: str, mode: str) -> dict:
    """The recording's outcome, which such a replay is checked against: a
    recording that did not finish is refused in one line (`mode`: "a
    --ptrace", "an --isolated")."""
    rec = tr.outcome()
    if rec is None:
        raise DetError(f"{trace_path}: the recording did not finish; {mode} replay needs its outcome",
                       status=EXIT_STOPPED)
    return rec


def compare(rec: dict, run: Supervised, total: int, label: str) -> tuple[int, list[str], bool]:
    """(exit status, lines, diverged) of a run that exited or was signaled,
    against the recording's outcome `rec`; `label` names the mode in the
    line (ptrace, isolated)."""
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
    return shell_status(rc), [f"replayed {total} events ({label}); outcome matches the recording: "
                              f"{describe_status(rc)}"], False
