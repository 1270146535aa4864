#!/usr/bin/env python3
"""make bench: det-vs-native ratios, measured side by side.

Rules: every figure is a median of at least RUNS runs, native and det runs
alternating so that machine noise hits both alike; ratios, not absolute
times, are what to compare across machines. Targets are printed next to the
figures and never asserted: this is a report, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
BENCH = ROOT / "bench" / "bin"


REPORT = Path(tempfile.gettempdir()) / f"det-bench-report-{os.getpid()}"


def timed(cmd: list[str]) -> tuple[float, str]:
    """Wall time of cmd, and what the program wrote to $BENCH_REPORT."""
    REPORT.unlink(missing_ok=True)
    a = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, env=dict(os.environ, BENCH_REPORT=str(REPORT)))
    b = time.monotonic()
    if r.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed ({r.returncode}): {r.stderr.decode()[-500:]}")
    return b - a, REPORT.read_text() if REPORT.exists() else ""


def trace_stats(path: Path) -> dict[str, float]:
    db = sqlite3.connect(path)
    events = db.execute("SELECT events FROM outcome").fetchone()[0]
    meta = dict(db.execute("SELECT key, value FROM meta"))
    db.close()
    return {"events": events, "bytes": path.stat().st_size, "ingest": float(meta.get("ingest_events_per_s", 0))}


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def bench_program(name: str, args: list[str], runs: int, tmp: Path, record_opts: tuple[str, ...] = (),
                  prog: list[str] | None = None, cwd: Path | None = None) -> dict[str, object]:
    prog = prog or [str(BENCH / name), *args]
    trace = tmp / f"{name}.db"
    native, rec, rep, rel = [], [], [], []
    loop_native, loop_rec = [], []
    for _ in range(runs):
        t, out = timed(prog)
        native.append(t)
        if m := re.search(r"ns_per_pair ([\d.]+)", out):
            loop_native.append(float(m[1]))
        t, out = timed([str(BIN / "detrec"), "-q", *record_opts, "-o", str(trace), "--", *prog])
        rec.append(t)
        if m := re.search(r"ns_per_pair ([\d.]+)", out):
            loop_rec.append(float(m[1]))
        rep.append(timed([str(BIN / "detreplay"), "-q", str(trace)])[0])
        rel.append(timed([str(BIN / "detreplay"), "-q", "--relaxed", str(trace)])[0])
    st = trace_stats(trace)
    n = median(native)
    rec_s = median(rec)
    res: dict[str, object] = {
        "program": " ".join([name, *args]),
        "native_s": n,
        "record_s": median(rec),
        "replay_s": median(rep),
        "relaxed_s": median(rel),
        "record_x": median(rec) / n,
        "replay_x": median(rep) / n,
        "relaxed_x": median(rel) / n,
        "events": st["events"],
        "bytes_per_event": st["bytes"] / max(st["events"], 1),
        "ingest_events_per_s": st["ingest"],
        "trace_mb_per_s": st["bytes"] / 1e6 / rec_s,
        "added_ns_per_event": (median(rec) - n) / max(st["events"], 1) * 1e9,
    }
    if loop_native and loop_rec:
        # the loop's own clock: 2 events (lock, unlock) per pair
        res["loop_added_ns_per_event"] = (median(loop_rec) - median(loop_native)) / 2
    return res


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--quick", action="store_true", help="smaller inputs (a smoke run, not for reporting)")
    ns = p.parse_args()
    if ns.runs < 1:
        p.error("--runs must be positive")
    scale = 10 if ns.quick else 1
    results = []

    def report(r: dict[str, object], what: str, per_call: bool = False) -> None:
        r["what"] = what
        results.append(r)
        print(f"  native {r['native_s']:.3f} s | record {r['record_s']:.3f} s ({r['record_x']:.2f}x) | "
              f"replay {r['replay_s']:.3f} s ({r['replay_x']:.2f}x) | relaxed {r['relaxed_s']:.3f} s "
              f"({r['relaxed_x']:.2f}x)")
        line = (f"  {r['events']} events, {r['bytes_per_event']:.1f} bytes/event, trace "
                f"{r['trace_mb_per_s']:.2f} MB/s of run, ingest {r['ingest_events_per_s'] / 1e6:.2f} M events/s, "
                f"{r['added_ns_per_event']:.0f} ns added per {'call' if per_call else 'event'} end to end")
        if "loop_added_ns_per_event" in r:
            line += f", {r['loop_added_ns_per_event']:.1f} ns added per event inside the loop"
        print(line, flush=True)

    with tempfile.TemporaryDirectory(prefix="det-bench-") as d:
        tmp = Path(d)
        print("## synchronization (issue: core)")
        for name, args, what in [
            ("mutex_counter", [str(1000000 // scale)], "2 threads x 1M mutex increments (green-threads benchmark 1)"),
            ("cond_pingpong", [str(100000 // scale)],
             "2 threads x 100k condvar ping-pongs (green-threads benchmark 2)"),
            ("uncontended", [str(5000000 // scale)], "uncontended lock/unlock loop"),
        ]:
            print(f"# {what}: {name} {' '.join(args)} ({ns.runs} runs each)", flush=True)
            report(bench_program(name, args, ns.runs, tmp), what)
        print("# targets: record <= 1.5x, <= 30 ns added per uncontended event, ordered replay <= 5x, "
              "relaxed replay <= 2x, <= 16 bytes/event, ingest >= 1M events/s")

        print("## inputs and real programs (issue: inputs)")
        big = tmp / "big.txt"
        rng = random.Random(7)
        words = ["".join(rng.choice("abcdefghij") for _ in range(rng.randint(2, 9))) for _ in range(3000)]
        with open(big, "w") as f:
            size = 0
            while size < 50_000_000 // scale:
                line = " ".join(rng.choice(words) for _ in range(12)) + "\n"
                f.write(line)
                size += len(line)
        for tool, args in (("pigz", ["-p", "2", "-c"]), ("pbzip2", ["-p2", "-c"])):
            exe = shutil.which(tool)
            if not exe:
                sys.exit(f"bench: {tool} is not installed (tools/setup.sh installs it)")
            what = f"{tool} {' '.join(args)} on {big.stat().st_size // 1_000_000} MB"
            print(f"# {what} ({ns.runs} runs each)", flush=True)
            report(bench_program(tool, [], ns.runs, tmp, prog=[exe, *args, str(big)]), what)
        print("# targets: record <= 1.05x, replay <= 1.2x (the Popcorn replication thesis: 0.89% for pbzip2)")
        for mode, n, what in (("clock", 1000000 // scale, "1M clock_gettime calls"),
                              ("pipe", 100000 // scale, "100k one-byte pipe reads")):
            print(f"# {what} ({ns.runs} runs each)", flush=True)
            report(bench_program("syscalls", [mode, str(n)], ns.runs, tmp), what, per_call=True)
        print("# target: <= 100 ns added per recorded call (Hermit's ptrace design pays ~37 us); "
              "rr reports 0.08-19 MB/s of trace")

        print("## strict mode (issue: schedules)")
        for name, args in (("mutex_counter", [str(1000000 // scale)]), ("cond_pingpong", [str(100000 // scale)])):
            what = f"--strict {name} {' '.join(args)}"
            print(f"# {what} ({ns.runs} runs each)", flush=True)
            report(bench_program(name, args, ns.runs, tmp, record_opts=("--strict",)), what)
        print("# target: strict record <= 3x")
    subprocess.run([sys.executable, "bench/llvm.py", f"--runs={ns.runs}"] + (["--quick"] if ns.quick else []))
    subprocess.run([sys.executable, "bench/diff.py", f"--runs={min(ns.runs, 3)}"])
    subprocess.run([sys.executable, "bench/tui.py", f"--runs={min(ns.runs, 3)}"])
    subprocess.run([sys.executable, "bench/gdb_goto.py", f"--runs={ns.runs}", f"--iters={250000 // scale}"])
    subprocess.run([sys.executable, "bench/gdb_reverse.py", f"--runs={min(ns.runs, 3)}", f"--iters={250000 // scale}"])
    if ns.json:
        Path(ns.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
