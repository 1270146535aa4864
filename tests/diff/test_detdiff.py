"""detdiff on real recordings: identical runs diff empty, a passing and a
failing run of a heisenbug name the inversion and the outcome, traces of
different programs and bad files are refused in one line.

Rules: every expectation comes from the traces themselves: a plain-Python
oracle (slow, obvious, reading the tables with SQL) recomputes what the
engine reports, and the tests compare the two. The only program made here
is tests/diff/forced_order.c, compiled into the test's temporary directory.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import BIN, ROOT, detrec, outcome, program, query, reseal, run, sample_bin
from det import events as ev
from det import schema
from det.compare.cli import use_color
from det.compare.diff import compare

DETDIFF = BIN / "detdiff"
MUTEX = next(o.number for o in ev.OBJKINDS if o.name == "MUTEX")
BARRIER_DEPART = next(e.number for e in ev.EVENTS if e.name == "BARRIER_DEPART")
# Inputs whose results differ in every run; a barrier_depart's serial flag.
VARYING = {e.number for e in ev.EVENTS if e.name in (
    "CLOCK_GETTIME", "GETTIMEOFDAY", "TIME", "CLOCK", "GETPID", "GETPPID", "GETTID", "RDTSC")}

TOP_KEYS = {"a", "b", "identical", "schedule_identical", "outcome_identical", "divergence", "threads",
            "thread_count", "inversions", "inversion_count", "one_side", "one_side_events", "results",
            "result_count", "outcome", "notes", "held"}
TRACE_KEYS = {"path", "argv", "binary", "binary_sha256", "complete", "events", "threads", "objects", "outcome"}
EVENT_KEYS = {"side", "position", "seq", "tid", "idx", "kind", "obj", "object", "name", "result", "address",
              "location", "function"}
DIVERGENCE_KEYS = {"position", "reason", "a", "b", "before", "a_after", "b_after"}
THREAD_KEYS = {"tid", "index", "a", "b", "a_events", "b_events", "a_end", "b_end"}
INVERSION_KEYS = {"object", "first", "second", "b_first", "b_second", "positions", "events"}
OBJECT_KEYS = {"label", "kind", "a_obj", "b_obj", "address", "name", "location"}
ONE_SIDE_KEYS = {"side", "tid", "first_idx", "last_idx", "count", "kinds", "first", "aligned"}


def detdiff(*args: str | os.PathLike[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    if not DETDIFF.exists():
        pytest.fail(f"{DETDIFF} is missing: run `make` (or pip install -e .)", pytrace=False)
    return run([DETDIFF, *args], timeout=60, env=env)


def record(out: Path, *cmd: str | os.PathLike[str]) -> Path:
    r = detrec("-q", "--timeout", "30", "-o", out, "--", *cmd)
    assert out.exists(), r.stderr.decode()
    assert outcome(out)["status"] != "timeout", f"recording {cmd} hung"
    return out


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("diff")


@pytest.fixture(scope="module")
def forced(tmp: Path) -> Path:
    exe = tmp / "forced_order"
    cc = shutil.which("gcc") or shutil.which("cc")
    assert cc, "no C compiler"
    r = subprocess.run([cc, "-std=c11", "-D_GNU_SOURCE", "-O1", "-g", "-Wall", "-Werror", "-pthread", "-o", exe,
                        Path(__file__).with_name("forced_order.c")], capture_output=True)
    assert r.returncode == 0, r.stderr.decode()
    return exe


@pytest.fixture(scope="module")
def bank(tmp: Path) -> tuple[Path, Path]:
    """(a passing run, a failing run) of bank_check_then_act."""
    fail = tmp / "fail.db"
    passing = tmp / "fail-pass.db"
    # The bug often fires in the very first run, which leaves no passing run
    # to compare with: search again until the pair exists.
    for _ in range(10):
        r = detrec("-q", "--until-fail", "500", "-j", "2", "-o", fail, "--", sample_bin("bank_check_then_act"))
        assert r.returncode == 1 and fail.exists(), f"no failing run in 500: {r.stderr.decode()}"
        if passing.exists():
            return passing, fail
    raise AssertionError("10 searches, and each failed in its first runs: no passing run to compare with")


# ---------------------------------------------------------------- the oracle


class Naive:
    """A trace read row by row: what the engine computes, done the obvious way."""

    def __init__(self, trace: Path) -> None:
        thread_objs = {o: t for t, o in query(trace, "SELECT tid, obj FROM threads")}
        objects = {o: (k, a) for o, k, a in query(trace, "SELECT obj, kind, address FROM objects")}
        sites = dict(query(trace, "SELECT site, address FROM sites"))
        self.key = {o: (("thread", thread_objs[o]) if o in thread_objs else objects[o]) for o in objects}
        self.key[0] = None
        self.rows = [(tid, idx, kind, self.key[obj], sites.get(site, 0), result) for tid, idx, kind, obj, site, result
                     in query(trace, "SELECT tid, idx, kind, obj, site, result FROM events ORDER BY seq")]
        self.seq = [s for (s,) in query(trace, "SELECT seq FROM events ORDER BY seq")]
        self.threads: dict[int, list[tuple]] = {}      # tid -> (kind, object, site) of each event
        self.results: dict[int, list[int | None]] = {}  # tid -> each event's result, None: not compared
        for tid, _idx, kind, _key, _site, result in self.rows:
            self.threads.setdefault(tid, []).append((kind, _key, _site))
            ignored = kind in VARYING or (kind == BARRIER_DEPART and result in (-1, 0))
            self.results.setdefault(tid, []).append(None if ignored else result)


def oracle(a: Naive, b: Naive) -> dict:
    op = [(r[0],) + r[2:5] for r in a.rows], [(r[0],) + r[2:5] for r in b.rows]
    n = min(len(a.rows), len(b.rows))
    div = next((i for i in range(n) if op[0][i] != op[1][i]), None if len(a.rows) == len(b.rows) else n)
    firsts, matched = {}, {}
    for t in set(a.threads) | set(b.threads):
        x, y = a.threads.get(t, []), b.threads.get(t, [])
        m = min(len(x), len(y))
        d = next((i for i in range(m) if x[i] != y[i]), None if len(x) == len(y) else m)
        if d is not None:
            firsts[t] = d
        matched[t] = m if d is None else d
    per: list[dict] = [{}, {}]
    for side, tr in ((0, a), (1, b)):
        for tid, idx, _kind, key, _site, _res in tr.rows:
            if key is not None and idx < matched[tid]:
                per[side].setdefault(key, []).append((tid, idx))
    inversions = {}
    for key, xs in per[0].items():
        ys = per[1].get(key, [])
        assert sorted(xs) == sorted(ys)
        k = next((i for i in range(len(xs)) if xs[i] != ys[i]), None)
        if k is not None:
            inversions[key] = (xs[k], ys[k], sum(p[0] != q[0] for p, q in zip(xs, ys, strict=True)))
    results = sum(a.results[t][i] != b.results[t][i] for t in matched for i in range(matched[t]))
    return {"divergence": div, "threads": firsts, "inversions": inversions, "matched": matched, "results": results}


def check_against_oracle(pa: Path, pb: Path, force: bool = False) -> dict:
    """Compare the engine with the oracle on two traces; returns the engine's JSON."""
    na, nb = Naive(pa), Naive(pb)
    want = oracle(na, nb)
    got = compare(pa, pb, limit=None, symbolize=False, force=force)
    j = got.to_json()
    if want["divergence"] is None:
        assert got.divergence is None
    else:
        d = got.divergence
        assert d is not None and d.position == want["divergence"]
        # The events shown at the divergence are the traces' own rows there.
        if d.a is not None:
            assert (d.a.seq, d.a.tid, d.a.idx) == (na.seq[d.position],) + na.rows[d.position][:2]
        if d.b is not None:
            assert (d.b.seq, d.b.tid, d.b.idx) == (nb.seq[d.position],) + nb.rows[d.position][:2]
        assert [e.seq for e in d.before] == na.seq[max(0, d.position - 3):d.position]
    assert {t.tid: t.index for t in got.threads} == want["threads"]
    assert got.thread_count == len(want["threads"])
    inv = {}
    for x in got.inversions:
        key = na.key[x.object.a_obj] if x.object.a_obj is not None else nb.key[x.object.b_obj]
        inv[key] = ((x.first.tid, x.first.idx), (x.b_first.tid, x.b_first.idx), x.positions)
        # The pair really is ordered both ways: by seq in A, the other way in B.
        assert x.first.seq < x.second.seq and x.b_first.seq < x.b_second.seq
        assert (x.first.tid, x.first.idx) == (x.b_second.tid, x.b_second.idx)
        assert (x.second.tid, x.second.idx) == (x.b_first.tid, x.b_first.idx)
    assert inv == want["inversions"]
    assert got.inversion_count == len(want["inversions"])
    assert got.result_count == want["results"]
    # Events on one side only: never more than a thread's unmatched tail,
    # and an alignment leaves as many common events on both sides.
    for t, m in want["matched"].items():
        la, lb = len(na.threads.get(t, [])), len(nb.threads.get(t, []))
        oa = sum(s.count for s in got.one_side if s.tid == t and s.side == "a")
        ob = sum(s.count for s in got.one_side if s.tid == t and s.side == "b")
        assert oa <= la - m and ob <= lb - m
        if all(s.aligned for s in got.one_side if s.tid == t):
            assert la - m - oa == lb - m - ob
    assert j["one_side_events"] == {"a": sum(s.count for s in got.one_side if s.side == "a"),
                                    "b": sum(s.count for s in got.one_side if s.side == "b")}
    return j


