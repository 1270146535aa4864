#!/usr/bin/env python3
"""How many runs until each buggy program shows its bug: natively, under
detrec's plain reruns (--until-fail --mode plain), under detrec --chaos
(threads in parallel, seeded delays), under strict PCT at depth 1, 2 and 3
(detrec --chaos --strict --depth D), under --until-fail's default escalation
(parallel chaos, then PCT: det.hunt.escalate), and under strict PCT with
det-cc's memory-level scheduling points; and whether every failure found
replays (3 replays of the trace, each must match the recording).

    .venv/bin/python bench/hunt.py [--runs N] [--cap S] [--seed S] [-j J] [--only NAME ...]
                                   [--suite samples|public|all] [--modes MODE ...] [--json FILE]

Rules: the programs are every sample of samples/manifest.json whose "bug"
is not null (with its test_args), and the public suite of bench/public_suite.py
(downloaded and built here, never committed). A run fails when it exits
non-zero; for deadlocks ("hang") every run gets --timeout 2 and a timeout is
the bug. Native runs are plain runs, one after the other. Each det cell is
one `detrec --chaos ... --seed S --runs N` (its report "failure after N
run(s)" gives the count), then 3 `detreplay` of the failing trace. Every
cell stops after N runs or --cap seconds ("stopped after X runs (time cap)";
detrec is interrupted with SIGINT and says how many runs it did). The
target, each bug found within 100 runs by some det mode with its failure
replayed 3/3, is printed per program and never asserted: this is a report,
not a test.

The det-cc column rebuilds each program from its source with
`det-cc --sched-points=memory` (PCT's steps are then its memory points, the
same scheduler as for events); a sample the manifest runs as NAME.mem runs
as samples/bin/NAME (det-cc without memory points) in the other columns.
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
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
SAMPLES = ROOT / "samples"
DETCC = ROOT / "llvm" / "det-cc"
HANG_TIMEOUT = 2.0
RUN_TIMEOUT = 60.0  # a run of a program that should end by itself
TARGET_RUNS = 100
MODES = ["plain", "chaos", "pct1", "pct2", "pct3", "escalate", "detcc"]
HEAD = {"native": "native", "plain": "plain", "chaos": "--chaos", "pct1": "PCT d=1", "pct2": "PCT d=2",
        "pct3": "PCT d=3", "escalate": "escalate", "detcc": "det-cc PCT d=3"}


@dataclass
class Cell:
    runs: int | None          # runs until the first failure (that run included); None: none failed
    tried: int | None         # runs done (None: unknown)
    capped: bool              # stopped by the time cap
    seconds: float
    note: str = ""
    replays: str = ""         # "3/3": replays of the failing trace that matched it

    def text(self, cap_runs: int) -> str:
        rep = f" ({self.replays})" if self.replays else ""
        if self.runs is not None:
            return f"{self.runs}{rep}"
        if self.note.startswith("n/a"):
            return self.note
        if self.tried is None:
            return "stopped (time cap; runs unknown)" if self.capped else "? (see the note)"
        if self.capped:
            return f"none in {self.tried} (time cap)"
        return f">{cap_runs}" if self.tried >= cap_runs else f"none in {self.tried}"

    def found(self) -> bool:
        return self.runs is not None and self.runs <= TARGET_RUNS


@dataclass
class Row:
    name: str
    suite: str
    argv: list[str]
    hang: bool
    native: Cell
    det: dict[str, Cell] = field(default_factory=dict)

    def target(self) -> str:
        met = [HEAD[m] for m, c in self.det.items() if c.found() and c.replays == "3/3"]
        found_unreplayed = [HEAD[m] for m, c in self.det.items() if c.found() and c.replays != "3/3"]
        if met:
            return "met (" + ", ".join(met) + ")"
        if found_unreplayed:
            return "found, replay failed (" + ", ".join(found_unreplayed) + ")"
        return "NOT met"


def native(argv: list[str], hang: bool, runs: int, cap: float) -> Cell:
    t0 = time.monotonic()
    for i in range(1, runs + 1):
        left = cap - (time.monotonic() - t0)
        if left <= 0:
            return Cell(None, i - 1, True, time.monotonic() - t0)
        limit = min(left, HANG_TIMEOUT if hang else RUN_TIMEOUT)
        try:
            r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=limit)
        except subprocess.TimeoutExpired:
            if hang and limit >= HANG_TIMEOUT:
                return Cell(i, i, False, time.monotonic() - t0, "timeout")
            return Cell(None, i - 1, True, time.monotonic() - t0, "a run outlived the cap")
        if r.returncode != 0:
            return Cell(i, i, False, time.monotonic() - t0, f"exit {r.returncode}")
    return Cell(None, runs, False, time.monotonic() - t0)


_FOUND = re.compile(r"(?:failure|hung run) after (\d+) run")
_NONE = re.compile(r"no failure in (\d+) run")
_STOPPED = re.compile(r"interrupted after (\d+) run")


def replay(trace: Path, times: int = 3) -> str:
    """How many of `times` replays of the trace matched its recording."""
    ok = 0
    for _ in range(times):
        r = subprocess.run([str(BIN / "detreplay"), str(trace)], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300)
        ok += b"outcome matches the recording" in r.stderr
    return f"{ok}/{times}"


def det_cell(argv: list[str], hang: bool, runs: int, cap: float, seed: int, mode: str, jobs: int,
             work: Path) -> Cell:
    out = work / f"{Path(argv[0]).name}-{mode}.db"
    if mode == "plain":  # detrec --until-fail's reruns, no chaos
        flags = ["--mode", "plain", "--until-fail", str(runs)]
    elif mode == "escalate":  # detrec --until-fail's default: parallel chaos, then PCT
        flags = ["--mode", "escalate", "--seed", str(seed), "--until-fail", str(runs)]
    else:
        flags = (["--chaos"] if mode == "chaos" else ["--chaos", "--strict", "--depth", mode[-1]]) + [
            "--seed", str(seed), "--runs", str(runs)]
    cmd = [str(BIN / "detrec"), *flags, "-j", str(jobs), "-o", str(out),
           "--timeout", f"{HANG_TIMEOUT if hang else RUN_TIMEOUT:g}", "--", *argv]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    capped = False
    try:
        _, err = p.communicate(timeout=cap)
    except subprocess.TimeoutExpired:
        # detrec stops on SIGINT and says how many runs it did
        capped = True
        err = None
        for _ in range(30):
            p.send_signal(signal.SIGINT)
            try:
                _, err = p.communicate(timeout=2)
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
        return Cell(int(m.group(1)), int(m.group(1)), False, seconds, replays=replay(out))
    m = _STOPPED.search(text) if capped else _NONE.search(text)
    if m:
        return Cell(None, int(m.group(1)), capped, seconds)
    last = text.strip().splitlines()[-1] if text.strip() else f"exit {p.returncode}"
    return Cell(None, None, capped, seconds, f"detrec: {last}")


def detcc_build(source: Path | None, work: Path) -> tuple[Path | None, str]:
    """The program built with det-cc's memory-level scheduling points, or
    why not."""
    if not DETCC.exists():
        return None, "n/a (llvm/det-cc missing: run make)"
    if source is None:
        return None, "n/a (no source)"
    out = work / (source.stem + "-detcc")
    compiler = DETCC.with_name("det-c++") if source.suffix == ".cpp" else DETCC
    cc = [str(compiler), "--sched-points=memory", "-O2", "-g", "-pthread", "-Isamples", "-o", str(out), str(source)]
    r = subprocess.run(cc, capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 0:
        return None, f"n/a (det-cc failed: {r.stderr.strip().splitlines()[-1:]})"
    return out, ""


def table(rows: list[Row], cap_runs: int) -> list[str]:
    head = ["program", HEAD["native"], *[HEAD[m] for m in MODES], f"found within {TARGET_RUNS}, replayed 3/3"]
    body = [[f"{r.suite}/{r.name}" + (" (hang)" if r.hang else ""), r.native.text(cap_runs),
             *[r.det[m].text(cap_runs) for m in MODES], r.target()] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    return [line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(b) for b in body]


def programs(suite: str, only: list[str] | None) -> tuple[list[tuple[str, str, list[str], bool, Path | None]], str]:
    """(name, suite, argv, hang, source) of every program to hunt, and where the public suite came from."""
    todo = []
    where = ""
    if suite in ("samples", "all"):
        manifest = json.loads((SAMPLES / "manifest.json").read_text())["samples"]
        for s in manifest:
            if s["bug"] is None:
                continue
            binary = s.get("binary", s["name"]).removesuffix(".mem")  # (the det-cc column is the .mem build)
            src = next((p for p in (SAMPLES / f"{binary}.c", SAMPLES / f"{binary}.cpp") if p.exists()), None)
            todo.append((s["name"], "samples", [str(SAMPLES / "bin" / binary), *s["test_args"]], bool(s["hang"]), src))
    if suite in ("public", "all"):
        sys.path.insert(0, str(Path(__file__).parent))
        import public_suite

        where, built = public_suite.build()
        for prog, binary in built:
            src = public_suite.cache_dir() / binary.parent.parent.name / "src" / Path(prog.member).name
            todo.append((prog.name, "public", [str(binary), *prog.argv], prog.hang, src))
    if only:
        todo = [t for t in todo if t[0] in only]
    return todo, where


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=TARGET_RUNS, help=f"runs per cell at most (default {TARGET_RUNS})")
    p.add_argument("--cap", type=float, default=300.0, help="seconds per cell at most (default 300)")
    p.add_argument("--seed", type=int, default=1, help="first chaos seed (default 1)")
    p.add_argument("-j", "--jobs", type=int, default=1, help="detrec -j for the det cells (default 1)")
    p.add_argument("--only", nargs="+", metavar="NAME", help="these programs only")
    p.add_argument("--suite", choices=["samples", "public", "all"], default="all")
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--modes", nargs="+", choices=MODES, default=MODES, help="these det columns only (default: all)")
    ns = p.parse_args()
    MODES[:] = [m for m in MODES if m in ns.modes]
    if ns.runs < 1 or ns.cap <= 0 or ns.seed < 1 or ns.jobs < 1:
        p.error("--runs, --cap, --seed and -j must be positive")
    try:
        todo, where = programs(ns.suite, ns.only)
    except (RuntimeError, subprocess.CalledProcessError) as e:
        sys.exit(f"hunt: the public suite: {e}")
    if ns.only and len(todo) != len(set(ns.only)):
        p.error("unknown or bug-free program in --only")
    missing = [str(x) for x in [BIN / "detrec"] + [Path(t[2][0]) for t in todo] if not x.exists()]
    if missing:
        sys.exit(f"hunt: missing {', '.join(missing)}: run `make` first")

    rows: list[Row] = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="det-bench-hunt-") as tmp:
        for name, suite, argv, hang, src in todo:
            print(f"hunt: {suite}/{name} ...", file=sys.stderr, flush=True)
            work = Path(tmp) / f"{suite}-{name}"
            work.mkdir()
            row = Row(name, suite, argv[1:], hang, native(argv, hang, ns.runs, ns.cap))
            for mode in MODES:
                if mode == "detcc":
                    binary, why = detcc_build(src, work)
                    row.det[mode] = (det_cell([str(binary), *argv[1:]], hang, ns.runs, ns.cap, ns.seed, "pct3",
                                              ns.jobs, work) if binary else Cell(None, None, False, 0.0, why))
                else:
                    row.det[mode] = det_cell(argv, hang, ns.runs, ns.cap, ns.seed, mode, ns.jobs, work)
                c = row.det[mode]
                print(f"hunt:   {HEAD[mode]}: {c.text(ns.runs)} ({c.seconds:.0f} s)", file=sys.stderr, flush=True)
                if c.note.startswith("detrec:"):
                    print(f"hunt: {name}: {c.note}", file=sys.stderr)
            rows.append(row)
    total = time.monotonic() - t0

    print(f"Runs until the bug first showed (at most {ns.runs} runs or {ns.cap:g} s per cell; seeds from {ns.seed}; "
          f"deadlocks: --timeout {HANG_TIMEOUT:g}, a timeout is the bug; (3/3): replays of the failing trace that "
          f"matched it):")
    if where:
        print(f"Public suite: {where}, built by bench/public_suite.py.")
    print()
    for line in table(rows, ns.runs):
        print(line)
    print()
    for suite in ("samples", "public"):
        part = [r for r in rows if r.suite == suite]
        if part:
            met = sum(1 for r in part if r.target().startswith("met"))
            print(f"{suite}: {met} of {len(part)} bugs found within {TARGET_RUNS} runs by some det mode and "
                  f"replayed 3/3 ({100 * met / len(part):.0f}%); natively {sum(r.native.found() for r in part)}; "
                  + ", ".join(f"{HEAD[m]} {sum(r.det[m].found() for r in part)}" for m in MODES) + ".")
    met = sum(1 for r in rows if r.target().startswith("met"))
    print(f"All: {met} of {len(rows)} ({100 * met / max(len(rows), 1):.0f}%; target 90%). Wall time {total:.0f} s.")
    if ns.json:
        Path(ns.json).write_text(json.dumps({"runs": ns.runs, "cap_s": ns.cap, "seed": ns.seed, "jobs": ns.jobs,
                                             "public_suite": where, "wall_s": total,
                                             "rows": [asdict(r) for r in rows]}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
