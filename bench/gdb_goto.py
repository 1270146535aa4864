#!/usr/bin/env python3
"""make bench: how long `det goto` takes in gdb on a 1M-event trace.

Records bench/bin/mutex_counter 250000 (2 threads, ~1M events), starts
`detreplay --gdb` on it and times, inside gdb, `det goto 100000` (forward
from the first event) and `det goto 50000` (backward), then the same pair
again, RUNS times: once with det's snapshots (backward: resume the nearest
one and replay from there) and once without (`det snapshots off`: a restart
of the program under gdb and a replay to 50,000). Next to them: the program's native run (whole, and pro-rated to
50,000 events), detreplay's replay without gdb, and what gdb alone takes to
(re)start a program to main, the floor under any backward goto.

Rules: medians of RUNS; figures are printed with the target next to them
and never asserted: this is a report, not a test.
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
PROG = ROOT / "bench" / "bin" / "mutex_counter"

TIMER = """
import time, gdb
PRE
def timed(label, cmd):
    a = time.monotonic()
    gdb.execute(cmd, to_string=True)
    print(f"@time {label} {time.monotonic() - a:.6f}", flush=True)
    print(f"@at {int(gdb.parse_and_eval('$det_event'))}", flush=True)
for i in range(RUNS):
    timed("forward", "det goto FAR")
    timed("backward", "det goto NEAR")
"""

RESTART = """
import time, gdb
gdb.execute("set confirm off")
gdb.execute("break main", to_string=True)
for i in range(RUNS):
    a = time.monotonic()
    gdb.execute("run", to_string=True)
    print(f"@time restart {time.monotonic() - a:.6f}", flush=True)
"""


def wall(cmd: list[str]) -> float:
    a = time.monotonic()
    r = subprocess.run(cmd, capture_output=True)
    b = time.monotonic()
    if r.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed ({r.returncode}): {r.stderr.decode()[-500:]}")
    return b - a


def gdb_times(cmd: list[str], script: str, tmp: Path,
              args: tuple[str, ...] | list[str] = ()) -> tuple[dict[str, list[float]], list[int]]:
    f = tmp / "timer.py"
    f.write_text(script)
    r = subprocess.run([*cmd, "-ex", f"source {f}", *args], capture_output=True, text=True, timeout=1800)
    out = r.stdout + r.stderr
    times: dict[str, list[float]] = {}
    for label, t in re.findall(r"^@time (\w+) ([\d.]+)$", out, re.M):
        times.setdefault(label, []).append(float(t))
    if not times:
        sys.exit(f"bench: gdb printed no timings:\n{out[-2000:]}")
    return times, [int(x) for x in re.findall(r"^@at (\d+)$", out, re.M)]


def record_counter(tmp: Path, iters: int) -> tuple[Path, list[int]]:
    """Record mutex_counter ITERS into tmp; the trace and its event seqs in order."""
    trace = tmp / "counter.db"
    wall([str(BIN / "detrec"), "-q", "-o", str(trace), "--", str(PROG), str(iters)])
    db = sqlite3.connect(trace)
    seqs = [s for (s,) in db.execute("SELECT seq FROM events ORDER BY seq")]
    db.close()
    return trace, seqs


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--iters", type=int, default=250000, help="mutex_counter's argument (4 events per iteration)")
    ns = p.parse_args()
    if ns.runs < 1:
        p.error("--runs must be positive")
    med = statistics.median
    with tempfile.TemporaryDirectory(prefix="det-bench-gdb-") as d:
        tmp = Path(d)
        trace, seqs = record_counter(tmp, ns.iters)
        events = len(seqs)
        far, near = min(100000, events - 1), min(50000, events // 2)
        native = med([wall([str(PROG), str(ns.iters)]) for _ in range(ns.runs)])
        replay = med([wall([str(BIN / "detreplay"), "-q", str(trace)]) for _ in range(ns.runs)])
        gdb = [str(BIN / "detreplay"), "--gdb", str(trace), "--", "-nx", "-batch"]
        timer = TIMER.replace("RUNS", str(ns.runs)).replace("FAR", str(far)).replace("NEAR", str(near))
        times, at = gdb_times(gdb, timer.replace("PRE", ""), tmp)
        reexec, at2 = gdb_times(gdb, timer.replace("PRE", 'gdb.execute("det snapshots off")'), tmp)
        if at != [far, near] * ns.runs or at2 != at:
            sys.exit(f"bench: det goto landed at {at} and {at2}, wanted {[far, near] * ns.runs}")
        plain, _ = gdb_times(["gdb", "-nx", "-batch"], RESTART.replace("RUNS", str(ns.runs)), tmp,
                             ["--args", str(PROG), "1"])
    fwd, back, restart = med(times["forward"]), med(times["backward"]), med(plain["restart"])
    fwd0, back0 = med(reexec["forward"]), med(reexec["backward"])
    to_near = native * near / events
    print(f"# det goto in gdb: mutex_counter {ns.iters} ({events} events), medians of {ns.runs}")
    print(f"  det goto {far} (forward from event 0 or {near}): {fwd:.3f} s with snapshots, {fwd0:.3f} s without")
    print(f"  det goto {near} (backward): {back:.3f} s from a snapshot (target <= 0.5 s); "
          f"{back0:.3f} s without (restart + replay to it)")
    print(f"  native run: {native:.4f} s whole, {to_near * 1000:.2f} ms pro-rated to {near} events; "
          f"target for the backward goto: <= {2 * to_near * 1000:.2f} ms (native x2) -> "
          f"{back / to_near:.0f}x native")
    print(f"  for scale: detreplay (no gdb) replays all {events} events in {replay:.3f} s; "
          f"gdb alone restarts a program to main in {restart:.3f} s")
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
