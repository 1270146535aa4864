"""Packed traces: `detrec --pack` / `detrec pack`, then replay where the
program's own paths are gone.

The program (tests/programs/packed/) is built into a scratch directory with
a library it links (RUNPATH $ORIGIN), one it dlopens and two data files it
reads; the directory is deleted after recording, the trace moved elsewhere,
and the replay must still be byte-identical: the program sees the packed
files at their recorded paths (/proc/self/exe included).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from conftest import build_packed_program, detrec, detreplay, outcome, query
from det import machine
from det.record.pack import walk


@pytest.fixture()
def packed(tmp_path: Path) -> tuple[Path, Path, bytes]:
    """(the packed trace, moved out of where it was recorded; the deleted build
    directory; the program's recorded stdout)."""
    work = tmp_path / "build-that-goes-away"
    prog = build_packed_program(work)
    (tmp_path / "rec").mkdir()
    rec = detrec("--pack", "-o", tmp_path / "rec" / "t.db", "--", "./main", cwd=work)
    assert rec.returncode == 0, rec.stderr.decode()
    assert "detrec pack:" in rec.stderr.decode()
    stdout = rec.stdout
    assert f"exe={prog} argv0=./main cwd={work}".encode() in stdout
    shutil.rmtree(work)
    moved = tmp_path / "elsewhere" / "trace.db"
    moved.parent.mkdir()
    shutil.move(tmp_path / "rec" / "t.db", moved)
    return moved, work, stdout


def test_pack_holds_program_libraries_loader_and_files(packed) -> None:
    trace, work, _ = packed
    rows = {p: (t, sha, target) for p, t, sha, target in query(trace, "SELECT path, type, sha256, target FROM packed")}
    for name in ("main", "libfoo.so", "libbar.so", "data.txt", "copy.txt"):
        assert rows[str(work / name)][0] == "file", name
    assert rows[str(work)][0] == "dir"
    # the loader and libc, with the symlinks on the way to them as this machine has them
    interp = "/lib64/ld-linux-x86-64.so.2"
    links, real = walk(interp)
    assert rows[real][0] == "file"
    for link, target in links:
        assert rows[link] == ("symlink", None, target)
    libc = [p for p in rows if os.path.basename(p) == "libc.so.6" and rows[p][0] == "file"]
    assert libc, "libc is not packed"
    # det's own runtime is not: the replaying det brings its own
    assert not [p for p in rows if p.endswith("/libdet.so")]
    # one blob per distinct content, each checked
    shas = {sha for t, sha, _ in rows.values() if t == "file"}
    assert rows[str(work / "data.txt")][1] == rows[str(work / "copy.txt")][1]
    assert {s for (s,) in query(trace, "SELECT DISTINCT sha256 FROM blobs")} == shas
    assert query(trace, "SELECT count(*) FROM blobs WHERE chunk = 0")[0][0] == len(shas)
    assert (trace.stat().st_mode & 0o777) == 0o600


def test_packed_trace_replays_where_its_paths_are_gone(packed, tmp_path: Path) -> None:
    trace, work, stdout = packed
    assert not work.exists()
    r = detreplay(trace, cwd=tmp_path)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == stdout  # byte-identical: /proc/self/exe, cwd, the files, the dlopen'ed library
    assert "outcome matches the recording" in r.stderr.decode()
    assert not work.exists()  # nothing was made on this machine
    # with this machine's files instead, the program is missing: said in one line
    r = detreplay("--host-files", trace)
    assert r.returncode == 2
    assert r.stderr.decode().strip() == (f"detreplay: {work / 'main'}: the recorded program is gone; "
                                         "the trace carries it: replay without --host-files")


def test_pack_later_and_what_is_left_out(tmp_path: Path) -> None:
    work = tmp_path / "w"
    build_packed_program(work)
    trace = tmp_path / "t.db"
    # (without the copies detrec keeps, which pack would take instead: tests/e2e/test_keep_libs.py)
    assert detrec("--no-keep-libs", "-o", trace, "--", "./main", cwd=work).returncode == 0
    assert query(trace, "SELECT count(*) FROM packed")[0][0] == 0
    (work / "copy.txt").write_text("changed after the recording\n")
    r = detrec("pack", trace)
    assert r.returncode == 0, r.stderr.decode()
    err = r.stderr.decode()
    assert f"not packed: {work / 'copy.txt'}: changed since the program read it" in err
    assert query(trace, "SELECT count(*) FROM packed WHERE path = ?", (str(work / "copy.txt"),))[0][0] == 0
    # packing again replaces the pack; nothing is stored twice (a page or
    # two may move: SQLite's free pages)
    size = trace.stat().st_size
    stored = query(trace, "SELECT sum(length(bytes)) FROM blobs")[0][0]
    assert detrec("pack", "-q", trace).returncode == 0
    assert query(trace, "SELECT sum(length(bytes)) FROM blobs")[0][0] == stored
    assert abs(trace.stat().st_size - size) < stored / 4, (size, trace.stat().st_size, stored)
    # the program itself changed: refused in one line
    (work / "main").write_bytes((work / "main").read_bytes() + b"\0")
    r = detrec("pack", trace)
    assert r.returncode == 2
    assert r.stderr.decode().strip() == (f"detrec pack: {work / 'main'} changed since it was recorded "
                                         "(its sha256 differs): cannot pack it")


def test_unpacked_trace_says_what_is_gone(tmp_path: Path) -> None:
    work = tmp_path / "w"
    build_packed_program(work)
    trace = tmp_path / "t.db"
    # (without the copies detrec keeps, which replay would run instead: tests/e2e/test_keep_libs.py)
    assert detrec("--no-keep-libs", "-o", trace, "--", "./main", cwd=work).returncode == 0
    (work / "libbar.so").unlink()
    r = detreplay(trace)
    assert r.returncode != 0
    assert f"warning: files the program read are gone here: {work / 'libbar.so'}" in r.stderr.decode()
    assert "`detrec pack` on the recording machine carries them with the trace" in r.stderr.decode()


def test_damaged_pack_is_refused(packed) -> None:
    trace, _, _ = packed
    db = sqlite3.connect(trace)
    with db:
        sha, data = db.execute("SELECT sha256, bytes FROM blobs WHERE codec = 'zlib' LIMIT 1").fetchone()
        db.execute("UPDATE blobs SET bytes = ? WHERE sha256 = ? AND chunk = 0", (data[:-9] + b"012345678", sha))
    db.close()
    r = detreplay(trace)
    assert r.returncode == 2
    err = r.stderr.decode().strip().splitlines()
    assert len(err) == 1 and "the trace is damaged" in err[0] and sha[:12] in err[0], err


def test_another_cpu_is_named(packed) -> None:
    trace, _, stdout = packed
    db = sqlite3.connect(trace)
    with db:
        db.execute("UPDATE meta SET value = value || ' avx512_imaginary' WHERE key = 'cpu_flags'")
    db.close()
    r = detreplay(trace)
    assert r.returncode == 0 and r.stdout == stdout
    assert "lacks features the recording CPU" in r.stderr.decode()
    assert "avx512_imaginary" in r.stderr.decode()
    meta = {"cpu_flags": " ".join(machine.cpu()[1]), "machine": "aarch64"}
    assert machine.differences(meta) == [f"recorded on aarch64, this machine is {machine.describe()['machine']}"]


def test_gdb_replays_a_packed_trace(packed) -> None:
    trace, work, _ = packed
    r = detreplay("--gdb", trace, "--", "-nx", "-batch", "-ex", "det goto 200", "-ex", "info sharedlibrary",
                  "-ex", "continue", timeout=180)
    out = r.stdout.decode() + r.stderr.decode()
    assert "det: event 200 of " in out, out
    assert "libbar.so" in out and "libfoo.so" in out  # gdb reads the packed libraries
    assert f"exe={work / 'main'} argv0=./main" in out
    assert "exited normally" in out


def test_trace_sizes_are_reported_by_pack(tmp_path: Path) -> None:
    """The report `detrec pack` gives matches what the trace holds."""
    work = tmp_path / "w"
    build_packed_program(work)
    trace = tmp_path / "t.db"
    r = detrec("--pack", "-o", trace, "--", "./main", cwd=work)
    files = query(trace, "SELECT count(*), count(DISTINCT sha256), sum(size) FROM packed WHERE type = 'file'")[0]
    stored = query(trace, "SELECT sum(length(bytes)) FROM blobs")[0][0]
    assert (f"packed {files[0]} files ({files[1]} distinct, {files[2] / 1e6:.1f} MB)" in r.stderr.decode()), r.stderr
    assert f"they take {stored / 1e6:.1f} MB in the trace" in r.stderr.decode()
    assert stored < files[2]
    info = detrec("info", trace).stdout.decode()
    assert f"packed:     {files[0]} files, {files[2] / 1e6:.1f} MB, stored in {stored / 1e6:.1f} MB" in info
    assert outcome(trace)["status"] == "exited"
    assert hashlib.sha256((work / "main").read_bytes()).hexdigest() == \
        query(trace, "SELECT sha256 FROM packed WHERE path = ?", (str(work / "main"),))[0][0]
