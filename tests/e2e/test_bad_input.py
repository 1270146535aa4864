"""Bad input gets one clear line and a non-zero exit, never a traceback."""

from __future__ import annotations

import os
import shutil
import sqlite3
import struct
from pathlib import Path

import pytest

from conftest import ROOT, detrec, detreplay, outcome, program, run


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
    """Not refused: recorded through its system calls (detrec --ptrace,
    tests/e2e/test_ptrace.py), with one line saying so."""
    r = detrec("-o", tmp_path / "x.db", program("hello_static"))
    assert r.returncode == 0, r.stderr.decode()
    said = [ln for ln in r.stderr.decode().splitlines() if "statically linked" in ln]
    assert len(said) == 1 and "--ptrace" in said[0], r.stderr.decode()


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


def i386_program(path: Path) -> Path:
    """A 32-bit x86 program (static, a few instructions) that writes "i386
    ran" and exits 0: Linux runs it, and its loader would skip libdet.so."""
    base, msg = 0x08048000, b"i386 ran\n"
    code_at = 52 + 32
    code = (b"\xb8\x04\x00\x00\x00\xbb\x01\x00\x00\x00"  # eax = write, ebx = 1
            + b"\xb9" + struct.pack("<I", base + code_at + 31)  # ecx = msg (after the 31 bytes of code)
            + b"\xba" + struct.pack("<I", len(msg)) + b"\xcd\x80"  # edx = its length; int 0x80
            + b"\xb8\x01\x00\x00\x00\x31\xdb\xcd\x80")  # exit(0)
    assert len(code) == 31
    size = code_at + len(code) + len(msg)
    header = (b"\x7fELF\x01\x01\x01" + bytes(9)
              + struct.pack("<HHIIIIIHHHHHH", 2, 3, 1, base + code_at, 52, 0, 0, 52, 32, 1, 0, 0, 0)
              + struct.pack("<IIIIIIII", 1, 0, base, base, size, size, 5, 0x1000))
    path.write_bytes(header + code + msg)
    path.chmod(0o755)
    return path


def with_foreign_loader(path: Path) -> Path:
    """hello, with a loader of its own instead of glibc's (PT_INTERP names
    path.ld, a static x86-64 program that writes "foreign loader ran" and
    exits 0): it runs, and libdet.so is never loaded into it."""
    base, msg = 0x10000000, b"foreign loader ran\n"
    code_at = 64 + 56
    code = (b"\xb8\x01\x00\x00\x00\xbf\x01\x00\x00\x00"  # eax = write, edi = 1
            + b"\x48\x8d\x35" + struct.pack("<i", 16)  # rsi = msg (after the 16 bytes of code left)
            + b"\xba" + struct.pack("<I", len(msg)) + b"\x0f\x05"  # edx = its length; syscall
            + b"\xb8\xe7\x00\x00\x00\x31\xff\x0f\x05")  # exit_group(0)
    assert len(code) == 17 + 16
    size = code_at + len(code) + len(msg)
    loader = path.with_name(path.name + ".ld")
    loader.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(9)
                       + struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, base + code_at, 64, 0, 0, 64, 56, 1, 0, 0, 0)
                       + struct.pack("<IIQQQQQQ", 1, 5, 0, base, base, size, size, 0x1000) + code + msg)
    loader.chmod(0o755)
    elf = bytearray(program("hello").read_bytes())
    phoff, = struct.unpack_from("<Q", elf, 32)
    phentsize, phnum = struct.unpack_from("<HH", elf, 54)
    name = bytes(loader) + b"\0"
    for i in range(phnum):
        at = phoff + i * phentsize
        if struct.unpack_from("<I", elf, at)[0] == 3:  # PT_INTERP: its name, now at the end of the file
            struct.pack_into("<QQQQQ", elf, at + 8, len(elf), 0, 0, len(name), len(name))
    path.write_bytes(bytes(elf) + name)
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("how", ["thread", "vm", "vfork", "syscall_thread"])
def test_raw_clone_thread_refused(how: str, tmp_path: Path) -> None:
    """A task made with clone() or syscall(SYS_clone) that shares the
    program's memory would share det's state in it: det stops the program
    at the call, in one line naming it and where it is, and the trace says
    so (its replay stops there too)."""
    trace = tmp_path / "t.db"
    r = detrec("-o", trace, program("raw_clone"), how, timeout=60)
    assert r.returncode == 125, r.stderr.decode()
    line = one_line_error(r, "detrec")
    call = "syscall(SYS_clone)" if how == "syscall_thread" else "clone()"
    assert f"det stopped the program: raw {call} thread in main at raw_clone.c:" in line, line
    assert "CLONE_VM" in line and "pthread_create only" in line, line
    assert len(r.stderr.splitlines()) == 1, r.stderr.decode()
    assert r.stdout == b""  # neither task went on
    assert outcome(trace)["message"].startswith(f"det stopped the program: raw {call} thread")
    rr = detreplay(trace)
    assert rr.returncode == 125 and b"outcome matches" not in rr.stderr, rr.stderr.decode()
    assert f"raw {call} thread".encode() in rr.stderr


def test_child_that_is_not_x86_64_refused(tmp_path: Path) -> None:
    """A 32-bit child would run without det (its loader skips the 64-bit
    libdet.so): refused at its exec, never recorded as a run that
    replays."""
    prog = i386_program(tmp_path / "i386")
    assert run([prog]).stdout == b"i386 ran\n"  # (this machine runs it)
    trace = tmp_path / "c.db"
    r = detrec("-o", trace, "sh", "-c", f"{prog}; echo after", timeout=60)
    assert r.returncode == 125, r.stderr.decode()
    line = one_line_error(r, "detrec")
    assert "execve(" in line and str(prog) in line and "not an x86-64 program" in line, line
    assert b"i386 ran" not in r.stdout
    rr = detreplay(trace)
    assert b"outcome matches" not in rr.stderr, rr.stderr.decode()


def test_child_that_never_starts_det_refused(tmp_path: Path) -> None:
    """An exec'd image that never started det's runtime (here, a program
    whose loader is not glibc's) ran unrecorded: the recording says so in
    one line, whether its parent reaps it or not, and no replay says the
    outcome matches."""
    prog = with_foreign_loader(tmp_path / "foreign")
    assert run([prog]).stdout == b"foreign loader ran\n"
    for name, cmd in (("reaped", f"{prog}; echo after"), ("exec", f"exec {prog}")):
        trace = tmp_path / f"{name}.db"
        r = detrec("-o", trace, "sh", "-c", cmd, timeout=60)
        assert r.returncode == 125, (name, r.stderr.decode())
        line = one_line_error(r, "detrec")
        assert "det stopped the program: process " in line, line
        assert "exec'd a program that never started det's runtime" in line, line
        assert b"after" not in r.stdout
        rr = detreplay(trace)
        assert b"outcome matches" not in rr.stderr, (name, rr.stderr.decode())


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
    # (without the copies detrec keeps, which replay would run instead: tests/e2e/test_keep_libs.py)
    assert detrec("--no-keep-libs", "-o", trace, prog, "x").returncode == 7
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
