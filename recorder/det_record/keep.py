"""After a recording: keep what it ran (program, libraries, loader) beside
the trace (det.objects), so a system update does not stop it replaying.

Rules: keeping never changes the recording's outcome or exit status; what
could not be kept is said in one line each (unless quiet), and replay then
needs that file unchanged, as without keeping.
"""

from __future__ import annotations

import sys
from pathlib import Path

from det.errors import DetError
from det.objects import keep, keep_wanted


def keep_ran(path: Path, opt_out: bool, quiet: bool) -> None:
    if not keep_wanted(opt_out):
        return
    try:
        why = keep(path).not_kept
    except DetError as e:
        why = [str(e)]
    if why and not quiet:
        shown = "; ".join(why[:4]) + (f"; and {len(why) - 4} more" if len(why) > 4 else "")
        print(f"detrec: note: not kept beside the trace (replay needs them unchanged): {shown}", file=sys.stderr)
