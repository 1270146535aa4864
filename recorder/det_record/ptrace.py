"""detrec --ptrace: record a program through build/detptrace (ptracer/), which
sees its system calls at the kernel boundary (seccomp + ptrace): for programs
libdet.so cannot enter (statically linked) and raw system calls.

Rules: the trace is an ordinary det trace (same schema, same event kinds,
meta mode = "ptrace"), written here from the supervisor's log; nothing in it
needs libdet.so. What the supervisor saw, in which order, is all there is:
one event per traced call, thread start, creation and exit (ptracer/detptrace.c
says which calls and how), no synchronization objects.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from det.ptracelog import read_log, supervise, work_dir
from det.trace import TraceWriter

from .engine import Options, RunResult
from .logtrace import finish, run_meta


def record_ptrace(exe: str, argv: list[str], out: Path, opts: Options) -> RunResult:
    env = dict(os.environ) if opts.env is None else dict(opts.env)
    cwd = opts.cwd or os.getcwd()
    seed = opts.seed or random.randrange(1, 2**63)
    # (stdin: inherited, not recorded apart: its reads are events)
    meta = run_meta("ptrace", exe, argv, env, cwd, opts, stdin=None, ptrace_seed=seed)
    writer = TraceWriter(out)
    try:
        with work_dir() as d:
            run = supervise("record", Path(d), exe, argv, env, cwd, opts.outputs, opts.forward, opts.timeout, seed)
            return finish(writer, meta, run, exe, read_log(run.log, run.how == "timeout"))
    except BaseException:
        writer.discard()
        raise
