"""A supervisor's log of a run (detptrace's, det.ptracelog; libdetiso.so's,
det.isolog) into an ordinary trace's tables: events, calls, data, objects,
threads, the process.

Rules: the events come in the trace's order (seq = their place); a thread's
number is the log's, T0 the first; a thread's own object is its number + 1
(THREAD_CREATE's aux names the new thread, a join's the joined one); any
other object is named by its address in the log (det.isolog's records) and
numbered after the threads' in the order it first appears; site 0 (no
return addresses are logged); modules only when the log came with them.
"""

from __future__ import annotations

import datetime
import os
import signal
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from det import __version__, machine, schema
from det import events as ev
from det.launch import EXIT_TIMEOUT, describe_status, shell_status
from det.ptracelog import LogEvent
from det.seal import remember
from det.trace import TraceWriter
from det.trust import sha256_recorded

from .engine import Options, RunResult

THREAD_OBJKIND = 1  # det.events' THREAD object kind
OBJKIND_NUMBER = {o.name: o.number for o in ev.OBJKINDS}
JOINS = frozenset({ev.THREAD_JOIN, ev.THREAD_TRYJOIN, ev.THREAD_TIMEDJOIN})


def run_meta(mode: str, exe: str, argv: list[str], env: dict[str, str], cwd: str, opts: Options,
             **more: Any) -> dict[str, Any]:
    """The trace's meta for a run of `mode` started now."""
    return {
        "format_version": schema.FORMAT_VERSION,
        "det_version": __version__,
        "mode": mode,
        "argv": argv,
        "env": env,
        "cwd": cwd,
        "binary": exe,
        "binary_sha256": sha256_recorded(exe),
        "start_time": datetime.datetime.fromtimestamp(time.time(), datetime.UTC).isoformat(),
        "start_unix_ns": time.time_ns(),
        "host": os.uname().nodename,
        "kernel": os.uname().release,
        **machine.describe(),
        "timeout": opts.timeout,
        "stdout": opts.outputs[0],
        "stderr": opts.outputs[1],
        **more,
    }


def finish(writer: TraceWriter, meta: dict[str, Any], run: Any, exe: str, log: Iterable[LogEvent],
           stdin: IO[bytes] | None = None, modules: list[tuple[str, int]] = ()) -> RunResult:
    """The run's trace, written and published: `run` says how it ended
    (det.ptracelog.Supervised, for --ptrace and --isolated runs: how,
    what, outputs, duration), `log` is its events in the trace's order."""
    t0 = time.monotonic()
    events, threads = write_events(writer.path, log, exe, modules)
    if run.how == "exited":
        status, returncode, message = "exited", int(run.what), ""
    elif run.how == "signaled":
        status, returncode, message = "signaled", -int(run.what), ""
    else:  # timeout: the program was killed
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
    writer.seal_outcome(outcome, dict.fromkeys(threads, "exited"), [], stdin)
    path = writer.publish()
    remember(path)
    exit_status = EXIT_TIMEOUT if status == "timeout" else shell_status(returncode)
    res = RunResult(path, status, returncode, exit_status, message or describe_status(returncode),
                    events, run.duration_ns / 1e9, run.stdout["tail"], run.stderr["tail"], seed=0)
    res.write_s = time.monotonic() - t0
    return res


def write_events(db_path: Path, log: Iterable[LogEvent], exe: str,
                 modules: list[tuple[str, int]] = ()) -> tuple[int, list[int]]:
    """The log's events (and the modules: (path, load bias)) into the
    trace's tables; (events, thread numbers)."""
    log = list(log)
    threads = {0: {"parent": -1, "ktid": 0, "create_seq": -1, "first": 0}}
    for seq, e in enumerate(log):
        if e.kind == ev.THREAD_CREATE:
            threads[e.aux] = {"parent": e.thread, "ktid": 0, "create_seq": seq, "first": seq}
    for e in log:  # (a thread's kernel id: from its first event it wrote itself)
        if e.kind not in (ev.THREAD_CREATE, ev.THREAD_START) and e.thread in threads and not threads[e.thread]["ktid"]:
            threads[e.thread]["ktid"] = e.ktid
    objects: dict[tuple[int, int], int] = {}  # (object kind, address) -> obj
    first: dict[int, tuple[int, int, int]] = {}  # obj -> (kind, address, first seq)
    next_obj = max(threads) + 2
    calls: dict[tuple[int, int, int], int] = {}
    rows, data = [], []
    last_ns: dict[int, int] = {}
    base = log[0].ns if log else 0
    for seq, e in enumerate(log):
        obj = 0
        if e.kind == ev.THREAD_CREATE or e.kind in JOINS:
            obj = e.aux + 1
        elif e.kind in (ev.THREAD_START, ev.THREAD_EXIT):
            obj = e.thread + 1
        elif e.obj:
            okind = OBJKIND_NUMBER[ev.BY_NUMBER[e.kind].objkind]
            obj = objects.get((okind, e.obj), 0)
            if not obj:
                obj = objects[(okind, e.obj)] = next_obj
                first[obj] = (okind, e.obj, seq)
                next_obj += 1
        call = calls.setdefault((e.kind, obj, e.aux), len(calls) + 1)
        rows.append((seq, e.thread, call, e.result, max(0, e.ns - last_ns.get(e.thread, base))))
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
                           [(n + 1, THREAD_OBJKIND, t["ktid"], max(t["first"], 0)) for n, t in threads.items()]
                           + [(o, k, a, s) for o, (k, a, s) in first.items()])
            db.executemany("INSERT INTO threads(tid, parent, ktid, create_seq, obj, events, process) "
                           "VALUES (?,?,?,?,?,?,0)",
                           [(n, t["parent"], t["ktid"], t["create_seq"], n + 1, counts.get(n, 0))
                            for n, t in threads.items()])
            db.executemany("INSERT INTO modules(path, base) VALUES (?,?)", modules)
            db.execute("INSERT INTO processes(process, parent, pid, create_seq, thread, exe, execs, status) "
                       "VALUES (0, -1, ?, -1, 0, ?, 0, NULL)", (threads[0]["ktid"], exe))
            db.executescript(schema.REBUILD_MARKS)
    finally:
        db.close()
    return len(log), sorted(threads)
