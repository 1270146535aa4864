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

import datetime
import os
import random
import signal
import sqlite3
import time
from pathlib import Path

from det import __version__, machine, schema
from det import events as ev
from det.launch import EXIT_TIMEOUT, describe_status, shell_status
from det.ptracelog import read_log, supervise, work_dir
from det.seal import remember
from det.trace import TraceWriter
from det.trust import sha256_recorded

from .engine import Options, RunResult

THREAD_OBJKIND = 1  # det.events' THREAD object kind (a thread's own object: its number + 1)


def record_ptrace(exe: str, argv: list[str], out: Path, opts: Options) -> RunResult:
    env = dict(os.environ) if opts.env is None else dict(opts.env)
    cwd = opts.cwd or os.getcwd()
    seed = opts.seed or random.randrange(1, 2**63)
    start = time.time()
    meta = {
        "format_version": schema.FORMAT_VERSION,
        "det_version": __version__,
        "mode": "ptrace",
        "argv": argv,
        "env": env,
        "cwd": cwd,
        "binary": exe,
        "binary_sha256": sha256_recorded(exe),
        "start_time": datetime.datetime.fromtimestamp(start, datetime.UTC).isoformat(),
        "start_unix_ns": time.time_ns(),
        "host": os.uname().nodename,
        "kernel": os.uname().release,
        **machine.describe(),
        "timeout": opts.timeout,
        "stdin": None,  # (inherited, not recorded apart: its reads are events)
        "stdout": opts.outputs[0],
        "stderr": opts.outputs[1],
        "ptrace_seed": seed,
    }
    writer = TraceWriter(out)
    try:
        with work_dir() as d:
            run = supervise("record", Path(d), exe, argv, env, cwd, opts.outputs, opts.forward, opts.timeout, seed)
            t0 = time.monotonic()
            events, threads = _write_events(writer.path, run.log, exe, run.how == "timeout")
        if run.how == "exited":
            status, returncode, message = "exited", int(run.what), ""
        elif run.how == "signaled":
            status, returncode, message = "signaled", -int(run.what), ""
        else:  # timeout: detptrace killed the program
            status, returncode, message = "timeout", -signal.SIGKILL, run.what
        writer.set_meta(meta)
        outcome = {
            "status": status,
            "exit_code": returncode if status == "exited" else None,
            "signal": -returncode if status != "exited" else None,
            "stdout_bytes": run.stdout["bytes"], "stdout_sha256": run.stdout["sha256"],
            "stdout_tail": run.stdout["tail"],
            "stderr_bytes": run.stderr["bytes"], "stderr_sha256": run.stderr["sha256"],
            "stderr_tail": run.stderr["tail"],
            "duration_ns": run.duration_ns, "events": events, "message": message,
        }
        writer.seal_outcome(outcome, dict.fromkeys(threads, "exited"), [])
        path = writer.publish()
    except BaseException:
        writer.discard()
        raise
    remember(path)
    exit_status = EXIT_TIMEOUT if status == "timeout" else shell_status(returncode)
    res = RunResult(path, status, returncode, exit_status, message or describe_status(returncode),
                    events, run.duration_ns / 1e9, run.stdout["tail"], run.stderr["tail"], seed=0)
    res.write_s = time.monotonic() - t0
    return res


def _write_events(db_path: Path, log: Path, exe: str, cut_ok: bool) -> tuple[int, list[int]]:
    """The supervisor's log into the trace's tables; (events, thread numbers)."""
    calls: dict[tuple[int, int, int], int] = {}
    rows, data = [], []
    last_ns: dict[int, int] = {}
    threads = {0: {"parent": -1, "ktid": 0, "create_seq": -1, "first": 0}}
    base = None
    seq = -1
    for seq, e in enumerate(read_log(log, cut_ok)):
        base = e.ns if base is None else base
        obj = 0
        if e.kind == ev.THREAD_CREATE:
            threads[e.aux] = {"parent": e.thread, "ktid": e.ktid, "create_seq": seq, "first": seq}
            obj = e.aux + 1
        elif e.kind in (ev.THREAD_START, ev.THREAD_EXIT):
            obj = e.thread + 1
        if e.thread == 0 and not threads[0]["ktid"]:
            threads[0]["ktid"] = e.ktid
        call = calls.setdefault((e.kind, obj, e.aux), len(calls) + 1)
        rows.append((seq, e.thread, call, e.result, e.ns - last_ns.get(e.thread, base)))
        last_ns[e.thread] = e.ns
        if e.data:
            data.append((seq, e.data))
    counts: dict[int, int] = {}
    for _, tid, *_ in rows:
        counts[tid] = counts.get(tid, 0) + 1
    db = sqlite3.connect(db_path)
    try:
        with db:
            db.executemany("INSERT INTO calls(call, kind, obj, aux, site) VALUES (?,?,?,?,0)",
                           [(c, k, o, a) for (k, o, a), c in calls.items()])
            db.executemany("INSERT INTO event_rows(seq, tid, call, result, dts) VALUES (?,?,?,?,?)", rows)
            db.executemany("INSERT INTO data(seq, bytes) VALUES (?,?)", data)
            db.executemany("INSERT INTO objects(obj, kind, address, first_seq) VALUES (?,?,?,?)",
                           [(n + 1, THREAD_OBJKIND, t["ktid"], max(t["first"], 0)) for n, t in threads.items()])
            db.executemany("INSERT INTO threads(tid, parent, ktid, create_seq, obj, events, process) "
                           "VALUES (?,?,?,?,?,?,0)",
                           [(n, t["parent"], t["ktid"], t["create_seq"], n + 1, counts.get(n, 0))
                            for n, t in threads.items()])
            db.execute("INSERT INTO processes(process, parent, pid, create_seq, thread, exe, execs, status) "
                       "VALUES (0, -1, ?, -1, 0, ?, 0, NULL)", (threads[0]["ktid"], exe))
            db.executescript(schema.REBUILD_MARKS)
    finally:
        db.close()
    return seq + 1, sorted(threads)