# ---------------------------------------------------------------- identical runs


def test_single_threaded_runs_are_identical(tmp: Path) -> None:
    a = record(tmp / "hello1.db", program("hello"))
    b = record(tmp / "hello2.db", program("hello"))
    r = detdiff(a, b)
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    assert "Identical" in r.stdout.decode()
    j = json.loads(detdiff("--json", a, b).stdout)
    assert j["identical"] and j["divergence"] is None and j["outcome"] == []
    check_against_oracle(a, b)


def test_forced_order_runs_are_identical(tmp: Path, forced: Path) -> None:
    traces = [record(tmp / f"forced{i}.db", forced, "5", "3") for i in range(3)]
    # It is multithreaded: 4 threads, every worker takes the mutex.
    assert query(traces[0], "SELECT count(*) FROM threads")[0][0] == 4
    assert query(traces[0], "SELECT count(DISTINCT tid) FROM events e JOIN objects o USING (obj) "
                            "WHERE o.kind = ?", (MUTEX,))[0][0] == 3
    for other in traces[1:]:
        r = detdiff(traces[0], other)
        assert r.returncode == 0, r.stdout.decode()
        check_against_oracle(traces[0], other)


# ---------------------------------------------------------------- a heisenbug


def test_passing_and_failing_bank(bank: tuple[Path, Path]) -> None:
    passing, failing = bank
    assert outcome(passing)["exit_code"] == 0 and outcome(failing)["exit_code"] == 1
    r = detdiff(passing, failing)
    text = r.stdout.decode()
    assert r.returncode == 1, text + r.stderr.decode()
    # The account mutex (the program's only mutex) is taken in another order.
    (addr,) = [a for (a,) in query(passing, "SELECT address FROM objects WHERE kind = ?", (MUTEX,))]
    j = json.loads(detdiff("--json", "--limit", "0", passing, failing).stdout)
    mutexes = [i for i in j["inversions"] if i["object"]["kind"] == "mutex"]
    assert [i["object"]["address"] for i in mutexes] == [addr]
    inv = mutexes[0]
    assert inv["first"]["tid"] != inv["second"]["tid"]
    line = next(ln for ln in text.splitlines() if ln.startswith(f"  {inv['object']['label']} "))
    assert "account" in line  # the variable's name, from the binary's symbols
    assert f"A: T{inv['first']['tid']} then T{inv['second']['tid']}" in line
    assert f"B: T{inv['second']['tid']} then T{inv['first']['tid']}" in line
    # The outcome: exit 0 against exit 1, and stdout differs.
    assert {"field": "exit_code", "a": 0, "b": 1} in j["outcome"]
    assert "exit code: A 0, B 1" in text
    assert any(d["field"] == "stdout" for d in j["outcome"])
    assert "BUG" in text
    # The schedules part, with both sides' events around the point.
    assert "The schedules part after" in text and ">  A" in text and ">  B" in text


