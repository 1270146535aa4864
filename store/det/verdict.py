"""det.verdict: whether a trace was seen to replay right after it was
recorded (detrec --verify; --until-fail, --runs and dethunt always), kept
in the trace's meta (key `verified`) for `detrec info` and dettui.

Rules of this module: the verdict is written by det.record, which is
handed the function that replays (det.replay.verify: det.record never
imports det.replay); it is not sealed (replay does not use it), so
writing it leaves the content checksum as it was, and the file, changed,
is remembered valid again (det.seal.remember).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import DetError
from .seal import remember


@dataclass(frozen=True)
class Verdict:
    replays: bool
    why: str = ""    # when it does not: the first divergence (or what else went wrong), one line

    def line(self) -> str:
        return "verified: replays" if self.replays else f"does not replay: {self.why}"


# What replays a trace once and judges it (det.replay.verify.verify); None
# where the command was not given one (then --verify is not available).
Verifier = Callable[[str | os.PathLike[str]], Verdict]


def write_verdict(path: str | os.PathLike[str], verdict: Verdict) -> None:
    """Keep the verdict in the trace's meta."""
    try:
        db = sqlite3.connect(path)
        try:
            with db:
                db.execute("INSERT OR REPLACE INTO meta VALUES ('verified', ?)",
                           (json.dumps({"replays": verdict.replays, "why": verdict.why}),))
        finally:
            db.close()
    except sqlite3.Error as e:
        raise DetError(f"{path}: cannot note whether it replays ({e})") from None
    remember(path)


def read_verdict(meta: dict[str, Any]) -> Verdict | None:
    """The verdict a trace's meta holds (None: never verified)."""
    v = meta.get("verified")
    return Verdict(v["replays"], v["why"]) if isinstance(v, dict) else None
