#!/usr/bin/env python3
"""How many runs until each heisenbug sample shows its bug: natively, under
detrec --chaos (threads in parallel, seeded delays) and under detrec --chaos
--strict (one thread at a time, PCT priorities).

    .venv/bin/python bench/hunt.py [--cap S] [--runs N] [--seed S] [-j J] [--only NAME ...] [--json FILE]

Rules: every sample of samples/manifest.json whose "bug" is not null, run
with its test_args. A run fails when it exits non-zero; for "hang" samples
(deadlocks) every run gets --timeout 2 and a timeout counts as a failure.
Native runs are plain runs of samples/bin/NAME, one after the other. The
chaos cells are one `detrec --chaos [--strict] --seed S --runs N` each,
whose own report ("failure after N run(s)") gives the count; seeds S, S+1,
... make every cell repeatable. Each cell stops after N runs or after --cap
seconds, whichever comes first ("stopped after X runs (time cap)"; a chaos
cell is interrupted with SIGINT, and detrec says how many runs it did). The
target, every sample's bug within 100 chaos runs, is printed per sample and
never asserted: this is a report, not a test.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
SAMPLES = ROOT / "samples"
HANG_TIMEOUT = 2.0
TARGET_RUNS = 100


@dataclass
class Cell:
    runs: int | None          # runs until the first failure (that run included); None: none failed
    tried: int | None         # runs done (None: detrec did not say)
    capped: bool              # stopped by the time cap
    seconds: float
    note: str = ""

    def text(self, cap_runs: int) -> str:
        if self.runs is not None:
            return str(self.runs)
        if self.tried is None:
            return "stopped (time cap; runs unknown)" if self.capped else "? (see the note)"
        if self.capped:
            return f"stopped after {self.tried} runs (time cap)"
        return f">{cap_runs}" if self.tried >= cap_runs else f"none in {self.tried}"


@dataclass
class Row:
    name: str
    argv: list[str]
    hang: bool
    native: Cell
    chaos: Cell
    strict: Cell

    def target(self) -> str:
        met = [name for name, c in (("chaos", self.chaos), ("strict", self.strict))
               if c.runs is not None and c.runs <= TARGET_RUNS]
        return "met (" + ", ".join(met) + ")" if met else "NOT met"


def native(argv: list[str], hang: bool, runs: int, cap: float) -> Cell:
    t0 = time.monotonic()
    for i in range(1, runs + 1):
        left = cap - (time.monotonic() - t0)
        if left <= 0:
            return Cell(None, i - 1, True, time.monotonic() - t0)
        limit = min(left, HANG_TIMEOUT) if hang else left
        try:
            r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=limit)
        except subprocess.TimeoutExpired:
            if hang and limit >= HANG_TIMEOUT:
                return Cell(i, i, False, time.monotonic() - t0, "timeout")
            return Cell(None, i - 1, True, time.monotonic() - t0)
        if r.returncode != 0:
            return Cell(i, i, False, time.monotonic() - t0, f"exit {r.returncode}")
    return Cell(None, runs, False, time.monotonic() - t0)


_FOUND = re.compile(r"failure after (\d+) run")
_NONE = re.compile(r"no failure in (\d+) run")
_STOPPED = re.compile(r"interrupted after (\d+) run")


def chaos(argv: list[str], hang: bool, runs: int, cap: float, seed: int, strict: bool, jobs: int,
          work: Path) -> Cell:
    out = work / f"{Path(argv[0]).name}-{'strict' if strict else 'chaos'}.db"
    cmd = [str(BIN / "detrec"), "--chaos", *(["--strict"] if strict else []), "--seed", str(seed),
           "--runs", str(runs), "-j", str(jobs), "-o", str(out)]
    if hang:
        cmd += ["--timeout", f"{HANG_TIMEOUT:g}"]
    cmd += ["--", *argv]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    capped = False
    try:
        _, err = p.communicate(timeout=cap)
    except subprocess.TimeoutExpired:
        # detrec stops on SIGINT and says how many runs it did. A SIGINT that
        # arrives between two runs is not acted on (the next run starts
        # anyway), so it is repeated until detrec stops.
        capped = True
        err = None
        for _ in range(30):
            p.send_signal(signal.SIGINT)
            try:
                _, err = p.communicate(timeout=1)
                break
            except subprocess.TimeoutExpired:
                continue
        if err is None:
            p.kill()
            _, err = p.communicate()
    seconds = time.monotonic() - t0
    text = err.decode(errors="replace")
    m = _FOUND.search(text)
    if m:
        return Cell(int(m.group(1)), int(m.group(1)), False, seconds)
    m = _STOPPED.search(text) if capped else _NONE.search(text)
    if m:
        return Cell(None, int(m.group(1)), capped, seconds)
    last = text.strip().splitlines()[-1] if text.strip() else f"exit {p.returncode}"
    return Cell(None, None, capped, seconds, f"detrec: {last}")


def table(rows: list[Row], cap_runs: int) -> list[str]:
    head = ["sample", "native", "detrec --chaos", "--chaos --strict", f"bug within {TARGET_RUNS} chaos runs"]
    body = [[r.name + (" (hang)" if r.hang else ""), r.native.text(cap_runs), r.chaos.text(cap_runs),
             r.strict.text(cap_runs), r.target()] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    out = [line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(b) for b in body]
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=1000, help="runs per cell at most (default 1000)")
    p.add_argument("--cap", type=float, default=60.0, help="seconds per cell at most (default 60)")
    p.add_argument("--seed", type=int, default=1, help="first chaos seed (default 1)")
    p.add_argument("-j", "--jobs", type=int, default=1, help="detrec -j for the chaos cells (default 1)")
    p.add_argument("--only", nargs="+", metavar="NAME", help="these samples only")
    p.add_argument("--json", help="also write the results here")
    ns = p.parse_args()
    if ns.runs < 1 or ns.cap <= 0 or ns.seed < 1 or ns.jobs < 1:
        p.error("--runs, --cap, --seed and -j must be positive")
    manifest = json.loads((SAMPLES / "manifest.json").read_text())["samples"]
    todo = [s for s in manifest if s["bug"] is not None and (not ns.only or s["name"] in ns.only)]
    if ns.only and len(todo) != len(set(ns.only)):
        known = ", ".join(s["name"] for s in manifest if s["bug"] is not None)
        p.error(f"unknown or bug-free sample in --only (samples with a bug: {known})")
    missing = [str(x) for x in [BIN / "detrec"] + [SAMPLES / "bin" / s.get("binary", s["name"]) for s in todo]
               if not x.exists()]
    if missing:
        sys.exit(f"hunt: missing {', '.join(missing)}: run `make` first")

    rows: list[Row] = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="det-hunt-") as tmp:
        for s in todo:
            argv = [str(SAMPLES / "bin" / s.get("binary", s["name"])), *s["test_args"]]
            hang = bool(s["hang"])
            print(f"hunt: {s['name']} ...", file=sys.stderr, flush=True)
            work = Path(tmp) / s["name"]
            work.mkdir()
            row = Row(s["name"], s["test_args"], hang,
                      native(argv, hang, ns.runs, ns.cap),
                      chaos(argv, hang, ns.runs, ns.cap, ns.seed, False, ns.jobs, work),
                      chaos(argv, hang, ns.runs, ns.cap, ns.seed, True, ns.jobs, work))
            rows.append(row)
            for cell in (row.native, row.chaos, row.strict):
                if cell.note.startswith("detrec:"):
                    print(f"hunt: {s['name']}: {cell.note}", file=sys.stderr)
    total = time.monotonic() - t0

    print(f"Runs until the bug first showed (at most {ns.runs} runs or {ns.cap:g} s per cell; chaos seeds from "
          f"{ns.seed}; hang samples: --timeout {HANG_TIMEOUT:g}, a timeout is the bug):")
    print()
    for line in table(rows, ns.runs):
        print(line)
    met = sum(1 for r in rows if r.target().startswith("met"))
    print()
    print(f"Target (every sample's bug within {TARGET_RUNS} chaos runs, --chaos or --chaos --strict): "
          f"{met} of {len(rows)} samples.")
    per = ", ".join(f"{r.name} {sum(c.seconds for c in (r.native, r.chaos, r.strict)):.0f} s" for r in rows)
    print(f"Wall time: {total:.0f} s ({per}).")
    if ns.json:
        Path(ns.json).write_text(json.dumps({"runs": ns.runs, "cap_s": ns.cap, "seed": ns.seed, "jobs": ns.jobs,
                                             "wall_s": total, "rows": [asdict(r) for r in rows]}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
