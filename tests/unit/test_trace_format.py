"""The schema, its documentation and what detrec writes agree."""

from __future__ import annotations

import re
import sqlite3
import sys
from pathlib import Path

from conftest import ROOT, detrec, program

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
