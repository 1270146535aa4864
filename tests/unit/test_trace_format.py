"""The schema, its documentation and what detrec writes agree."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, convert_each_way, detrec, program, query, reseal, sample_bin

sys.path.insert(0, str(ROOT / "store"))
from det import schema  # noqa: E402


def tables() -> list[str]:
    return re.findall(r"CREATE TABLE (\w+)", schema.SCHEMA)


def test_every_table_is_documented() -> None:
    doc = (ROOT / "docs" / "TRACE_FORMAT.md").read_text()
    for t in tables():
        assert re.search(rf"^### .*\b{t}\b", doc, re.M), f"docs/TRACE_FORMAT.md does not describe {t}"
    assert f"version {schema.FORMAT_VERSION}" in doc


def test_written_trace_has_identity_and_tables(tmp_path: Path) -> None:
    trace = tmp_path / "t.db"
    assert detrec("-o", trace, program("hello")).returncode == 0
    db = sqlite3.connect(trace)
    assert db.execute("PRAGMA application_id").fetchone()[0] == schema.APPLICATION_ID
    assert db.execute("PRAGMA user_version").fetchone()[0] == schema.FORMAT_VERSION
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    have = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert set(tables()) <= have
    meta = dict(db.execute("SELECT key, value FROM meta"))
    for k in ("format_version", "det_version", "argv", "env", "cwd", "binary", "binary_sha256", "start_time"):
        assert k in meta
    assert db.execute("SELECT count(*) FROM event_kinds").fetchone()[0] > 40
    db.close()


def _full_check(trace: Path, cache: Path) -> subprocess.CompletedProcess:
    """detrec info with det.validate's full pass (no cache of valid traces)."""
    env = dict(os.environ, DET_VALIDATE="full", XDG_CACHE_HOME=str(cache))
    return detrec("info", trace, env=env)


@pytest.mark.parametrize("how", ["parallel", "inputs", "strict", "logical", "atomics"])
def test_the_writer_seals_what_the_validator_checks(how: str, tmp_path: Path) -> None:
    """The content checksum detrec writes after converting the capture log is
    the one det.validate computes, and the stored tables (event_rows, calls,
    marks) pass its full pass, in every recording mode."""
    trace = tmp_path / f"{how}.db"
    argv = {
        "parallel": [program("api_tour")],
        "inputs": [program("inputs_tour")],
        "strict": ["--strict", sample_bin("bank_check_then_act")],
        "logical": ["--logical", sample_bin("bank_check_then_act")],
        "atomics": [sample_bin("lost_update")],
    }[how]
    r = detrec("-q", "-o", trace, *argv, input=b"some input\n" * 10)
    assert trace.exists(), r.stderr.decode()
    assert query(trace, "SELECT count(*) FROM event_rows")[0][0] > 10
    r = _full_check(trace, tmp_path / "cache")
    assert r.returncode == 0, r.stderr.decode()


def test_marks_and_calls_are_checked_as_tables(tmp_path: Path) -> None:
    """An edit of a stored table that the checksum does not cover (a mark),
    or one sealed again (a call's kind), is still refused by the full pass,
    naming the table."""
    trace = tmp_path / "t.db"
    assert detrec("-q", "-o", trace, program("api_tour")).returncode == 0
    for what, sql, says in (
        ("mark", "UPDATE marks SET ts = ts + 1 WHERE win = 0 AND tid = 0",
         "marks row"),
        ("call", "UPDATE event_rows SET call = (SELECT max(call) + 1 FROM calls) WHERE seq = 5",
         "is not in the calls table"),
    ):
        edited = tmp_path / f"{what}.db"
        shutil.copy(trace, edited)
        db = sqlite3.connect(edited)
        with db:
            assert db.execute(sql).rowcount == 1
        db.close()
        reseal(edited)
        r = _full_check(edited, tmp_path / "cache")
        assert r.returncode != 0 and says in r.stderr.decode(), r.stderr.decode()


def _sql_lanes(db: sqlite3.Connection, table: str, cols: tuple[str, ...]) -> list:
    """The lanes as SQL computed them when traces were first sealed (format
    4 before issue 9): supervisor/sums.h must keep their value, or traces
    sealed then would be refused."""
    def lane(a: int) -> str:
        h = "0"
        for col in cols:
            h = f"(({h}) * {a} + ({col} % 2147483647)) % 2147483647"
        return h
    return list(db.execute(f"SELECT count(*), sum({lane(48271)}), sum({lane(69621)}) FROM {table}").fetchone())


def test_converter_sums_are_the_scans(tmp_path: Path) -> None:
    """The checksum lanes the converter adds up as it writes event_rows and
    calls (sealed by detrec without reading them again) equal those of the C
    scan the validator makes, and the SQL arithmetic they replaced; inputs
    (negative results, results that come late) and strict mode included."""
    from det import native, seal

    for name, argv in (("inputs", [program("inputs_tour")]), ("api", [program("api_tour")]),
                       ("strict", ["--strict", sample_bin("bank_check_then_act")])):
        trace = tmp_path / f"{name}.db"
        r = detrec("-q", "-o", trace, *argv, input=b"some input\n" * 10)
        assert trace.exists(), r.stderr.decode()
        db = sqlite3.connect(trace)
        try:
            scans = native.table_sums(trace)
            assert list(scans) == [_sql_lanes(db, "event_rows", ("seq", "tid", "call", "result")),
                                   _sql_lanes(db, "calls", ("call", "kind", "obj", "aux"))]
            assert scans[0][0] > 10 and any(v < 0 for (v,) in db.execute("SELECT result FROM event_rows")) \
                or name != "inputs"
            sealed = db.execute("SELECT value FROM meta WHERE key = 'content_sum'").fetchone()[0]
            assert seal.content_sum(db) == sealed, name
        finally:
            db.close()


