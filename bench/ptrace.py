#!/usr/bin/env python3
"""make bench: what detrec --ptrace (build/detptrace) costs per intercepted
system call, recording and replaying (issue 26's target: <= 5 us a call).

For each kind of call in bench/bin/ptrace_calls (getppid: an input the
supervisor makes, one stop; clock: clock_gettime with the vDSO hidden;
write: runs again in replay, two stops), the supervisor runs the loop with
N calls and with 0, and the cost per call is the difference over N; the
native loop's per-call time is printed beside it, and the floor: the same
getppid loop under a tracer that only waits and continues (the kernel's
seccomp stop and two context switches, on this machine, now: a loaded
machine's figures are all higher).

Rules: medians of RUNS runs of each, alternating; the supervisor is run
directly (not through detrec: Python's start-up and the trace's writing are
not per-call costs); a run that fails is an error; figures are printed,
never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROG = ROOT / "bench" / "bin" / "ptrace_calls"
SUPERVISOR = ROOT / "build" / "detptrace"
TARGET_US = 5.0


def timed(cmd: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def supervised(mode: str, d: Path, kind: str, n: int) -> list[str]:
    head = [str(SUPERVISOR), mode, str(d / f"{kind}-{n}.log"), str(d / "result")]
    return head + (["1"] if mode == "record" else []) + ["--", str(PROG), "ptrace_calls", kind, str(n)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=100000)
    p.add_argument("--runs", type=int, default=5)
    ns = p.parse_args()
    for f in (PROG, SUPERVISOR):
        if not f.exists():
            sys.exit(f"bench/ptrace.py: {f} is not built (make)")
    print(f"detrec --ptrace: us per intercepted call ({ns.calls} calls, medians of {ns.runs}; target <= {TARGET_US:g})")
    with tempfile.TemporaryDirectory(prefix="det-bench-ptrace-") as tmp:
        d = Path(tmp)
        for kind in ("getppid", "clock", "write"):
            times: dict[str, list[float]] = {k: [] for k in ("native", "native0", "record", "record0",
                                                             "replay", "replay0")}
            for _ in range(ns.runs):
                times["native"].append(timed([str(PROG), kind, str(ns.calls)]))
                times["native0"].append(timed([str(PROG), kind, "0"]))
                for n, suffix in ((ns.calls, ""), (0, "0")):
                    times["record" + suffix].append(timed(supervised("record", d, kind, n)))
                    if (d / "result").read_text().split()[0] != "exited":
                        sys.exit(f"bench/ptrace.py: recording {kind}: {(d / 'result').read_text().strip()}")
                for n, suffix in ((ns.calls, ""), (0, "0")):
                    (d / "events.log").unlink(missing_ok=True)
                    (d / f"{kind}-{n}.log").replace(d / "events.log")
                    cmd = supervised("replay", d, kind, n)
                    cmd[2] = str(d / "events.log")
                    times["replay" + suffix].append(timed(cmd))
                    if (d / "result").read_text().split()[0] != "exited":
                        sys.exit(f"bench/ptrace.py: replaying {kind}: {(d / 'result').read_text().strip()}")
            med = {k: statistics.median(v) for k, v in times.items()}

            def per_call(k: str, med: dict[str, float] = med) -> float:
                return (med[k] - med[k + "0"]) / ns.calls * 1e6
            print(f"  {kind:8s} native {per_call('native'):6.3f} us   record {per_call('record'):6.2f} us   "
                  f"replay {per_call('replay'):6.2f} us")
        floor = [timed([str(PROG), "floor", str(ns.calls)]) - timed([str(PROG), "floor", "0"]) for _ in range(ns.runs)]
        floor_us = statistics.median(floor) / ns.calls * 1e6
        print(f"  floor (a bare seccomp stop: waitpid + PTRACE_CONT) {floor_us:6.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