def test_bank_engine_matches_oracle(bank: tuple[Path, Path]) -> None:
    passing, failing = bank
    j = check_against_oracle(passing, failing)
    assert j["divergence"] is not None and j["inversion_count"] >= 1
    # Object ids follow first use, so they may differ; the engine matched
    # them by address: A's and B's ids of each inverted object have it.
    for inv in j["inversions"]:
        o = inv["object"]
        for side, trace in (("a_obj", passing), ("b_obj", failing)):
            if o["kind"] != "thread":
                assert query(trace, "SELECT address FROM objects WHERE obj = ?", (o[side],))[0][0] == o["address"]
    # The other way round: the same facts, A and B swapped (not the
    # one-sided events: difflib's alignment is not symmetric).
    k = check_against_oracle(failing, passing)
    assert k["divergence"]["position"] == j["divergence"]["position"]
    assert k["inversion_count"] == j["inversion_count"]
    assert {(t["tid"], t["index"]) for t in k["threads"]} == {(t["tid"], t["index"]) for t in j["threads"]}


def test_different_work_same_thread(tmp: Path, forced: Path) -> None:
    """One more round: the same interleaving up to a point, then main does another operation."""
    a = record(tmp / "rounds5.db", forced, "5", "3")
    b = record(tmp / "rounds6.db", forced, "6", "3")
    r = detdiff(a, b)
    assert r.returncode == 2 and "--force" in r.stderr.decode()
    r = detdiff("--force", a, b)
    assert r.returncode == 1
    j = json.loads(detdiff("--force", "--json", a, b).stdout)
    assert j["divergence"]["reason"] == "operation"
    assert j["divergence"]["a"]["tid"] == j["divergence"]["b"]["tid"] == 0
    assert "the arguments differ" in j["notes"][0]
    # B's extra round is on B's side only: one round of the ring, 4 events per worker, 2 for main.
    assert j["one_side_events"] == {"a": 0, "b": 2 + 3 * 4}
    check_against_oracle(a, b, force=True)


