#!/usr/bin/env python3
"""make bench, isolated mode (issue 27): pthreads vs detrun --isolated, side
by side.

Rules: medians of --runs runs, native and isolated alternating (the machine
is shared); the isolated figure is the program under libdetiso.so as detrun
--isolated starts it (LD_PRELOAD, LD_BIND_NOW), without detrun's Python
start-up, which `detrun` adds once (~0.3 s). Each isolated output is
checked against the native one where the program's output is
deterministic (pigz), and counted over the runs otherwise. A report, not a
test: targets are printed, never asserted. The Phoenix kernels of the
DTHREADS paper are not fetched and built yet.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / "build" / "libdetiso.so"
SAMPLES = ROOT / "samples" / "bin"


def run(cmd: list[str], isolated: bool) -> tuple[float, bytes]:
    env = dict(os.environ)
    if isolated:
        env.update(LD_PRELOAD=str(LIB), LD_BIND_NOW="1")
    t = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, env=env, timeout=600)
    return time.monotonic() - t, r.stdout


def row(name: str, cmd: list[str], runs: int, same_output: bool) -> None:
    nat: list[float] = []
    iso: list[float] = []
    outs: set[str] = set()
    native_out = b""
    for _ in range(runs):
        w, native_out = run(cmd, False)
        nat.append(w)
        w, out = run(cmd, True)
        iso.append(w)
        outs.add(hashlib.sha256(out).hexdigest())
    n, i = statistics.median(nat), statistics.median(iso)
    check = ("output identical to native" if outs == {hashlib.sha256(native_out).hexdigest()} else
             "OUTPUT DIFFERS from native") if same_output else f"{len(outs)} distinct output(s) over {runs} runs"
    print(f"  {name:40} pthreads {n:.3f} s | isolated {i:.3f} s ({i / n:.2f}x) | {check}", flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--quick", action="store_true")
    ns = p.parse_args()
    if not LIB.exists():
        sys.exit(f"bench: {LIB} is missing: run make")
    scale = 10 if ns.quick else 1
    print("## isolated mode (issue 27: <= 1.5x pthreads on the Phoenix kernels at 2 threads; racy samples "
          "identical over 100 runs)")
    with tempfile.TemporaryDirectory(prefix="det-bench-iso-") as d:
        big = Path(d) / "big.txt"
        with open(big, "wb") as f:
            block = hashlib.sha256(b"det").hexdigest().encode() * 32
            for k in range(20_000_000 // scale // len(block)):
                f.write(block[k % 64:] + block[:k % 64] + b"\n")
        pigz = shutil.which("pigz")
        if not pigz:
            sys.exit("bench: pigz is not installed (tools/setup.sh installs it)")
        row(f"pigz -p 2 -c on {big.stat().st_size // 1_000_000} MB", [pigz, "-p", "2", "-c", str(big)],
            ns.runs, True)
    for name, args in (("racy_counter", ["20000"]), ("flag_handoff", ["2000"]), ("bank_check_then_act", ["50"]),
                       ("dining_philosophers", ["5", "500"]), ("pingpong_ok", ["2000"])):
        row(f"{name} {' '.join(args)}", [str(SAMPLES / name), *args], ns.runs, False)
    print("# the samples synchronize every few instructions: each pthreads call is a round (all threads "
          "stop, commit in turn, drop their pages), ~100 us here")
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
