"""Bad input gets one clear line and a non-zero exit, never a traceback."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from conftest import ROOT, detrec, detreplay, program, run


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
    for opt in ("--rings", "--max-threads"):
        r = detrec(opt, "0", program("hello"))
        assert r.returncode == 2 and f"{opt} must be between 1 and 65535".encode() in r.stderr, r.stderr
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
    nested = tmp_path / "nested.db"  # (json.loads would exhaust Python's recursion)
    shutil.copy(good, nested)
    db = sqlite3.connect(nested)
    db.execute("UPDATE meta SET value = ? WHERE key = 'argv'", ("[" * 100_000 + "]" * 100_000,))
    db.commit()
    db.close()
    check(nested, "meta argv is not valid JSON (it nests deeper than 32 levels)")


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


def test_output_paths_are_checked_before_the_program_runs(tmp_path: Path) -> None:
    """detrec -o never replaces a device, a directory, a link, the program, or
    a file that is not a trace; it says so before the program starts."""
    prog = tmp_path / "prog"
    shutil.copy(program("hello"), prog)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(fifo)
    text = tmp_path / "notes.txt"
    text.write_text("my notes\n")
    directory = tmp_path / "dir"
    directory.mkdir()
    cases = {fifo: "named pipe", link: "symbolic link", text: "not a det trace", directory: "directory",
             prog: "program being recorded", tmp_path / "nowhere" / "t.db": "does not exist"}
    for path, words in cases.items():
        before = os.lstat(path) if os.path.lexists(path) else None
        r = detrec("-o", path, prog)
        line = one_line_error(r, "detrec")
        assert words in line, line
        assert r.returncode == 2
        assert b"hello from" not in r.stdout, "the program ran before the output was checked"
        if before is not None:
            after = os.lstat(path)
            assert (after.st_mode, after.st_ino, after.st_size) == (before.st_mode, before.st_ino, before.st_size)
    assert text.read_text() == "my notes\n" and prog.read_bytes() == program("hello").read_bytes()
    # An existing det trace is replaced.
    trace = tmp_path / "t.db"
    assert detrec("-o", trace, prog).returncode == 0
    r = detrec("-o", trace, prog, "again")
    assert r.returncode == 7 and b"trace saved" in r.stderr, r.stderr.decode()  # hello exits 7 with an argument
    # --until-fail's passing trace and work directory are checked too.
    (tmp_path / "u-pass.db").mkdir()
    r = detrec("--until-fail", "2", "-o", tmp_path / "u.db", prog)
    assert "u-pass.db: is a directory" in one_line_error(r, "detrec")
    (tmp_path / "u-pass.db").rmdir()
    (tmp_path / ".u.db.runs").write_text("not a directory")
    r = detrec("--until-fail", "2", "-o", tmp_path / "u.db", prog)
    assert ".u.db.runs: is a file, not a directory" in one_line_error(r, "detrec")
    # detdiff --bisect --keep takes a directory of traces only.
    r = run([ROOT / ".venv" / "bin" / "detdiff", "--bisect", "--keep", text, trace, trace])
    assert "notes.txt: is a file, not a directory" in one_line_error(r, "detdiff")


def test_replay_backends(tmp_path: Path) -> None:
    """--backend=kmod replays through /dev/detsched when the module is
    loaded and says so in one line when it is not (this machine's kernel
    cannot load modules: `make check-kmod` tests the module under qemu);
    an unknown backend is a usage error."""
    trace = tmp_path / "h.db"
    recorded = detrec("-q", "-o", trace, program("hello")).returncode
    r = detreplay("--backend=kmod", trace)
    if os.path.exists("/dev/detsched"):
        assert r.returncode == recorded and b"outcome matches" in r.stderr, r.stderr
    else:
        assert r.returncode == 2
        line = one_line_error(r, "detreplay")
        assert "/dev/detsched: no such device" in line and "docs/kmod.md" in line
    r = detreplay("--backend=nope", trace)
    assert r.returncode == 2 and b"no backend named 'nope' (there are: futex, kmod)" in r.stderr
    r = detreplay("--backend=kmod", "--gdb", trace)
    assert r.returncode == 2 and b"futex backend only" in r.stderr
    r = detreplay("--backend=futex", trace)
    assert r.returncode == recorded and b"outcome matches" in r.stderr
