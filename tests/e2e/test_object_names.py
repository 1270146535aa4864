"""Objects named outside gdb, as gdb names them (issue 24.5): a heap
object by the expression the program's source reaches it with, a lock
taken through the program's one-line wrapper at the wrapper's caller, and
an object used where one was destroyed (a freed queue's mutex) said so.

tests/programs/wrapped_heap_lock.c: a calloc'ed queue's mutex locked only
through `lock(&q->mut)` / `unlock(&q->mut)`; with `late`, two threads lock
it (`lock(&old->mut)`) after main destroyed it and freed the queue. Expected lines are read
from that source, never from det.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import BIN, detrec, program, query

SRC = Path(__file__).parents[1] / "programs" / "wrapped_heap_lock.c"
FILE = SRC.name


def line_of(text: str) -> int:
    """The line of SRC that is exactly `text` (stripped)."""
    return next(i for i, line in enumerate(SRC.read_text().splitlines(), 1) if line.strip() == text)


def differing_pair(tmp: Path, args: list[str], want: Callable[[dict], bool]) -> tuple[dict, Path]:
    """detdiff --json of a default recording and the first chaos recording
    whose comparison with it satisfies want; (the comparison, trace A)."""
    a = tmp / "a.db"
    r = detrec("-q", "-o", a, "--", program("wrapped_heap_lock"), *args)
    assert r.returncode == 0 and r.stdout == b"items 100\n", r.stderr.decode()
    for seed in range(1, 80):
        b = tmp / f"b{seed}.db"
        r = detrec("-q", "--chaos", "--seed", str(seed), "-o", b, "--", program("wrapped_heap_lock"), *args)
        assert r.returncode == 0, r.stderr.decode()
        d = subprocess.run([str(BIN / "detdiff"), "--json", "--limit", "0", str(a), str(b)],
                           capture_output=True, text=True, timeout=120)
        assert d.returncode in (0, 1), d.stderr
        j = json.loads(d.stdout)
        if want(j):
            return j, a
        b.unlink()
    pytest.fail("no chaos seed in 1..79 gave the wanted difference")


def test_detdiff_names_a_heap_mutex_by_expression_at_the_wrappers_caller(tmp_path: Path) -> None:
    j, _ = differing_pair(tmp_path, [], lambda j: bool(j["inversions"]))
    inv = j["inversions"][0]
    assert inv["object"]["name"] == "q->mut", inv["object"]
    lock_at, unlock_at = f"{FILE}:{line_of('lock(&q->mut);')}", f"{FILE}:{line_of('unlock(&q->mut);')}"
    assert inv["object"]["location"] == lock_at
    for e in (inv["first"], inv["second"]):
        assert (e["kind"], e["location"], e["function"], e["name"]) == ("mutex_lock", lock_at, "worker", "q->mut")
    shown = [e for part in ("before", "a_after", "b_after") for e in j["divergence"][part]
             if e["kind"].startswith("mutex_")]
    assert shown, j["divergence"]
    for e in shown:  # every lock and unlock at the caller's line, none at the wrapper's
        assert e["location"] == (lock_at if e["kind"] == "mutex_lock" else unlock_at), e
        assert e["name"] == "q->mut", e


def test_detdiff_says_a_mutex_was_destroyed_where_it_is_used(tmp_path: Path) -> None:
    def late_inverted(j: dict) -> bool:
        return any("destroyed" in (i["object"]["name"] or "") for i in j["inversions"])

    j, a = differing_pair(tmp_path, ["late"], late_inverted)
    late = next(i for i in j["inversions"] if "destroyed" in (i["object"]["name"] or ""))
    (destroyed,) = query(a, "SELECT obj FROM events WHERE kind = (SELECT kind FROM event_kinds "
                            "WHERE name = 'mutex_destroy')")[0]
    assert late["object"]["name"] == (f"old->mut; after mutex {destroyed} (q->mut) was destroyed there at "
                                      f"{FILE}:{line_of('pthread_mutex_destroy(&q->mut);')}"), late["object"]
    assert late["first"]["function"] == "late" and late["second"]["function"] == "late"
