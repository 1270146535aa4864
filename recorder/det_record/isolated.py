"""detrec --isolated: record a program run in isolated mode (isolated/,
build/libdetiso.so: threads as processes with private memory, committed in
a fixed turn order at every pthreads call), as an ordinary trace.

Rules: the trace's meta mode is "isolated"; its events are libdetiso.so's
log in det.isolog's canonical order: the synchronization events in token
order (what each call returned, a woken waiter's return after the call that
woke it), thread creation, start and exit, and the inputs libdetiso.so
records (isolated/trace.c). stdin is det's as in every recording
(det.launch.stdin_source: a pipe or terminal is copied into the trace and fed
again in replay, a file is identified by its hash). A run libdetiso.so
refused (its one `detrec --isolated: ...` line on the program's stderr,
status 125; not a deadlock, which is recorded) leaves no trace and no
other word.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from det import isolog
from det.launch import FED_KINDS, StdinFeed, read_own_stdin, read_own_terminal
from det.ptracelog import Supervised
from det.trace import TraceWriter

from .engine import Options, RunResult
from .logtrace import finish, run_meta

REFUSED = 125  # libdetiso.so's status when it stops the program (iso_die)


def record_isolated(exe: str, argv: list[str], out: Path, opts: Options) -> RunResult | None:
    """The recorded run; None when libdetiso.so refused the program."""
    env = dict(os.environ) if opts.env is None else dict(opts.env)
    cwd = opts.cwd or os.getcwd()
    meta = run_meta("isolated", exe, argv, env, cwd, opts, stdin=opts.stdin)
    stdin: StdinFeed | int | None = None
    spool = None
    kind = (opts.stdin or {}).get("kind")
    if kind in FED_KINDS:
        spool = tempfile.TemporaryFile()
        stdin = StdinFeed(read_own_terminal() if kind == "pty" else read_own_stdin(), spool, kind == "pty")
    writer = TraceWriter(out)
    try:
        with isolog.work_dir() as d:
            run = isolog.run("record", Path(d), exe, argv, env, cwd, opts.outputs, opts.forward, opts.timeout,
                             stdin)
            if refused(run):
                writer.discard()
                return None
            return finish(writer, meta, run, exe, isolog.read(run.log, run.how == "timeout"), spool,
                          isolog.modules(Path(d)))
    except BaseException:
        writer.discard()
        raise
    finally:
        if spool is not None:
            spool.close()


def refused(run: Supervised) -> bool:
    """Did libdetiso.so stop the program for something it does not do?"""
    if run.how != "exited" or int(run.what) != REFUSED:
        return False
    lines = run.stderr["tail"].decode(errors="replace").splitlines()
    last = lines[-1] if lines else ""
    return last.startswith("detrec --isolated: ") and not last.startswith("detrec --isolated: deadlock")
