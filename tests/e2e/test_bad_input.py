"""Bad input gets one clear line and a non-zero exit, never a traceback."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from conftest import detrec, detreplay, program


def one_line_error(r, tool: str) -> str:
    err = r.stderr.decode()
    assert r.returncode != 0
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.startswith(f"{tool}:")]
    assert lines, err
    return lines[0]


def test_missing_program(tmp_path: Path) -> None:
    r = detrec("-o", tmp_path / "x.db", tmp_path / "nope")
    assert r.returncode == 127
    assert "no such program" in one_line_error(r, "detrec")
    r = detrec("-o", tmp_path / "x.db", "no-such-program-anywhere")
    assert r.returncode == 127 and "not found in PATH" in one_line_error(r, "detrec")


def test_not_executable(tmp_path: Path) -> None:
    f = tmp_path / "data"
    f.write_text("hello")
    r = detrec("-o", tmp_path / "x.db", f)
    assert r.returncode == 126 and "not executable" in one_line_error(r, "detrec")
    r = detrec("-o", tmp_path / "x.db", tmp_path)
    assert r.returncode == 126 and "not a regular file" in one_line_error(r, "detrec")


def test_statically_linked(tmp_path: Path) -> None:
    r = detrec("-o", tmp_path / "x.db", program("hello_static"))
    assert r.returncode == 126
    assert "statically linked" in one_line_error(r, "detrec")


def test_usage_errors(tmp_path: Path) -> None:
    r = detrec()
    assert r.returncode == 2 and b"usage" in r.stderr
    r = detrec("--until-fail", "0", program("hello"))
    assert r.returncode == 2
    r = detreplay()
    assert r.returncode == 2


def test_static_child_refused(tmp_path: Path) -> None:
    """A child det cannot follow stops the run, naming the call and why."""
    trace = tmp_path / "f.db"
    r = detrec("-o", trace, program("proc_tour"), "static", program("hello_static"), timeout=30)
    assert r.returncode == 125
    line = one_line_error(r, "detrec")
    assert "execve(" in line and "hello_static" in line and "statically linked" in line, line
    assert trace.exists()


def recorded(tmp_path: Path) -> Path:
    trace = tmp_path / "ok.db"
    r = detrec("-o", trace, program("hello"))
    assert r.returncode == 0, r.stderr.decode()
    return trace


@pytest.mark.parametrize("tool", ["detreplay", "detrec info"])
def test_bad_trace_files(tool: str, tmp_path: Path) -> None:
    good = recorded(tmp_path)

    def check(path: Path, words: str) -> None:
        r = detreplay(path) if tool == "detreplay" else detrec("info", path)
        msg = one_line_error(r, tool)
        assert words in msg, msg

    check(tmp_path / "missing.db", "no such trace")
    check(tmp_path, "not a file")
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    check(empty, "empty file")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database at all\n" * 100)
    check(junk, "not a det trace")
    trunc = tmp_path / "trunc.db"
    data = good.read_bytes()
    trunc.write_bytes(data[: len(data) // 2])
    check(trunc, "truncated")
    foreign = tmp_path / "foreign.db"
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE t(x)")
    db.commit()
    db.close()
    check(foreign, "not a det trace")
    newer = tmp_path / "newer.db"
    shutil.copy(good, newer)
    db = sqlite3.connect(newer)
    db.execute("PRAGMA user_version = 99")
    db.commit()
    db.close()
    check(newer, "version 99, made by a newer det")
    broken = tmp_path / "broken.db"
    shutil.copy(good, broken)
    db = sqlite3.connect(broken)
    db.execute("DROP TABLE event_rows")  # the events are stored there (events is a view over it)
    db.commit()
    db.close()
    check(broken, "damaged")


def test_modified_binary_is_refused(tmp_path: Path) -> None:
    prog = tmp_path / "hello"
    shutil.copy(program("hello"), prog)
    trace = tmp_path / "h.db"
    assert detrec("-o", trace, prog, "x").returncode == 7
    with open(prog, "ab") as f:
        f.write(b"\0patched")
    r = detreplay(trace)
    assert r.returncode == 2
    assert "changed since it was recorded" in one_line_error(r, "detreplay")
    r = detreplay("--force", trace)
    assert r.returncode == 7, r.stderr.decode()
    assert b"outcome matches" in r.stderr
