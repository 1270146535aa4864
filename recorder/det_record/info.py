"""detrec info TRACE: what a trace holds, for a human.

Rules: reads only (never modifies a trace); works on NAME.incomplete too,
with a warning, after making it from its capture log if detrec was killed
(det.record.salvage).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys

from det import __version__, tracedir
from det.analysis import Waiter, block_report
from det.ending import ending
from det.errors import DetError
from det.names import ObjectNames
from det.symbols import Symbolizer
from det.trace import Trace, kind_name, outcome_words
from det.verdict import read_verdict

from .salvage import ensure_trace


def summary(tr: Trace) -> dict[str, object]:
    m = tr.meta
    o = tr.outcome()
    threads = tr.threads()
    events = tr.event_count()
    size = tr.path.stat().st_size
    return {
        "trace": str(tr.path),
        "complete": tr.complete,
        "program": m.get("binary"),
        "argv": m.get("argv"),
        "cwd": m.get("cwd"),
        "mode": m.get("mode"),
        "recorded": m.get("start_time"),
        "det_version": m.get("det_version"),
        "binary_sha256": m.get("binary_sha256"),
        "threads": len(threads),
        "processes": _processes(tr, threads),
        "events": events,
        "objects": tr.q1("SELECT count(*) FROM objects"),
        "kinds": {kind_name(k): n for k, n in tr.kind_counts()},
        "outcome": None if o is None else {
            k: (v.decode(errors="replace") if isinstance(v, bytes) else v) for k, v in o.items()
        },
        "packed": _packed(tr),
        "ending": _ending(tr),
        "verified": m.get("verified"),  # {"replays", "why"} when a replay checked it (det.verdict), else None
        "file_bytes": size,
        "bytes_per_event": round(size / events, 1) if events else None,
    }


def _ending(tr: Trace) -> dict[str, object]:
    """How the run ended (det.ending): which thread died of what, where."""
    e = ending(tr)
    return {"kind": e.kind, "line": e.line, "thread": e.thread, "seq": e.seq, "details": e.details,
            "cycle": e.cycle}


def _packed(tr: Trace) -> dict[str, int] | None:
    """What `detrec pack` put into the trace, or None."""
    if not tr.q1("SELECT count(*) FROM sqlite_master WHERE name = 'packed'"):
        return None
    files, size = tr.q("SELECT count(*), coalesce(sum(size), 0) FROM packed WHERE type = 'file'")[0]
    if not files:
        return None
    return {"files": files, "bytes": size, "stored_bytes": tr.q1("SELECT coalesce(sum(length(bytes)), 0) FROM blobs")}


def _processes(tr: Trace, threads: list[dict]) -> list[dict[str, object]]:
    out = []
    for p in tr.processes():
        status = p["status"]
        if status is None:
            end = None
        elif os.WIFSIGNALED(status):
            end = f"killed by signal {os.WTERMSIG(status)}"
        else:
            end = f"exit {os.WEXITSTATUS(status)}"
        out.append({
            "process": p["process"], "parent": p["parent"], "pid": p["pid"], "exe": p["exe"],
            "execs": p["execs"], "threads": sum(1 for t in threads if t.get("process", 0) == p["process"]),
            "first_thread": p["thread"], "end": end,
        })
    return out


def print_human(tr: Trace, s: dict[str, object]) -> None:
    o = s["outcome"]
    w = print
    if not s["complete"]:
        w(f"warning: {tr.path} is incomplete: the recording did not finish (detrec was killed?); "
          "it holds the events its capture log had")
    w(f"trace:      {s['trace']} ({s['file_bytes']} bytes, {s['bytes_per_event'] or '-'} bytes/event)")
    w(f"program:    {shlex.join(s['argv'] or [])}   [{s['program']}]")
    w(f"directory:  {s['cwd']}")
    w(f"recorded:   {s['recorded']} with det {s['det_version']} ({s['mode']})")
    if o:
        dur = o["duration_ns"] / 1e9
        w(f"outcome:    {outcome_words(o)}{' - ' + o['message'] if o['message'] else ''} after {dur:.3f} s")
        end = s["ending"]
        if end["kind"] != "exit" and end["line"] not in (o["message"] or ""):  # (not twice)
            w(f"ended:      {end['line']}")
            if end["kind"] not in ("deadlock", "blocked"):  # (those: "blocked when stopped" below)
                for line in end["details"]:
                    w(f"            {line}")
        w(f"output:     stdout {o['stdout_bytes']} bytes, stderr {o['stderr_bytes']} bytes")
    verdict = read_verdict(tr.meta)
    if verdict is not None:
        w(f"verified:   {'replays (checked by a replay after recording)' if verdict.replays else verdict.line()}")
    if s["packed"]:
        p = s["packed"]
        w(f"packed:     {p['files']} files, {p['bytes'] / 1e6:.1f} MB, stored in {p['stored_bytes'] / 1e6:.1f} MB "
          "(replays on another machine)")
    w(f"threads:    {s['threads']}")
    procs = s["processes"]
    if len(procs) > 1:
        w(f"processes:  {len(procs)}")
        for p in procs:
            parent = f", child of P{p['parent']}" if p["parent"] >= 0 else ""
            execs = f", {p['execs']} exec" if p["execs"] else ""
            end = f", {p['end']}" if p["end"] else ""
            w(f"  P{p['process']:<4} {p['exe'] or '?':<16} pid {p['pid']}, {p['threads']} thread(s) from "
              f"T{p['first_thread']}{parent}{execs}{end}")
    w(f"objects:    {s['objects']}")
    w(f"events:     {s['events']}")
    for name, n in list(s["kinds"].items())[:12]:
        w(f"  {n:>10}  {name}")
    blocked = tr.blocked()
    if blocked:
        sym = Symbolizer(tr.modules())
        names = ObjectNames(tr, sym)
        locs = sym.lookup([b[3] for b in blocked if b[3]])
        w("blocked when stopped:")
        for tid, kind, obj, ra in blocked:
            where = locs[ra].short() if ra in locs else "?"
            on = f" on {names.label(obj)}" if obj else ""
            w(f"  T{tid} in {kind_name(kind)}{on} at {where}")
        rep = block_report(tr, [Waiter(*b) for b in blocked], sym, names=names)
        if rep.cycle:
            w(f"wait-for:   {rep.summary}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="detrec info", description="Show what a det trace holds.")
    tracedir.trace_argument(p, "trace", nargs="?", metavar="TRACE",
                   help="a trace path, or a name listed by `detrec ls` (default: the latest)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--version", action="version", version=f"%(prog)s (det) {__version__}")
    return p


def main(argv: list[str]) -> int:
    ns = build_parser().parse_args(argv)
    try:
        with Trace(ensure_trace(tracedir.resolve(ns.trace)) if ns.trace else tracedir.latest()) as tr:
            s = summary(tr)
            if ns.json:
                json.dump(s, sys.stdout, indent=2)
                print()
            else:
                print_human(tr, s)
    except DetError as e:
        print(f"detrec info: {e}", file=sys.stderr)
        return e.status
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
