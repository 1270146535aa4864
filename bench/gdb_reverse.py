#!/usr/bin/env python3
"""make bench: what going back costs in gdb on a 1M-event trace.

Records bench/bin/mutex_counter 250000 (2 threads, ~1M events), starts
`detreplay --gdb` at event AT (90% of the trace) and times, inside gdb:
  - `det goto AT` from 1000 events later (backward: a restart and a replay
    to AT): one re-execution, the unit every reverse command pays per run;
  - `det last-write counter` (written by every iteration: found in the
    first, nearest window);
  - `det last-write iters` (written once, by main before any thread:
    every window misses, the last one replays from the program's start);
  - `det reverse-continue` with `watch counter`;
  - `det reverse-step` (the line before the worker's mutex call).
Each from event AT again (a `det goto AT` between them, not timed), RUNS
times; once with det's snapshots (each re-execution resumes the nearest
snapshot) and once with `det snapshots off` (each restarts the program).
Next to them: the program's native run, for scale.

Rules: medians of RUNS; the landing places are checked (a wrong answer is
an error, not a figure); figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from gdb_goto import BIN, PROG, ROOT, record_counter, wall  # bench/ is the script's directory

TIMER = """
import time, gdb
PRE
def timed(label, cmd, before="det goto AT"):
    gdb.execute(before, to_string=True)
    a = time.monotonic()
    out = gdb.execute(cmd, to_string=True)
    t = time.monotonic() - a
    runs = re.search(r"\\((\\d+) re-executions from ([^,]+), (\\d+) hits logged", out)
    print(f"@time {label} {t:.6f}", flush=True)
    print(f"@runs {label} {runs.group(1) if runs else '?'} {runs.group(3) if runs else '?'}", flush=True)
    print(f"@out {label} " + out.replace(chr(10), " | "), flush=True)
import re
gdb.execute("watch counter", to_string=True)
gdb.execute("disable 1", to_string=True)
for i in range(RUNS):
    timed("goto", "det goto AT", before="det goto AT_PLUS")
    timed("lastwrite_hot", "det last-write counter")
    timed("lastwrite_once", "det last-write iters")
    gdb.execute("enable 1", to_string=True)
    timed("reverse_continue", "det reverse-continue")
    gdb.execute("disable 1", to_string=True)
    timed("reverse_step", "det reverse-step")
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--iters", type=int, default=250000, help="mutex_counter's argument (4 events per iteration)")
    ns = p.parse_args()
    if ns.runs < 1:
        p.error("--runs must be positive")
    med = statistics.median
    with tempfile.TemporaryDirectory(prefix="det-bench-reverse-") as d:
        tmp = Path(d)
        trace, seqs = record_counter(tmp, ns.iters)
        events = len(seqs)
        at = seqs[int(len(seqs) * 0.9)]
        native = med([wall([str(PROG), str(ns.iters)]) for _ in range(ns.runs)])
        gdb = [str(BIN / "detreplay"), "--gdb", "-g", str(at), str(trace), "--", "-nx", "-batch"]
        plus = seqs[min(len(seqs) - 1, int(len(seqs) * 0.9) + 1000)]
        timer = TIMER.replace("RUNS", str(ns.runs)).replace("AT_PLUS", str(plus)).replace("AT", str(at))
        for how, pre in (("from det's snapshots", ""), ("by re-execution from the program's start (det snapshots off)",
                                                       'gdb.execute("det snapshots off")')):
            script = tmp / "timer.py"
            script.write_text(timer.replace("PRE", pre))
            r = subprocess.run([*gdb, "-ex", f"source {script}"], capture_output=True, text=True, timeout=3600)
            report(r.stdout + r.stderr, how, ns, events, at, native)
    return 0


def report(out: str, how: str, ns: argparse.Namespace, events: int, at: int, native: float) -> None:
    med = statistics.median
    times: dict[str, list[float]] = {}
    for label, t in re.findall(r"^@time (\w+) ([\d.]+)$", out, re.M):
        times.setdefault(label, []).append(float(t))
    said = dict(re.findall(r"^@out (\w+) (.*)$", out, re.M))
    want = {"goto": f"event {at} of", "lastwrite_hot": "the last write to counter before",
            "lastwrite_once": "the last write to iters before", "reverse_continue": "Watchpoint 1 (counter)",
            "reverse_step": "back at work at"}
    for k, text in want.items():
        if len(times.get(k, [])) != ns.runs or text not in said.get(k, ""):
            sys.exit(f"bench: {k}: wanted {text!r}, gdb said: {said.get(k)!r}\n{out[-3000:]}")
    runs = dict((k, (a, b)) for k, a, b in re.findall(r"^@runs (\w+) (\S+) (\S+)$", out, re.M))
    print(f"# going back in gdb {how}: mutex_counter {ns.iters} ({events} events), from event {at}, "
          f"medians of {ns.runs}")
    print(f"  native run: {native:.3f} s (whole program)")
    unit = med(times["goto"])
    print(f"  one re-execution (det goto {at} backward: a resume or restart and a replay to it): {unit:.3f} s")
    for k, label in (("lastwrite_hot", "det last-write counter (written every iteration)"),
                     ("lastwrite_once", "det last-write iters (written once, at the start)"),
                     ("reverse_continue", "det reverse-continue to `watch counter`"),
                     ("reverse_step", "det reverse-step")):
        t = med(times[k])
        n, hits = runs.get(k, ("?", "?"))
        print(f"  {label}: {t:.3f} s ({n} re-executions, {hits} hits logged) = {t / unit:.1f}x one re-execution")


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
