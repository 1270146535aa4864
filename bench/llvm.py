#!/usr/bin/env python3
"""make bench, det-cc and logical time: ratios measured side by side.

Rules: as bench/run.py - medians of at least RUNS runs, the programs compared
alternating so that machine noise hits them alike; targets are printed next
to the figures and never asserted. The compute kernels (bench/cc/loop.c) are
built here with clang-22 (the baseline) and with det-cc, so that the only
difference is det's pass.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
BENCH = ROOT / "bench" / "bin"
DETCC = ROOT / "llvm" / "det-cc"
CLANG = Path("/usr/lib/llvm-22/bin/clang")


def timed(cmd: list[str]) -> float:
    a = time.monotonic()
    r = subprocess.run(cmd, capture_output=True)
    b = time.monotonic()
    if r.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed ({r.returncode}): {r.stderr.decode()[-500:]}")
    return b - a


def side_by_side(cmds: dict[str, list[str]], runs: int) -> dict[str, float]:
    """Median wall time of each command, the commands alternating."""
    times: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(runs):
        for k, c in cmds.items():
            times[k].append(timed(c))
    return {k: statistics.median(v) for k, v in times.items()}


def show(what: str, med: dict[str, float], base: str = "native") -> None:
    n = med[base]
    parts = [f"{base} {n:.3f} s"] + [f"{k} {v:.3f} s ({v / n:.2f}x)" for k, v in med.items() if k != base]
    print(f"  {what}: " + " | ".join(parts), flush=True)


def build(tmp: Path) -> dict[str, Path]:
    src = ROOT / "bench" / "cc" / "loop.c"
    out = {"clang": tmp / "loop", "ticks": tmp / "loop-ticks", "memory": tmp / "loop-memory"}
    for exe, cmd in ((out["clang"], [str(CLANG)]), (out["ticks"], [str(DETCC)]),
                     (out["memory"], [str(DETCC), "--sched-points=memory"])):
        r = subprocess.run([*cmd, "-O2", "-o", str(exe), str(src)], capture_output=True)
        if r.returncode != 0:
            sys.exit(f"bench: cannot build {exe.name}: {r.stderr.decode()[-500:]}")
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="smaller inputs (a smoke run, not for reporting)")
    ns = p.parse_args()
    scale = 10 if ns.quick else 1
    for tool in (CLANG, DETCC, BIN / "detrun", BIN / "detrec"):
        if not tool.exists():
            sys.exit(f"bench: {tool} is missing (make; tools/setup.sh installs clang-22)")
    with tempfile.TemporaryDirectory(prefix="det-bench-llvm-") as d:
        tmp = Path(d)
        trace = str(tmp / "t.db")
        print(f"## logical time vs native ({ns.runs} runs each; detrun: no trace, detrec --logical: with one)")
        progs = [("mutex_counter", [str(BENCH / "mutex_counter"), str(1000000 // scale)]),
                 ("cond_pingpong", [str(BENCH / "cond_pingpong"), str(100000 // scale)])]
        big = tmp / "big.txt"
        with open(big, "wb") as f:
            line = b"".join(b"%d lorem ipsum dolor sit amet %x\n" % (i, i * 2654435761 % 65521) for i in range(4000))
            for _ in range(max(1, 360 // scale)):
                f.write(line)
        pigz = shutil.which("pigz")
        if not pigz:
            sys.exit("bench: pigz is not installed (tools/setup.sh installs it)")
        progs.append((f"pigz -p 2 on {big.stat().st_size // 1_000_000} MB", [pigz, "-p", "2", "-c", str(big)]))
        for what, cmd in progs:
            med = side_by_side({"native": cmd, "detrun": [str(BIN / "detrun"), *cmd],
                                "detrec --logical": [str(BIN / "detrec"), "-q", "--logical", "-o", trace, "--", *cmd]},
                               ns.runs)
            show(what, med)
        print("# target: logical <= 1.15x (Kendo reports 16%, Parrot 12.7%)")

        exes = build(tmp)
        print(f"## det-cc ticks on compute-bound loops, run natively ({ns.runs} runs each; baseline: clang-22 -O2)")
        kernels = [("hash", str(200 // scale)), ("matmul", str(800 // max(1, scale // 3))),
                   ("fib", str(38 - scale // 3))]
        for k, n in kernels:
            med = side_by_side({"clang": [str(exes["clang"]), k, n], "det-cc": [str(exes["ticks"]), k, n],
                                "det-cc --sched-points=memory": [str(exes["memory"]), k, n]}, ns.runs)
            show(f"{k} {n}", med, base="clang")
        print("# target: det-cc ticks <= 1.3x")

        print(f"## strict recording of the det-cc builds ({ns.runs} runs each; baseline: clang-22 -O2, natively)")
        for k, n in kernels:
            med = side_by_side({
                "clang": [str(exes["clang"]), k, n],
                "strict, ticks": [str(BIN / "detrec"), "-q", "--strict", "-o", trace, "--", str(exes["ticks"]), k, n],
                "strict, memory points": [str(BIN / "detrec"), "-q", "--strict", "-o", trace, "--",
                                          str(exes["memory"]), k, n],
            }, ns.runs)
            show(f"{k} {n}", med, base="clang")
        print("# report only (strict mode's target is <= 3x)")
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
