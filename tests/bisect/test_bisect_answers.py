"""detdiff --bisect answers within its budget of 10 replays: it names the
pair whose swap flips the outcome (checked against the program's source:
which function, which lock, which threads), or says in one line why no
single pair does, and never prints a "critical pair" heading without one.

Rules: the programs are tests/programs/ticket_check.c, publish_late.c
(noise before the race, so that a passing and a failing run order many
events differently) and either_first.c (a failure only two swaps together
undo); recordings use the documented workflow (detrec --strict
--until-fail, else --chaos --strict --runs); the expected functions and
locks come from the programs' header comments.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import BIN, ROOT, detrec, outcome, run

DETDIFF = BIN / "detdiff"
PROGRAMS = ROOT / "tests" / "bin"
BUDGET = 10


def record(tmp: Path, name: str) -> tuple[Path, Path]:
    exe = PROGRAMS / name
    fail, passing = tmp / f"{name}.db", tmp / f"{name}-pass.db"
    r = detrec("-q", "--strict", "--until-fail", "200", "-o", fail, "--", exe)
    if not fail.exists():
        r = detrec("-q", "--chaos", "--strict", "--seed", "1", "--runs", "500", "-o", fail, "--", exe)
    assert fail.exists(), f"{name}: no failing strict run: {r.stderr.decode()}"
    if not passing.exists():
        record_pass(passing, exe)
    return passing, fail


def record_pass(passing: Path, exe: Path) -> None:
    """A passing strict run: plain, then chaos seeds."""
    for seed in range(60):
        chaos = ["--chaos", "--seed", str(seed)] if seed else []
        r = detrec("-q", "--strict", *chaos, "-o", passing, "--", exe)
        if r.returncode != 0:
            passing.unlink(missing_ok=True)
        else:
            return
    pytest.fail(f"{exe.name}: no passing strict run in 60 (plain, chaos seeds 1..59)")


def bisect(passing: Path, fail: Path) -> tuple[dict, str]:
    if not DETDIFF.exists():
        pytest.fail(f"{DETDIFF} is missing: run `make`", pytrace=False)
    j = run([DETDIFF, "--bisect", "--json", passing, fail], timeout=300)
    assert j.returncode in (0, 1), j.stderr.decode()
    t = run([DETDIFF, "--bisect", passing, fail], timeout=300)
    assert t.returncode == j.returncode, t.stderr.decode()
    return json.loads(j.stdout), t.stdout.decode()


def test_ticket_check_names_one_sellers_check_and_the_others_sale(tmp_path: Path) -> None:
    r, text = bisect(*record(tmp_path, "ticket_check"))
    assert r["found"], r["message"]
    assert r["replays"] <= BUDGET, (r["replays"], r["message"])
    first, second = r["first"], r["second"]
    assert first["name"] == second["name"] == "tickets_lock"
    assert first["tid"] != second["tid"] and {first["tid"], second["tid"]} <= {1, 2}
    # B runs one seller's check first; the other's sale, moved before it, flips the run.
    assert first["function"] == "check_ticket" and second["function"] == "sell_ticket", (first, second)
    assert r["move"]["verdict"] in ("another path", "other outcome")
    assert r["answer"] == "pair"
    # The text run is a second bisection: its count may differ, not its budget.
    m = re.search(r"^The critical pair \((\d+) replays?\):", text, re.M)
    assert m and int(m.group(1)) <= BUDGET, text


def test_publish_late_names_the_readers_read_and_the_publishers_write(tmp_path: Path) -> None:
    r, text = bisect(*record(tmp_path, "publish_late"))
    assert r["found"], r["message"]
    assert r["replays"] <= BUDGET, (r["replays"], r["message"])
    first, second = r["first"], r["second"]
    assert first["name"] == second["name"] == "box_lock"
    # The publisher is created first (T1), the reader second (T2).
    assert (first["function"], first["tid"]) == ("read_config", 2), first
    assert (second["function"], second["tid"]) == ("publish", 1), second
    assert re.search(r"^The critical pair \((\d+) replays?\):", text, re.M), text


def test_either_first_says_in_one_line_that_no_single_pair_flips_it(tmp_path: Path) -> None:
    """A failing run in which worker 1 signed both registers first (its BUG
    line says "(1, 1)"): one swap leaves the other register's order failing."""
    exe = PROGRAMS / "either_first"
    fail = tmp_path / "either_first.db"
    for seed in range(200):
        chaos = ["--chaos", "--seed", str(seed)] if seed else []
        detrec("-q", "--strict", *chaos, "-o", fail, "--", exe)
        if b"(1, 1)" in outcome(fail)["stdout_tail"]:
            break
    else:
        pytest.fail("either_first: no strict run (plain, chaos seeds 1..199) in which worker 1 signed both first")
    passing = tmp_path / "either_first-pass.db"
    record_pass(passing, exe)
    r, text = bisect(passing, fail)
    assert not r["found"] and r["answer"] == "none", r["message"]
    assert r["replays"] <= BUDGET
    assert "critical pair (" not in text.lower().replace("no critical pair (", ""), text
    (line,) = [ln for ln in text.splitlines() if ln.startswith("No critical pair")]
    assert "no single pair flips it" in line and "closest candidate: " in line, line
    # Why: A's order of the same events passes, so it takes more than one swap.
    assert "several reorderings together" in line, line
    assert r["closest"] and {e["name"] for e in r["closest"]} <= {"first_lock", "second_lock"}


def test_a_replay_that_ends_as_fail_did_with_other_output_still_fails() -> None:
    """detreplay's "outcome differs" with only stdout differing: the program
    exited with FAIL's status, so the swap did not flip the outcome; a
    different exit status does."""
    from det.compare.bisect import FAILS, OTHER_OUTCOME, classify

    out_only = ["replayed 18 events, but the outcome differs: stdout differs (34 bytes, recorded 34)"]
    v = classify(125, out_only, 1)
    assert v is not None and v.verdict == FAILS, v
    status = ["replayed 18 events, but the outcome differs: recorded exit 1, replay exit 0; "
              "stdout differs (3 bytes, recorded 34)"]
    v = classify(125, status, 1)
    assert v is not None and v.verdict == OTHER_OUTCOME, v
