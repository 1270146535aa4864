#!/usr/bin/env python3
"""Does `detdiff --bisect PASS FAIL` answer? For every buggy program: a
failing and a passing strict recording, then one bisection, with its
answer, replays and time.

    .venv/bin/python bench/bisect_search.py [--suite samples|tests|public|all] [--only NAME ...]
                                     [--json FILE] [--detdiff PATH] [--traces DIR]

--detdiff: another build's detdiff, e.g. /work/main/.venv/bin/detdiff.
--traces DIR: keep each program's recordings in DIR/NAME/ and reuse them
when they are there, so that two detdiffs are measured on the same traces.

Rules: the programs are every sample of samples/manifest.json whose "bug"
is not null (with its test_args), the buggy programs of tests/programs
listed in TEST_PROGRAMS (each fails on some strict schedules, passes on
others), and the public suite of bench/public_suite.py (fetched and built
there, never committed). Recordings use the documented workflow: `detrec
--strict --until-fail`, and where strict scheduling alone never fails,
`detrec --chaos --strict --runs`; deadlocks get --timeout 2. The passing
trace is the one --until-fail kept, else the first strict run (plain, then
chaos seeds) that exits 0. An answer is a confirmed pair (B with it moved
passes, replayed) or a "no single pair" verdict that names the closest
candidate; anything else is inconclusive. A program with no failing or no
passing recording is reported as such and counts in neither. This is a
report, not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
SAMPLES = ROOT / "samples"
MAX_REPLAYS = 10
HANG_TIMEOUT = "2"

# tests/programs whose failure a strict schedule decides, with their
# arguments. (two_locks is not one: its race is between two plain accesses
# in one turn, which only a det-cc build's memory points can split.)
TEST_PROGRAMS: list[tuple[str, tuple[str, ...]]] = [
    ("ticket_check", ()),
    ("publish_late", ()),
    ("either_first", ()),
    ("late_check", ()),
    ("split_increment", ()),
    ("first_last", ()),
    ("strict_crash_after", ()),
    ("strict_crash_after", ("abort",)),
]


@dataclass
class Program:
    name: str
    exe: Path
    args: tuple[str, ...]
    hang: bool
    suite: str


@dataclass
class Row:
    name: str
    suite: str
    answer: str          # pair | none | inconclusive | no-fail | no-pass | error
    replays: int | None
    seconds: float | None
    message: str


def programs(suite: str) -> list[Program]:
    out: list[Program] = []
    if suite in ("samples", "all"):
        manifest = json.loads((SAMPLES / "manifest.json").read_text())
        for s in manifest["samples"]:
            if s.get("bug") is None:
                continue
            exe = SAMPLES / "bin" / s.get("binary", s["name"])
            out.append(Program(s["name"], exe, tuple(s.get("test_args") or s["args"]), bool(s.get("hang")), "samples"))
    if suite in ("tests", "all"):
        for name, args in TEST_PROGRAMS:
            label = name + ("" if not args else " " + " ".join(args))
            out.append(Program(label, ROOT / "tests" / "bin" / name, args, False, "tests"))
    if suite in ("public", "all"):
        sys.path.insert(0, str(ROOT / "bench"))
        import public_suite
        _, built = public_suite.build()
        for prog, binary in built:
            out.append(Program(prog.name, binary, prog.argv, prog.hang, "public"))
    return out


def detrec(*args: object, timeout: float = 300) -> subprocess.CompletedProcess:
    """detrec; a hunt that runs out of time counts as finding nothing."""
    cmd = [str(BIN / "detrec"), *map(str, args)]
    try:
        return subprocess.run(cmd, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, 124, b"", b"time limit")


def record(p: Program, tmp: Path) -> tuple[Path | None, Path | None]:
    fail, passing = tmp / "fail.db", tmp / "fail-pass.db"
    hang = ["--timeout", HANG_TIMEOUT] if p.hang else ["--timeout", "30"]
    detrec("-q", "--strict", *hang, "--until-fail", "100", "-o", fail, "--", p.exe, *p.args)
    if not fail.exists():
        detrec("-q", "--chaos", "--strict", *hang, "--seed", "1", "--runs", "100", "-o", fail, "--", p.exe, *p.args)
    if not fail.exists():
        return None, None
    if not passing.exists():
        for i in range(30):
            chaos = ["--chaos", "--seed", str(i)] if i else []
            r = detrec("-q", "--strict", *chaos, *hang, "-o", passing, "--", p.exe, *p.args)
            if r.returncode == 0:
                break
            passing.unlink(missing_ok=True)
    return fail, passing if passing.exists() else None


def answer_of(r: dict) -> str:
    if r.get("found") and r.get("confirmed"):
        return "pair"
    if r.get("answer") == "none":
        return "none"
    return "inconclusive"


def bisect(p: Program, detdiff: Path, traces: Path | None) -> Row:
    with tempfile.TemporaryDirectory(prefix="det-bench-bisect-") as d:
        tmp = Path(d)
        if traces is not None:
            tmp = traces / p.name.replace(" ", "_")
            tmp.mkdir(parents=True, exist_ok=True)
        fail, passing = tmp / "fail.db", tmp / "fail-pass.db"
        if not (fail.exists() and passing.exists()):
            fail, passing = record(p, tmp)
        if fail is None:
            return Row(p.name, p.suite, "no-fail", None, None, "no failing strict recording")
        if passing is None:
            return Row(p.name, p.suite, "no-pass", None, None, "no passing strict recording")
        t0 = time.monotonic()
        r = subprocess.run([str(detdiff), "--bisect", "--json", passing, fail], capture_output=True,
                           timeout=900)
        secs = time.monotonic() - t0
        if r.returncode not in (0, 1):
            err = r.stderr.decode(errors="replace").strip().splitlines()
            return Row(p.name, p.suite, "error", None, secs, err[-1] if err else f"exit {r.returncode}")
        j = json.loads(r.stdout)
        return Row(p.name, p.suite, answer_of(j), j["replays"], secs, j["message"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", default="all", choices=["samples", "tests", "public", "all"])
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--traces", type=Path, help="keep (and reuse) the recordings in this directory")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--detdiff", type=Path, default=BIN / "detdiff", help="the detdiff to measure")
    a = ap.parse_args()
    rows: list[Row] = []
    for p in programs(a.suite):
        if a.only and p.name not in a.only and p.name.split()[0] not in a.only:
            continue
        row = bisect(p, a.detdiff, a.traces)
        rows.append(row)
        secs = "-" if row.seconds is None else f"{row.seconds:.1f}s"
        print(f"{row.suite:8} {row.name:28} {row.answer:13} replays={row.replays} {secs:>7}  "
              f"{row.message[:110]}", flush=True)
    judged = [r for r in rows if r.answer in ("pair", "none", "inconclusive")]
    ok = [r for r in judged if r.answer in ("pair", "none") and (r.replays or 0) <= MAX_REPLAYS]
    print(f"answered within {MAX_REPLAYS} replays: {len(ok)}/{len(judged)} "
          f"(pairs {sum(r.answer == 'pair' for r in ok)}, no single pair {sum(r.answer == 'none' for r in ok)}); "
          f"not recorded: {len(rows) - len(judged)}")
    if a.json:
        a.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
