"""detrec scrub TRACE -o OUT: a copy of a trace to share, without the
environment's secrets.

A trace holds the program's whole environment (tokens, passwords, keys),
what it read from a pipe or the terminal, and the random bytes it drew
(README: "What a trace holds"). Rules of this file:
  - Every environment value is replaced by one of the same length (x's), so
    the program's initial stack, and so the replay, are unchanged as long as
    the program does not read those variables; the names are kept. Values
    of variables that carry no secret and that programs read to run (PATH,
    LANG, TERM, ...) are kept, and more with --keep NAME.
  - The copy is sealed like any trace det writes (det.seal), rebuilt so
    that no old value survives in its free pages, and says which variables
    were scrubbed (meta `scrubbed`); the original is not touched. The
    output path is checked like detrec -o's (det.outpath), and written as
    det writes every trace (det.tracefile). A trace that is not yours alone
    is copied only when trusted: the copy is yours, and would replay as you.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import sys
from pathlib import Path

from det.errors import DetError
from det.outpath import check_trace_output
from det.seal import remember, seal
from det.trace import Trace
from det.tracefile import TraceLock, WorkDir
from det.trust import check_owner, what_it_runs

KEPT = ("PATH", "LANG", "LANGUAGE", "TERM", "SHELL", "TZ", "PWD", "OLDPWD", "SHLVL", "COLUMNS", "LINES",
        "LD_LIBRARY_PATH", "LD_PRELOAD", "HOME", "USER", "LOGNAME", "TMPDIR", "_")


def kept(name: str, keep: set[str]) -> bool:
    return name in KEPT or name.startswith("LC_") or name in keep


def scrub(src: str | os.PathLike[str], out: str | os.PathLike[str], keep: set[str], trust: bool = False) -> list[str]:
    """Write the scrubbed copy; returns the names of the variables scrubbed."""
    with Trace(src) as tr:
        if not tr.complete:
            raise DetError(f"{src}: the recording did not finish; scrub a complete trace", status=2)
        check_owner(tr.path, tr.meta, trust, doing="the copy would be yours, and replaying it would run "
                    f"{what_it_runs(tr.meta)} as you")
        env = tr.meta["env"]
    dst = check_trace_output(out, [str(Path(src).resolve())], "scrubbed trace")
    if dst.exists() and os.path.samefile(dst, src):
        raise DetError(f"{out}: is the trace being scrubbed; write the copy elsewhere", status=2)
    scrubbed = [k for k in env if not kept(k, keep) and env[k]]
    new_env = {k: ("x" * len(v) if k in scrubbed else v) for k, v in env.items()}
    with TraceLock(dst, "detrec scrub"):
        work = WorkDir(dst)
        tmp = work.file(dst.name)
        try:
            shutil.copyfile(src, tmp)
            os.chmod(tmp, 0o600)
            db = sqlite3.connect(tmp)
            try:
                with db:
                    db.execute("UPDATE meta SET value = ? WHERE key = 'env'", (json.dumps(new_env),))
                    db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('scrubbed', ?)",
                               (",".join(scrubbed),))
                seal(db)
                db.execute("VACUUM")  # rebuild the file: the old values must not stay in free pages
            finally:
                db.close()
            work.publish(tmp, dst)
        except (OSError, sqlite3.Error) as e:
            raise DetError(f"cannot write {dst}: {e}", status=1) from None
        finally:
            work.remove()
    remember(dst)
    return scrubbed


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="detrec scrub",
        description="Copy a trace for sharing, its environment's values replaced by x's of the same length "
                    "(so the replay is unchanged where the program does not read them).",
        epilog="Kept as they are: " + ", ".join(KEPT) + ", LC_*. What else a trace holds (piped or typed "
               "input, random bytes, file paths): see README, 'What a trace holds'.")
    p.add_argument("trace", help="the trace to copy").complete = "file"
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="the copy (an existing det trace there is replaced)").complete = "file"
    p.add_argument("--keep", action="append", default=[], metavar="NAME",
                   help="keep this variable's value too (repeatable)")
    p.add_argument("--trust", action="store_true", help="copy a trace that is not yours alone (det.trust)")
    return p


def main(argv: list[str]) -> int:
    ns = build_parser().parse_args(argv)
    try:
        names = scrub(ns.trace, ns.output, set(ns.keep), ns.trust)
    except DetError as e:
        print(f"detrec scrub: {e}", file=sys.stderr)
        return e.status
    print(f"detrec scrub: {ns.output}: {len(names)} environment value(s) replaced"
          + (f" ({', '.join(names[:8])}{', ...' if len(names) > 8 else ''})" if names else ""), file=sys.stderr)
    return 0
