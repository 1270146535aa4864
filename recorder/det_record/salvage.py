"""Traces whose detrec was killed: NAME.incomplete and its capture log
NAME.incomplete.log become a readable (incomplete) trace.

Rules: `detrec salvage LOG` does it explicitly; `detrec info`, `detreplay`,
`detdiff` and dettui do it by themselves when they are given a trace whose capture
log is still beside it (or the log itself, or a NAME whose NAME.incomplete
was left). The trace is rebuilt from the log alone (its META chunk holds the
meta table), so a conversion cut short is simply made again; the log is
removed once the trace is written.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from det.errors import DetError, TraceDamage
from det.native import convert, log_meta
from det.trace import TraceWriter, log_path
from det.tracefile import INCOMPLETE, LOG_SUFFIX, TraceLock, check_not_being_written
from det.trust import check_owner
from det.validate import meta_of_log


def salvage(log: Path, trust: bool = False) -> tuple[Path, str]:
    """Build NAME.incomplete from NAME.incomplete.log; returns it and a
    sentence saying what was recovered. Refused while a recording still
    writes the log, and for a log that is not yours alone (det.trust):
    the trace made from it would be yours, and replay it as you."""
    if not log.name.endswith(INCOMPLETE + LOG_SUFFIX):
        raise DetError(f"{log}: not a capture log (its name ends in {INCOMPLETE}{LOG_SUFFIX})", status=2)
    if not log.exists():
        raise DetError(f"{log}: no such capture log", status=2)
    if not log.is_file():
        raise DetError(f"{log}: not a file, so not a capture log", status=2)
    check_not_being_written(log)
    check_owner(log, {}, trust, doing="the trace made from it would be yours, and replaying it would run what "
                "it names as you")
    # (bounded and checked before anything is made of it: the trace's meta
    # table must pass det.validate as any trace's does)
    try:
        meta = meta_of_log(log_meta(log))
    except UnicodeDecodeError:
        raise DetError(f"{log}: its META chunk is not UTF-8 text: not a det capture log") from None
    except TraceDamage as e:
        raise DetError(f"{log}: its META chunk {e}: not a det capture log") from None
    target = log.with_name(log.name[: -len(LOG_SUFFIX)])
    final = target.with_name(target.name[: -len(INCOMPLETE)])
    with TraceLock(final, "detrec salvage"):
        writer = TraceWriter(final, incomplete=target)
        try:
            writer.set_meta(meta)
            st = convert(log, writer.path)
            writer.set_meta({"salvaged": 1, "forced": st.forced, "cut": st.cut, "torn_bytes": st.torn_bytes})
            writer.publish()
        except BaseException:
            writer.remove_work()
            raise
        log.unlink()
    cut = f", {st.torn_bytes} bytes of a torn end cut off" if st.torn_bytes else ""
    if st.cut:
        cut += f", {st.cut} later events of some threads left out to keep the order consistent"
    return target, (f"salvaged {st.events} events from the capture log of a killed detrec into {target}"
                    f" (incomplete: no outcome{cut})")


def ensure_trace(path: str | os.PathLike[str], quiet: bool = False, trust: bool = False) -> Path:
    """The trace to open for `path`, salvaging a killed detrec's capture log
    first when there is one (never the log of a recording still running)."""
    p = Path(path)
    log = None
    if p.name.endswith(INCOMPLETE + LOG_SUFFIX):
        log = p
    elif p.name.endswith(INCOMPLETE) and log_path(p).exists():
        log = log_path(p)
    elif not p.exists():
        inc = p.with_name(p.name + INCOMPLETE)
        if log_path(inc).exists():
            log = log_path(inc)
    if log is None or not log.exists():
        return p
    target, what = salvage(log, trust)
    if not quiet:
        print(f"det: {what}", file=sys.stderr)
    return target


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="detrec salvage",
                                description="Turn the capture log a killed detrec left into a trace.")
    p.add_argument("log", help="NAME.incomplete.log (or NAME, or NAME.incomplete)").complete = "file"
    p.add_argument("--trust", action="store_true",
                   help="salvage a log that is not yours alone (another user's, or one others may change)")
    return p


def main(argv: list[str]) -> int:
    ns = build_parser().parse_args(argv)
    try:
        arg = Path(ns.log)
        if not arg.name.endswith(LOG_SUFFIX):
            inc = arg if arg.name.endswith(INCOMPLETE) else arg.with_name(arg.name + INCOMPLETE)
            arg = log_path(inc)
        _, what = salvage(arg, ns.trust)
    except DetError as e:
        print(f"detrec salvage: {e}", file=sys.stderr)
        return e.status
    print(f"detrec: {what}", file=sys.stderr)
    return 0