# ---------------------------------------------------------------- refusals and bad input


def one_line_error(r: subprocess.CompletedProcess) -> str:
    err = r.stderr.decode()
    assert r.returncode == 2, (r.returncode, err)
    assert "Traceback" not in err, err
    assert r.stdout == b""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("detdiff: "), err
    return lines[0]


def test_different_programs_refused(tmp: Path, forced: Path) -> None:
    a = record(tmp / "p-hello.db", program("hello"))
    b = record(tmp / "p-forced.db", forced, "2", "2")
    msg = one_line_error(detdiff(a, b))
    assert "different programs" in msg
    assert "different programs" in one_line_error(detdiff("--force", a, b))  # --force is for arguments only
    c = record(tmp / "p-hello-arg.db", program("hello"), "x")
    msg = one_line_error(detdiff(a, c))
    assert "different arguments" in msg and "--force" in msg
    r = detdiff("--force", a, c)
    assert r.returncode == 1
    j = json.loads(detdiff("--force", "--json", a, c).stdout)
    assert j["schedule_identical"] is True  # one printf either way
    assert {"field": "exit_code", "a": 0, "b": 7} in j["outcome"]


def test_bad_files(tmp: Path) -> None:
    good = record(tmp / "good.db", program("hello"))
    empty = tmp / "empty.db"
    empty.write_bytes(b"")
    text = tmp / "text.db"
    text.write_text("hello\n" * 100)
    other = tmp / "other.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    truncated = tmp / "truncated.db"
    data = good.read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    cases = {
        tmp / "missing.db": "no such trace",
        tmp: "not a file",
        empty: "empty file",
        text: "not a det trace",
        other: "not a det trace",
        truncated: "truncated",
    }
    for bad, what in cases.items():
        for args in ((bad, good), (good, bad), ("--json", bad, good)):
            msg = one_line_error(detdiff(*args))
            assert what in msg and str(bad) in msg, msg


