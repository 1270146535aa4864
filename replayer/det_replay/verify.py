"""det.replay.verify: a kept trace is a verified trace. verify() replays a
trace once, right after it was recorded, in the mode it was recorded for,
the program's output not shown, and says whether the replay reproduced the
recording (events and outcome) and, if not, why in one line: the first
divergence. detrec and dethunt (det.record) are handed verify() here, by
their entry points detrec() and dethunt() (setup.cfg): det.record never
imports det.replay (docs/DESIGN.md, the layout), as det.hunt is handed the
functions that run a seed.

Rules of this module: it judges by detreplay's own replay (det.replay.cli's
replay(), no second way to replay); the verdict's line names the first
divergence, and for a default-mode trace says that --strict records races
between events.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, NoReturn

from det.command_end import end_command
from det.errors import DetError

if TYPE_CHECKING:
    from det.verdict import Verdict

# Imported when used: `detrec -- PROG` starts up without replay, hunting or
# verdicts (each costs import time on every recording; issue 25).

STRICT_HINT = "a race between events (memory the schedule does not order): record it with --strict"


def verify(path: str | os.PathLike[str]) -> Verdict:
    """Replay the trace at path once and judge it (a DetError, such as a
    changed program, is a verdict too)."""
    from det.trace import Trace
    from det.verdict import Verdict

    from .cli import replay

    try:
        res = replay(str(path), forward=False, quiet=True)
    except DetError as e:
        return Verdict(False, f"could not start: {e}")
    if res.matched:
        return Verdict(True)
    why = next((ln for ln in res.lines if ln.startswith("divergence")), None) or \
        next((ln for ln in res.lines if "outcome differs" in ln), None) or (res.lines[0] if res.lines else "failed")
    with Trace(path) as tr:
        default_mode = tr.meta.get("mode") == "record"
    if default_mode and res.diverged:
        why += f"; {STRICT_HINT}"
    return Verdict(False, why)


def detrec() -> NoReturn:
    """The detrec command: det.record.cli with verify()."""
    from det.record import cli as record_cli

    end_command(record_cli.main(sys.argv[1:], verify=verify))


def dethunt() -> NoReturn:
    """The dethunt command: det.record.huntcli with verify()."""
    from det.record import huntcli

    end_command(huntcli.main(sys.argv[1:], verify=verify))


# where their parsers are, by module name (tools/gen_cli_docs.py: man pages, completion)
detrec.cli_module = "det.record.cli"  # type: ignore[attr-defined]
dethunt.cli_module = "det.record.huntcli"  # type: ignore[attr-defined]
