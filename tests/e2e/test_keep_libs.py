"""A trace survives a system update: detrec keeps what the recording ran
(program, libraries, loader) in .det-objects/ beside the trace (det.objects),
and detreplay shows the program those copies where this machine's differ.

The program (tests/programs/keep_libs/) links libval.so of its own (RUNPATH
$ORIGIN), built by the test with val() returning 1; after recording, the
library is rebuilt to return 2 and renamed over the old one, as a package
upgrade replaces a system library. Replay must run the recorded library
(same output, /proc/self/exe, argv[0] and load addresses), and with the
opt-out refuse in one line as before.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, detrec, detreplay, outcome, query

SRC = ROOT / "tests" / "programs" / "keep_libs"
CC = ["gcc", "-O1", "-g", "-Wall", "-Werror"]


def build_lib(d: Path, value: int) -> Path:
    """libval.so returning `value`, put in place by rename (as dpkg does)."""
    tmp = d / f".libval.so.{value}"
    subprocess.run([*CC, "-shared", "-fPIC", f"-DVAL={value}", "-o", tmp, SRC / "libval.c"], check=True)
    os.replace(tmp, d / "libval.so")
    return d / "libval.so"


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    d = tmp_path / "prog"
    d.mkdir()
    build_lib(d, 1)
    subprocess.run([*CC, "-pthread", "-o", d / "main", SRC / "main.c", f"-L{d}", "-lval", "-Wl,-rpath,$ORIGIN"],
                   check=True)
    return d


def record(work: Path, trace: Path, *opts: str, env: dict | None = None) -> bytes:
    r = detrec(*opts, "-o", trace, "--", "./main", cwd=work, env=env)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.startswith(b"val=1 total=400 "), r.stdout
    return r.stdout


def objects(d: Path) -> list[Path]:
    store = d / ".det-objects"
    return sorted(p for p in store.iterdir()) if store.exists() else []


def test_replay_runs_the_kept_library_after_an_update(work: Path, tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    trace = traces / "t.db"
    stdout = record(work, trace)
    store = traces / ".det-objects"
    old = (work / "libval.so").read_bytes()
    lib = build_lib(work, 2)
    assert lib.read_bytes() != old
    assert subprocess.run(["./main"], cwd=work, capture_output=True).stdout.startswith(b"val=2 ")
    for i in range(5):
        r = detreplay(trace)
        err = r.stderr.decode()
        assert r.returncode == 0, f"replay {i + 1}: {err}"
        assert r.stdout == stdout  # val=1, /proc/self/exe, argv[0] and the load addresses as recorded
        notes = [line for line in err.splitlines() if "kept in" in line]
        assert notes == [f"detreplay: note: what the recording ran differs here or is gone ({lib}): replaying the "
                         f"copies kept in {store}"], err
        assert "outcome matches the recording" in err
    assert (work / "libval.so").read_bytes() != old  # nothing changed on this machine
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    kept = objects(traces)
    assert kept and all(stat.S_IMODE(p.stat().st_mode) == 0o600 and p.stat().st_uid == os.geteuid() for p in kept)
    # --host-files: this machine's files, refused as without kept copies
    r = detreplay("--host-files", trace)
    assert r.returncode == 2
    assert r.stderr.decode().splitlines()[-1] == (f"detreplay: {lib} changed since the recording loaded it (its "
                                                  "sha256 differs, or it is gone); --force replays anyway")


@pytest.mark.parametrize("how", ["option", "env"])
def test_opting_out_keeps_nothing_and_replay_refuses(work: Path, tmp_path: Path, how: str) -> None:
    trace = tmp_path / "t.db"
    if how == "option":
        record(work, trace, "--no-keep-libs")
    else:
        record(work, trace, env={**os.environ, "DET_KEEP_LIBS": "0"})
    assert objects(tmp_path) == []
    lib = build_lib(work, 2)
    r = detreplay(trace)
    assert r.returncode == 2
    assert r.stderr.decode().splitlines()[-1] == (f"detreplay: {lib} changed since the recording loaded it (its "
                                                  "sha256 differs, or it is gone); --force replays anyway")


def test_traces_in_one_directory_share_the_kept_copies(work: Path, tmp_path: Path) -> None:
    record(work, tmp_path / "a.db")
    first = objects(tmp_path)
    # the program, libval.so, libc and the loader at least, each once
    assert len(first) >= 4
    record(work, tmp_path / "b.db")
    assert objects(tmp_path) == first
    # a trace of the same program with another library adds that library only
    build_lib(work, 3)
    r = detrec("-q", "-o", tmp_path / "c.db", "--", "./main", cwd=work)
    assert r.returncode == 0, r.stderr.decode()
    assert len(objects(tmp_path)) == len(first) + 1
    # detrec rm removes what no trace left there names, and the store with the last trace
    assert detrec("rm", "-q", tmp_path / "c.db").returncode == 0
    assert objects(tmp_path) == first
    assert detrec("rm", "-q", tmp_path / "a.db").returncode == 0
    assert objects(tmp_path) == first
    assert detrec("rm", "-q", tmp_path / "b.db").returncode == 0
    assert not (tmp_path / ".det-objects").exists()


def test_kept_copies_others_could_change_or_damaged_are_not_run(work: Path, tmp_path: Path) -> None:
    trace = tmp_path / "t.db"
    record(work, trace)
    lib = build_lib(work, 2)
    kept = [p for p in objects(tmp_path) if p.read_bytes()[:4] == b"\x7fELF" and b"libval.c" in p.read_bytes()]
    assert len(kept) == 1, objects(tmp_path)
    refusal = (f"detreplay: {lib} changed since the recording loaded it (its sha256 differs, or it is gone); "
               "--force replays anyway")
    kept[0].chmod(0o620)  # its group could change it: not used
    r = detreplay(trace)
    assert r.returncode == 2 and r.stderr.decode().splitlines()[-1] == refusal, r.stderr.decode()
    kept[0].chmod(0o600)
    data = bytearray(kept[0].read_bytes())
    data[-1] ^= 0xFF
    kept[0].write_bytes(bytes(data))
    r = detreplay(trace)
    assert r.returncode == 2, r.stderr.decode()
    assert r.stderr.decode().splitlines()[-1] == (f"detreplay: {kept[0]}: its content does not match its name "
                                                  "(SHA-256): the kept copy is damaged")
    assert outcome(trace)["exit_code"] == 0


def test_gdb_replays_the_kept_library(work: Path, tmp_path: Path) -> None:
    trace = tmp_path / "t.db"
    stdout = record(work, trace)
    build_lib(work, 2)
    r = detreplay("--gdb", trace, "--", "-nx", "-batch", "-ex", "det goto 200", "-ex", "continue", timeout=180)
    out = r.stdout.decode() + r.stderr.decode()
    assert "det: event 200 of " in out, out
    assert stdout.decode() in out  # val=1, at the recorded addresses
    assert "exited normally" in out


def test_a_program_changed_in_place_replays_from_its_copy(work: Path, tmp_path: Path) -> None:
    """The program written over in place (as `cp` does: same inode), and its
    library too: the kept copies are copies, not links, so they hold what ran."""
    trace = tmp_path / "t.db"
    stdout = record(work, trace)
    for name in ("main", "libval.so"):
        with open(work / name, "r+b") as f:
            f.seek(0, os.SEEK_END)
            f.write(b"\0patched in place")
    r = detreplay(trace)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == stdout
    assert (f"differs here or is gone ({work / 'main'}, {work / 'libval.so'}): replaying the copies kept in "
            f"{tmp_path / '.det-objects'}") in r.stderr.decode()


@pytest.mark.parametrize("store", ["others-may-write", "symlink"])
def test_a_store_others_could_change_is_not_used(work: Path, tmp_path: Path, store: str) -> None:
    """.det-objects that is not the user's alone (mode 0770, or a symlink to
    elsewhere) gets nothing, said in one line; replay then needs the files."""
    d = tmp_path / "traces"
    d.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    if store == "symlink":
        (d / ".det-objects").symlink_to(elsewhere)
    else:
        (d / ".det-objects").mkdir()
        (d / ".det-objects").chmod(0o770)
    r = detrec("-o", d / "t.db", "--", "./main", cwd=work)
    assert r.returncode == 0, r.stderr.decode()
    notes = [ln for ln in r.stderr.decode().splitlines() if "not kept" in ln]
    assert len(notes) == 1 and notes[0].startswith("detrec: note: not kept beside the trace (replay needs them "
                                                   f"unchanged): {d / '.det-objects'}"), r.stderr.decode()
    assert not list(elsewhere.iterdir()) and (store == "symlink" or not list((d / ".det-objects").iterdir()))
    lib = build_lib(work, 2)
    r = detreplay(d / "t.db")
    assert r.returncode == 2
    assert r.stderr.decode().splitlines()[-1] == (f"detreplay: {lib} changed since the recording loaded it (its "
                                                  "sha256 differs, or it is gone); --force replays anyway")


def test_pack_after_an_update_packs_the_kept_copy(work: Path, tmp_path: Path) -> None:
    """`detrec pack` once the library changed: the kept copy goes into the
    trace, which then replays without the store."""
    trace = tmp_path / "t.db"
    stdout = record(work, trace)
    lib = build_lib(work, 2)
    r = detrec("pack", trace)
    assert r.returncode == 0, r.stderr.decode()
    assert "not packed" not in r.stderr.decode(), r.stderr.decode()
    kept = {p.name for p in objects(tmp_path)}
    packed = dict(query(trace, "SELECT path, sha256 FROM packed WHERE type = 'file'"))
    assert packed[str(lib)] in kept
    shutil.rmtree(tmp_path / ".det-objects")
    r = detreplay(trace)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == stdout