def test_usage_errors() -> None:
    r = detdiff()
    assert r.returncode == 2 and b"usage" in r.stderr
    r = detdiff("--limit", "-1", "a", "b")
    assert r.returncode == 2


# ---------------------------------------------------------------- output


def test_json_has_the_documented_keys(bank: tuple[Path, Path]) -> None:
    r = detdiff("--json", *bank)
    assert r.returncode == 1
    j = json.loads(r.stdout)
    assert set(j) == TOP_KEYS
    assert set(j["a"]) == set(j["b"]) == TRACE_KEYS
    assert set(j["divergence"]) == DIVERGENCE_KEYS
    for e in [j["divergence"]["a"], j["divergence"]["b"], *j["divergence"]["before"], *j["divergence"]["a_after"]]:
        assert set(e) == EVENT_KEYS
    for t in j["threads"]:
        assert set(t) == THREAD_KEYS
    for i in j["inversions"]:
        assert set(i) == INVERSION_KEYS and set(i["object"]) == OBJECT_KEYS
        assert all(set(i[k]) == EVENT_KEYS for k in ("first", "second", "b_first", "b_second"))
    for s in j["one_side"]:
        assert set(s) == ONE_SIDE_KEYS
    for o in j["outcome"]:
        assert set(o) == {"field", "a", "b"}
    assert len(j["threads"]) <= 10 and len(j["one_side"]) <= 10  # the default --limit
    assert "\x1b[" not in r.stdout.decode()


def test_colour_only_when_asked_or_on_a_terminal(bank: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    assert b"\x1b[" not in detdiff(*bank).stdout  # a pipe
    assert b"\x1b[" in detdiff("--color", "always", *bank).stdout
    assert b"\x1b[" not in detdiff("--color", "never", *bank).stdout

    class Tty:
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color("auto", Tty())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color("auto", Tty())
    assert use_color("always", Tty())
    monkeypatch.setenv("NO_COLOR", "")
    assert use_color("auto", Tty())


def test_engine_imports_only_the_standard_library() -> None:
    """gdb's Python may import det.compare.diff: nothing but the standard library and det itself
    (the package as installed: build/python, staged by make)."""
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'build' / 'python')!r}); import det.compare.diff; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] not in sys.stdlib_module_names "
        "and m.split('.')[0] not in ('det', '__main__')))"
    )
    r = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, cwd="/")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


# ---------------------------------------------------------------- unusual traces


