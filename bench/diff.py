#!/usr/bin/env python3
"""detdiff on two 1M-event traces: how long a user waits for the answer.

Rules: the traces are real recordings (two runs of bench/bin/mutex_counter
250000: about a million events each, interleaved differently); detdiff runs
as users run it, the installed command with its output discarded, and every
figure is a median of --runs runs (identical traces, and the two different
ones). The target is printed next to the figures and never asserted: this
is a report, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
PROGRAM = ROOT / "bench" / "bin" / "mutex_counter"
TARGET_S = 2.0


def record(out: Path, iters: int) -> dict[str, float]:
    cmd = [str(BIN / "detrec"), "-q", "-o", str(out), "--", str(PROGRAM), str(iters)]
    r = subprocess.run(cmd, capture_output=True)
    if r.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed ({r.returncode}): {r.stderr.decode()[-500:]}")
    db = sqlite3.connect(out)
    events = db.execute("SELECT events FROM outcome").fetchone()[0]
    db.close()
    return {"events": events, "bytes": out.stat().st_size}


def timed_detdiff(a: Path, b: Path, extra: list[str]) -> tuple[float, int]:
    cmd = [str(BIN / "detdiff"), *extra, str(a), str(b)]
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    t1 = time.monotonic()
    if r.returncode not in (0, 1):
        sys.exit(f"bench: {' '.join(cmd)} failed ({r.returncode}): {r.stderr.decode()[-500:]}")
    return t1 - t0, r.returncode


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--iters", type=int, default=250000, help="mutex_counter's argument (4 events per iteration)")
    p.add_argument("--json", help="also write the results here")
    ns = p.parse_args()
    if ns.runs < 1 or ns.iters < 1:
        p.error("--runs and --iters must be positive")
    for exe in (BIN / "detrec", BIN / "detdiff", PROGRAM):
        if not exe.exists():
            sys.exit(f"bench: {exe} is missing: run `make`")
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="det-bench-diff-") as d:
        a, b = Path(d) / "a.db", Path(d) / "b.db"
        sa, sb = record(a, ns.iters), record(b, ns.iters)
        print(f"# detdiff of two recordings of mutex_counter {ns.iters}: {sa['events']} and {sb['events']} events "
              f"({sa['bytes'] / 1e6:.1f} and {sb['bytes'] / 1e6:.1f} MB); median of {ns.runs} runs", flush=True)
        load = os.getloadavg()[0]
        for label, x, y, extra in (("different", a, b, []), ("different --json", a, b, ["--json"]),
                                   ("identical", a, a, [])):
            times, status = [], 0
            for _ in range(ns.runs):
                t, status = timed_detdiff(x, y, extra)
                times.append(t)
            med = statistics.median(times)
            results[label] = {"median_s": med, "min_s": min(times), "max_s": max(times), "exit": status,
                              "events": [sa["events"], sb["events"]]}
            print(f"  {label:<17} {med:.3f} s (min {min(times):.3f}, max {max(times):.3f}; exit {status}); "
                  f"{(sa['events'] + sb['events']) / med / 1e6:.2f} M events/s", flush=True)
        results["loadavg_1min"] = load
    print(f"# target: <= {TARGET_S:g} s for two 1M-event traces (load average when starting: {load:.2f})")
    if ns.json:
        Path(ns.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
