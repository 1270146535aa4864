"""Hunts that escalate (det.hunt.escalate): dethunt and detrec --until-fail
try parallel chaos first, then PCT, say which found the failure, and when
none did, one line says what to try next, its det-cc command exact (run
here, it finds the bug). Seeds are fixed; the bugs are chosen by
bench/hunt.py's figures: split_reads is out of parallel chaos's reach
(>100 runs) and PCT's first runs find it; racy_counter fails under
parallel chaos at once; lost_update needs det-cc's memory points."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from conftest import BIN, detrec, query, run, sample_bin

DETHUNT = BIN / "dethunt"


def test_dethunt_escalates_to_pct_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "h"
    # PCT finds split_reads in ~30% of its runs (seeded, but the run's timing still counts): 18 PCT runs
    # miss it ~0.2% of the time (6 missed 12%)
    r = run([DETHUNT, "--runs", "24", "-j", "2", "--seed", "1", "-o", out, sample_bin("split_reads")], timeout=300)
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert "parallel chaos (6 runs), then PCT depth 3 (18 runs)" in err, err
    assert re.search(r"^dethunt: found by PCT depth 3: stage 2 of 2 ", err, re.M), err
    s = json.loads((out / "summary.json").read_text())
    assert s["found_by"] == "PCT depth 3" and s["stages"] == ["parallel chaos", "PCT depth 3"], s
    assert s["runs"] == len(s["by_seed"]) <= 24, s
    # the repeat line names the failing run's own mode
    assert re.search(r"repeat seed \d+: detrec --chaos --strict --seed \d+ --depth 3", err), err


def test_dethunt_stays_in_the_stage_that_found_it(tmp_path: Path) -> None:
    out = tmp_path / "h"
    r = run([DETHUNT, "--runs", "6", "--seed", "1", "-o", out, sample_bin("racy_counter"), "2000"], timeout=300)
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert re.search(r"^dethunt: found by parallel chaos: stage 1 of 2 ", err, re.M), err
    s = json.loads((out / "summary.json").read_text())
    assert s["stages"] == ["parallel chaos"] and s["runs"] == 6, s  # its runs left stayed in parallel chaos


def test_until_fail_escalates_to_pct(tmp_path: Path) -> None:
    trace = tmp_path / "s.db"
    r = detrec("--until-fail", "20", "--mode", "escalate", "--seed", "1", "-j", "2", "-o", trace,
               sample_bin("split_reads"))
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert re.search(r"^detrec: found by PCT depth 3: stage 2 of 2 \(parallel chaos \(5 runs\), then PCT depth 3 "
                     r"\(15 runs\)\)$", err, re.M), err
    assert query(trace, "SELECT value FROM meta WHERE key = 'mode'")[0][0] == "strict"
    m = re.search(r"^detrec: (\d+) run\(s\) in", err, re.M)
    assert m and int(m.group(1)) <= 20, err


def test_nothing_found_says_the_det_cc_command_that_finds_it(tmp_path: Path) -> None:
    if not shutil.which("clang-22") and not Path("/usr/lib/llvm-22/bin/clang").exists():
        raise AssertionError("clang-22 is needed for det-cc (tools/setup.sh installs it)")
    prog = tmp_path / "lu"
    shutil.copy(sample_bin("lost_update"), prog)
    r = run([DETHUNT, "--runs", "4", "--seed", "1", "-o", tmp_path / "h", "./lu"], cwd=tmp_path, timeout=300)
    err = r.stderr.decode()
    assert r.returncode == 0, err
    lines = [ln for ln in err.splitlines() if "no failure in" in ln]
    assert len(lines) == 1, err  # one line
    m = re.search(r"no failure in 4 run\(s\) \(parallel chaos \(1 run\), then PCT depth 3 \(3 runs\)\); next: .*"
                  r"memory points: (.+?) && dethunt (--runs 4 \./lu\.mem); or more runs: dethunt --runs 16 \./lu$",
                  lines[0])
    assert m, lines[0]
    build = subprocess.run(shlex.split(m.group(1)), cwd=tmp_path, capture_output=True, timeout=300)
    assert build.returncode == 0, build.stderr.decode()
    h = run([DETHUNT, "--seed", "1", "-o", tmp_path / "mem", *shlex.split(m.group(2))], cwd=tmp_path, timeout=300)
    assert h.returncode == 1 and b"BUG: lost updates" in h.stderr, h.stderr.decode()
