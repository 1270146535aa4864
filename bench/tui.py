#!/usr/bin/env python3
"""dettui on a 1M-event trace: how long until it is on the screen, and how
long each key takes while scrolling and zooming.

Rules: the trace is a real recording (bench/bin/mutex_counter 250000, about
a million events, as bench/diff.py records it). Each run is a fresh
process (Python, Textual and dettui imported as a user's `dettui TRACE`
does) running the real app headless (Textual's App.run_test at 160x45: the
same widgets, layout and rendering, without a terminal's I/O). Times are
CLOCK_MONOTONIC, from before the process is started: "first screen" when
the header, the event list and the details are drawn, "timeline" when the
whole run's schedule is drawn too; with each, the CPU time the process had
used (user + system: what the machine's load does not change). A key's
time is from the key press until the screen is redrawn (the details pane
too, after its short pause), median over many presses, next to a key bound
to nothing (what the harness costs by itself); a held key is 20 presses
sent at once, as a terminal's key repeat does, divided by 20. Medians of
--runs runs. The targets are printed next to the figures and never
asserted.

--diff opens `dettui A B` instead, on two such recordings: "first screen"
as above, "compared" when det.compare.diff's result is on the screen (the
keys are not timed there).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OPEN_TARGET_S = 2.0
KEY_TARGET_MS = 100.0
REPEAT_MS = 33.0      # a terminal's key repeat: about 30 a second
SIZE = (160, 45)
# (label, widget to focus, keys pressed in turn, presses, held: sent at once)
KEYS = [
    ("no-op key (harness)", "events", ["z"], 20, False),
    ("list: down", "events", ["down"], 30, False),
    ("list: down, held", "events", ["down"], 20, True),
    ("list: page down", "events", ["pagedown"], 30, False),
    ("list: page down, held", "events", ["pagedown"], 20, True),
    ("list: end / home", "events", ["end", "home"], 10, False),
    ("timeline: zoom in / out", "timeline", ["plus", "minus"], 10, False),
    ("timeline: page later", "timeline", ["shift+right"], 20, False),
]


def cpu() -> float:
    """CPU seconds this process has used (every thread, user and system)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def child(traces: list[str], t0: float) -> None:
    """One run: print {"first": s, "timeline": s, "keys": {label: median ms}} as JSON."""
    from det.tui.app import DetTui

    async def go() -> dict[str, object]:
        app = DetTui(traces)
        out: dict[str, object] = {}
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            out["first"] = time.monotonic() - t0
            out["first_cpu"] = cpu()
            if len(traces) == 2:  # dettui A B: until the comparison is shown
                while getattr(app.screen, "result", None) is None:
                    await pilot.pause(0.005)
                await pilot.pause()
                out["timeline"] = time.monotonic() - t0
                out["timeline_cpu"] = cpu()
                out["keys"] = {}
                out["events"] = app.screen.a.count
                return out
            while not getattr(app.screen, "lanes_loaded", False):
                await pilot.pause(0.005)
            await pilot.pause()
            out["timeline"] = time.monotonic() - t0
            out["timeline_cpu"] = cpu()
            screen = app.screen
            await pilot.pause(0.5)
            keys: dict[str, float] = {}
            for label, widget, seq, presses, held in KEYS:
                getattr(screen, widget).focus()
                await pilot.pause(0.3)
                c0 = cpu()
                if held:
                    a = time.monotonic()
                    await pilot.press(*(seq * presses))
                    await pilot.pause()
                    keys[label] = (time.monotonic() - a) / presses * 1000
                else:
                    times = []
                    for i in range(presses):
                        k = seq[i % len(seq)]
                        a = time.monotonic()
                        await pilot.press(k)
                        await pilot.pause()
                        times.append(time.monotonic() - a)
                    keys[label] = statistics.median(times) * 1000
                keys[label + " cpu"] = (cpu() - c0) / presses * 1000
            out["keys"] = keys
            out["events"] = screen.model.count
        return out

    print(json.dumps(asyncio.run(go())))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--iters", type=int, default=250000, help="mutex_counter's argument (4 events per iteration)")
    p.add_argument("--trace", help="use this trace instead of recording one")
    p.add_argument("--diff", action="store_true", help="time `dettui A B` on two recordings instead")
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--child", nargs="+", metavar="TRACE T0", help=argparse.SUPPRESS)
    ns = p.parse_args()
    if ns.child:
        child(ns.child[:-1], float(ns.child[-1]))
        return 0
    if ns.runs < 1:
        p.error("--runs must be positive")
    sys.path.insert(0, str(ROOT / "bench"))
    from diff import PROGRAM, record  # the same recording as detdiff's benchmark

    with tempfile.TemporaryDirectory(prefix="det-bench-tui-") as d:
        trace = Path(ns.trace) if ns.trace else Path(d) / "big.db"
        if not ns.trace:
            if not PROGRAM.exists():
                sys.exit(f"bench: {PROGRAM} is missing: run `make`")
            st = record(trace, ns.iters)
            print(f"# dettui on a recording of mutex_counter {ns.iters}: {st['events']} events "
                  f"({st['bytes'] / 1e6:.1f} MB); median of {ns.runs} runs, {SIZE[0]}x{SIZE[1]}", flush=True)
        traces = [str(trace)]
        if ns.diff:
            traces.append(str(Path(d) / "other.db"))
            record(Path(traces[1]), ns.iters)
            print("# dettui A B: two recordings, A and B", flush=True)
        runs = []
        for _ in range(ns.runs):
            t0 = time.monotonic()
            r = subprocess.run([sys.executable, __file__, "--child", *traces, repr(t0)], capture_output=True,
                               text=True, timeout=300)
            if r.returncode != 0:
                sys.exit(f"bench: dettui failed: {r.stderr[-800:]}")
            runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    first = statistics.median(r["first"] for r in runs)
    lanes = statistics.median(r["timeline"] for r in runs)
    cpu_first = statistics.median(r["first_cpu"] for r in runs)
    cpu_lanes = statistics.median(r["timeline_cpu"] for r in runs)
    # The machine's load changes wall times a lot on 2 shared cores; the CPU time the process used does not.
    print(f"  open, first screen     {first:.3f} s (min {min(r['first'] for r in runs):.3f}, "
          f"max {max(r['first'] for r in runs):.3f}); CPU {cpu_first:.3f} s")
    second = "compared" if ns.diff else "timeline drawn"
    print(f"  open, {second:<15} {lanes:.3f} s (min {min(r['timeline'] for r in runs):.3f}, "
          f"max {max(r['timeline'] for r in runs):.3f}); CPU {cpu_lanes:.3f} s; target <= {OPEN_TARGET_S:g} s")
    print(f"  (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    results: dict[str, object] = {"first_s": first, "timeline_s": lanes, "first_cpu_s": cpu_first,
                                  "timeline_cpu_s": cpu_lanes, "events": runs[0]["events"], "keys": {}}
    base = statistics.median(r["keys"][KEYS[0][0]] for r in runs) if not ns.diff else 0.0
    for label, *_ in KEYS if not ns.diff else []:
        ms = statistics.median(r["keys"][label] for r in runs)
        cpu_ms = statistics.median(r["keys"][label + " cpu"] for r in runs)
        results["keys"][label] = {"ms": ms, "cpu_ms": cpu_ms}
        extra = "" if label == KEYS[0][0] else f"  ({ms - base:+.1f} ms over the no-op key)"
        print(f"  key: {label:<24} {ms:6.1f} ms, CPU {cpu_ms:5.1f} ms{extra}")
    print(f"# targets: open <= {OPEN_TARGET_S:g} s; a key answered <= {KEY_TARGET_MS:g} ms; a held key's CPU "
          f"within a key repeat ({REPEAT_MS:g} ms)")
    if ns.json:
        Path(ns.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
