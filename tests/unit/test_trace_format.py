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

from conftest import ROOT, detrec, program, query, reseal, sample_bin

sys.path.insert(0, str(ROOT / "recorder"))
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