# Edits that only the checksum can see: an input's value, and the clock an
# input call read (role input: no order rule looks at either).
INPUT_ROWS = "SELECT call FROM calls JOIN event_kinds k USING (kind) WHERE k.role = 'input'"


@pytest.mark.parametrize("edit", [
    "UPDATE event_rows SET result = result + 1 "
    f"WHERE seq = (SELECT min(seq) FROM event_rows WHERE call IN ({INPUT_ROWS}))",
    f"UPDATE calls SET aux = aux + 1 WHERE call = (SELECT min(call) FROM ({INPUT_ROWS}))",
])
def test_stored_events_altered_by_sql_are_refused(edit: str, tmp_path: Path) -> None:
    """A trace whose event_rows or calls were changed behind det's back (not
    sealed again), in a way no other check sees, is refused by the full
    pass: the checksum's lanes cover them."""
    trace = tmp_path / "t.db"
    assert detrec("-q", "-o", trace, program("inputs_tour"), input=b"some input\n").returncode == 0
    assert _full_check(trace, tmp_path / "cache").returncode == 0
    db = sqlite3.connect(trace)
    with db:
        assert db.execute(edit).rowcount == 1
    db.close()
    r = _full_check(trace, tmp_path / "cache2")
    assert r.returncode != 0 and "differ from what was recorded" in r.stderr.decode(), r.stderr.decode()


@pytest.mark.parametrize("prog", ["inputs_tour", "mutex_counter"])
def test_conversion_with_and_without_its_writer_thread(prog: str, tmp_path: Path) -> None:
    """det_convert inserts on a writer thread when a CPU is free for it, else
    in the merge's own: both make the same trace, byte for byte (late
    results, input data, many chunks of rows), with the same sums."""
    from det import native

    dumps = []
    for db, st in convert_each_way(tmp_path, prog, [] if prog == "inputs_tour" else ["30000"],
                                   "DET_CONVERT_WRITER"):
        assert (st.event_sum.value(), st.call_sum.value()) == native.table_sums(db)
        dumps.append(db.read_bytes())
    assert st.events > (100 if prog == "inputs_tour" else 100000)
    assert dumps[0] == dumps[1]


@pytest.mark.parametrize("prog", ["inputs_tour", "mutex_counter"])
def test_event_rows_as_pages_are_the_inserted_rows(prog: str, tmp_path: Path) -> None:
    """det_convert writes event_rows as SQLite b-tree pages of its own
    (recorder/convert_btree.c), or with DET_CONVERT_PAGES=0 through INSERT:
    both give a file SQLite finds whole (integrity_check) with the same rows
    in every table (late results included; mutex_counter's ~400k rows make a
    tree three pages deep), the same sums, and the same meta."""
    from det import native

    got = []
    for db, st in convert_each_way(tmp_path, prog, [] if prog == "inputs_tour" else ["100000"],
                                   "DET_CONVERT_PAGES"):
        assert query(db, "PRAGMA integrity_check") == [("ok",)]
        assert (st.event_sum.value(), st.call_sum.value()) == native.table_sums(db)
        got.append({t: query(db, f"SELECT * FROM {t} ORDER BY rowid") for t in tables() if t != "marks"}
                   | {"marks": query(db, "SELECT * FROM marks ORDER BY win, tid")})
    assert st.events > (100 if prog == "inputs_tour" else 400000)
    assert got[0] == got[1]


@pytest.mark.parametrize("cells", ["2", "3", "4", "7"])
def test_event_rows_trees_of_every_shape_are_whole(cells: str, tmp_path: Path) -> None:
    """Interior pages of event_rows with at most `cells` cells each
    (DET_CONVERT_NODE_CELLS, a test's knob): mutex_counter's ~100k rows then
    make trees several levels deep, whose levels end in every way. A level
    that left one page for its last node made a node with no cell, which
    SQLite calls a damaged file ("database disk image is malformed"): CI
    met it once in a real recording of ~135k events (mutex_counter of 67.6k
    iterations made it every time)."""
    os.environ["DET_CONVERT_NODE_CELLS"] = cells
    try:
        ways = convert_each_way(tmp_path, "mutex_counter", ["25000"], "DET_CONVERT_PAGES")
    finally:
        del os.environ["DET_CONVERT_NODE_CELLS"]
    (ins, _), (pages, _) = ways
    assert query(pages, "PRAGMA integrity_check") == [("ok",)]
    rows = "SELECT * FROM event_rows ORDER BY rowid"
    assert query(pages, rows) == query(ins, rows)
    depth = query(pages, "SELECT max(length(path) - length(replace(path, '/', ''))) FROM dbstat "
                         "WHERE name = 'event_rows'")[0][0]
    assert depth >= 3, depth