def test_seq_gaps(tmp: Path, bank: tuple[Path, Path]) -> None:
    """seq may have gaps (a thread that died mid-event): positions, not seq values, are compared."""
    passing, failing = bank
    gapped = tmp / "gapped.db"
    shutil.copy(failing, gapped)
    db = sqlite3.connect(gapped)
    (n,) = db.execute("SELECT count(*) FROM events").fetchone()
    with db:
        for table, col in (("event_rows", "seq"), ("data", "seq"), ("objects", "first_seq"),
                           ("threads", "create_seq")):
            # Two steps, so that no two rows share a seq on the way.
            db.execute(f"UPDATE {table} SET {col} = -{col} - 1 WHERE {col} >= ?", (n // 2,))
            db.execute(f"UPDATE {table} SET {col} = -{col} - 1 + 1000 WHERE {col} < -1", ())
        db.executescript(schema.REBUILD_MARKS)  # event rows rewritten by hand: their marks follow
    db.close()
    reseal(gapped)
    assert query(gapped, "SELECT max(seq) FROM events")[0][0] == n - 1 + 1000
    r = detdiff(failing, gapped)
    assert r.returncode == 0, r.stdout.decode()
    check_against_oracle(passing, gapped)
    check_against_oracle(gapped, passing)


def test_incomplete_trace(tmp: Path) -> None:
    """A recording whose detrec was killed (NAME.incomplete, no outcome) compares, and says so."""
    out = tmp / "killed.db"
    p = subprocess.Popen([BIN / "detrec", "-q", "-o", out, "--", program("spinner")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    incomplete = tmp / "killed.db.incomplete"
    try:
        assert p.stdout is not None
        p.stdout.readline()  # the program runs
        deadline = time.monotonic() + 20
        log = tmp / "killed.db.incomplete.log"
        while time.monotonic() < deadline:  # until some events are in its capture log
            time.sleep(0.1)
            if log.exists() and log.stat().st_size > 100_000:
                break
    finally:
        p.kill()
        p.wait()
    assert incomplete.exists()
    stopped = tmp / "stopped.db"
    detrec("-q", "--timeout", "0.3", "-o", stopped, "--", program("spinner"))
    assert outcome(stopped)["status"] == "timeout"
    r = detdiff("--json", incomplete, stopped)
    assert r.returncode == 1, r.stderr.decode()
    j = json.loads(r.stdout)
    assert j["a"]["complete"] is False and j["a"]["outcome"] is None
    assert any("incomplete" in n for n in j["notes"])
    assert {"field": "status", "a": "incomplete", "b": "timeout"} in j["outcome"]
    # Its source lines come from the other trace's modules (an incomplete trace has none).
    d = j["divergence"]
    located = [e["location"] for e in d["before"] + d["a_after"] + [t["a"] for t in j["threads"] if t["a"]]
               if e["address"]]
    assert located and all(loc.startswith("spinner.c:") for loc in located), located


def test_results_differ(tmp: Path, forced: Path, bank: tuple[Path, Path]) -> None:
    """The same operation with another result (here: a copy of a real trace where one
    lock returned EBUSY) is a difference even when the order is the same."""
    a = record(tmp / "res-a.db", forced, "3", "2")
    b = tmp / "res-b.db"
    shutil.copy(a, b)
    seq, tid, idx = query(b, "SELECT seq, tid, idx FROM events e JOIN objects o USING (obj) WHERE o.kind = ? "
                             "AND e.tid = 2 ORDER BY seq LIMIT 1", (MUTEX,))[0]
    db = sqlite3.connect(b)
    with db:
        db.execute("UPDATE event_rows SET result = 16 WHERE seq = ?", (seq,))
    db.close()
    reseal(b)
    r = detdiff(a, b)
    text = r.stdout.decode()
    assert r.returncode == 1, text
    assert "The same operation, a different result (1):" in text
    assert f"T{tid} #{idx} mutex_lock" in text and "A 0, B EBUSY" in text
    j = json.loads(detdiff("--json", a, b).stdout)
    assert j["divergence"] is None and not j["schedule_identical"] and j["outcome_identical"]
    assert j["result_count"] == 1 and (j["results"][0]["a"]["seq"], j["results"][0]["b"]["result"]) == (seq, 16)
    check_against_oracle(a, b)
    # Among differently interleaved events too: a matched event early in the failing run.
    passing, failing = bank
    changed = tmp / "res-fail.db"
    shutil.copy(failing, changed)
    db = sqlite3.connect(changed)
    with db:
        db.execute("UPDATE event_rows SET result = 110 WHERE seq = (SELECT min(seq) FROM events WHERE tid = 0 "
                   "AND kind = (SELECT kind FROM event_kinds WHERE name = 'mutex_lock'))")
    db.close()
    reseal(changed)
    j = check_against_oracle(passing, changed)
    assert j["result_count"] == check_against_oracle(passing, failing)["result_count"] + 1
