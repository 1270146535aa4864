"""detcheck PROGRAM (det.check): what det can reproduce in a binary, and in
which mode, on programs of our own built both ways (gcc and det-cc), a
static one and one calling syscall() with a number det refuses; and the
one line detrec says when its mode will not see something.

Source lines are checked against the lines the test programs mark
("atomic here", "syscall here"...), not against numbers written here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import BIN, PROGRAMS, ROOT, _require, detrec, run

DETCHECK = BIN / "detcheck"
SOURCES = ROOT / "tests" / "programs"


def detcheck(*args: str | os.PathLike[str]) -> subprocess.CompletedProcess:
    return run([_require(DETCHECK), *args], timeout=60)


def report(program: str) -> dict:
    r = detcheck("--json", _require(PROGRAMS / program))
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)


def marked(source: str, marker: str) -> set[int]:
    lines = (SOURCES / source).read_text().splitlines()
    found = {i for i, line in enumerate(lines, 1) if marker in line}
    assert found, f"{source} marks no line with {marker!r}"
    return found


def finding(rep: dict, key: str) -> dict:
    found = [f for f in rep["findings"] if f["key"] == key]
    assert found, f"no {key} finding in {[f['key'] for f in rep['findings']]}"
    return found[0]


def levels(rep: dict) -> dict[str, str]:
    return {m: v["level"] for m, v in rep["verdicts"].items()}


def test_spin_lock_built_with_gcc():
    rep = report("detcheck_spin")
    assert not rep["static"] and not rep["det_cc"]
    atomic = finding(rep, "atomic")
    sites = atomic["sites"]
    assert {s["line"] for s in sites} == marked("detcheck_spin.c", "/* atomic here */")
    assert all(s["file"] == "detcheck_spin.c" for s in sites)
    assert {s["instruction"].split()[0] for s in sites} == {"xchg", "lock"}
    assert levels(rep) == {"default": "partly", "relaxed": "partly", "strict": "note", "logical": "partly"}


def test_spin_lock_built_with_det_cc():
    rep = report("detcheck_spin.detcc")
    assert rep["det_cc"]
    atomic = finding(rep, "atomic")
    lines = [s["line"] for s in atomic["sites"]]  # (clang writes no .debug_aranges: each unit's ranges)
    assert lines and set(lines) <= marked("detcheck_spin.c", "/* atomic here */"), lines
    assert {v["level"] for v in atomic["modes"].values()} == {"ok"}
    assert levels(rep) == {m: "ok" for m in ("default", "relaxed", "strict", "logical")}


def test_raw_instructions_with_source_lines():
    rep = report("detcheck_insns")
    raw = finding(rep, "raw-syscall")["sites"]
    assert [(s["number"], s["detail"]) for s in raw] == [(39, "getpid")]
    assert raw[0]["line"] in marked("detcheck_insns.c", "/* syscall here */")
    for kind in ("rdtsc", "cpuid", "rdrand"):
        sites = finding(rep, kind)["sites"]
        assert [s["line"] for s in sites] == sorted(marked("detcheck_insns.c", f"/* {kind} here */")), kind
    assert levels(rep)["default"] == "partly"  # the raw getpid and rdrand are not recorded
    assert finding(rep, "rdtsc")["modes"]["default"]["level"] == "note"  # trapped and recorded


def test_without_debug_info_sites_are_function_and_offset(tmp_path: Path):
    """objcopy --strip-debug: no lines, the function symbol and the offset;
    strip: the address (and det-cc's import still says det-cc)."""
    objcopy = shutil.which("objcopy")
    assert objcopy, "objcopy is missing (binutils)"
    for prog, how in (("detcheck_spin", "--strip-debug"), ("detcheck_spin.detcc", "--strip-all")):
        path = tmp_path / f"{prog}{how}"
        r = run([objcopy, how, _require(PROGRAMS / prog), path])
        assert r.returncode == 0, r.stderr.decode()
        rep = json.loads(detcheck("--json", path).stdout)
        sites = finding(rep, "atomic")["sites"]
        assert sites and all(s["file"] is None and s["line"] is None for s in sites)
        if how == "--strip-debug":
            assert {s["function"] for s in sites} == {"work"} and all(s["offset"] > 0 for s in sites)
            out = detcheck(path).stdout.decode()
            assert f"work+{sites[0]['offset']:#x}: " in out, out
        else:
            assert rep["det_cc"] and all(s["function"] is None for s in sites)


def test_static_program():
    rep = report("hello_static")
    assert rep["static"] and rep["interpreter"] is None
    assert finding(rep, "static")
    assert set(levels(rep).values()) == {"no"}


def test_syscall_with_a_number_det_refuses():
    rep = report("rawsyscall")
    refused = finding(rep, "unsupported-syscall")["sites"]
    assert [s["detail"] for s in refused] == ["syscall(io_uring_setup)"]
    assert refused[0]["line"] in marked("rawsyscall.c", "syscall(SYS_io_uring_setup")
    assert set(levels(rep).values()) == {"no"}


def test_text_output():
    r = detcheck(_require(PROGRAMS / "detcheck_spin"))
    assert r.returncode == 0, r.stderr.decode()
    out = r.stdout.decode()
    for line in marked("detcheck_spin.c", "/* atomic here */"):
        assert f"detcheck_spin.c:{line} " in out
    verdicts = out.split("verdicts:\n", 1)[1].splitlines()
    assert [v.split()[0] for v in verdicts] == ["default", "relaxed", "strict", "logical"]
    assert verdicts[0].split(None, 1)[1].startswith("partly reproducible: 2 atomic instructions outside det-cc")


def test_without_section_headers(tmp_path: Path):
    """A program whose section headers are gone (sstrip) is read as the
    loader reads it: its executable PT_LOADs, its PT_DYNAMIC."""
    data = bytearray((_require(PROGRAMS / "detcheck_spin")).read_bytes())
    data[0x28:0x30] = bytes(8)  # e_shoff
    data[0x3A:0x40] = bytes(6)  # e_shentsize, e_shnum, e_shstrndx
    path = tmp_path / "sstripped"
    path.write_bytes(bytes(data))
    rep = json.loads(detcheck("--json", path).stdout)
    assert rep["needed"] == ["libc.so.6"] and [f["key"] for f in rep["findings"]] == ["atomic"]
    assert len(finding(rep, "atomic")["sites"]) == len(report("detcheck_spin")["findings"][0]["sites"])


@pytest.mark.parametrize("what", ["missing", "text", "aarch64", "directory", "cut"])
def test_bad_input_is_one_line(tmp_path: Path, what: str):
    path = tmp_path / "prog"
    if what == "text":
        path.write_text("#!/bin/sh\necho hi\n")
    elif what == "aarch64":
        data = bytearray(Path("/bin/true").read_bytes())
        data[18:20] = (183).to_bytes(2, "little")  # EM_AARCH64
        path.write_bytes(bytes(data))
    elif what == "directory":
        path.mkdir()
    elif what == "cut":
        path.write_bytes(Path("/bin/true").read_bytes()[:3000])  # the header, not the tables it points to
    r = detcheck(path)
    err = r.stderr.decode()
    assert r.returncode == 2 and r.stdout == b""
    assert len(err.splitlines()) == 1 and err.startswith("detcheck: ") and "Traceback" not in err, err
    assert {"missing": "no such file", "text": "not an ELF file", "aarch64": "not an x86-64 program",
            "directory": "is a directory", "cut": "damaged ELF file"}[what] in err


def test_large_program_scans_fast():
    """gdb (6 MB of code here): places to look at are found by a regular
    expression and only those decoded, ~1 s of CPU; a sweep of every
    instruction took 11 s on this machine. CPU time, not wall: a loaded
    machine stretches the latter."""
    gdb = shutil.which("gdb")
    assert gdb, "gdb is missing (det's gdb tests need it too)"
    r = detcheck("--json", gdb)
    assert r.returncode == 0, r.stderr.decode()
    rep = json.loads(r.stdout)
    assert rep["scan"]["code_bytes"] > 4 << 20 and rep["scan"]["cpu_seconds"] < 3, rep["scan"]


def _unseen(stderr: bytes) -> list[str]:
    return [line for line in stderr.decode().splitlines() if "mode does not see" in line]


def test_detrec_warns_once(tmp_path: Path):
    """Each recording checks the program before it runs (the first of a
    build computes it, the next read the cache) and patches its
    lock-prefixed atomics, saying so in one line, and what the mode will not
    see in another (its xchg); told --no-patch-atomics, that line counts
    both. Strict mode and a det-cc build see the
    atomics, so no line."""
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    spin = _require(PROGRAMS / "detcheck_spin")
    for n in range(2):
        r = detrec("-o", tmp_path / f"spin{n}.db", "--", spin, env=env)
        assert r.returncode == 0, r.stderr.decode()
        lines = r.stderr.decode().splitlines()
        result = next(i for i, line in enumerate(lines) if "trace saved to" in line)
        patched = [i for i, line in enumerate(lines) if "1 atomic instruction of its own code patched" in line]
        assert patched and patched[0] < result, lines
        # (its other one is an xchg, a seq_cst store, which detrec leaves unless told --patch-atomics)
        unseen = _unseen(r.stderr)
        assert len(unseen) == 1 and "1 atomic instruction outside det-cc" in unseen[0], lines
        assert "`detrec --patch-atomics` records them (xchg" in unseen[0], lines
    assert (tmp_path / "cache" / "det" / "detcheck-quick.json").exists()
    r = detrec("--no-patch-atomics", "-o", tmp_path / "plain.db", "--", spin, env=env)
    lines = r.stderr.decode().splitlines()
    unseen = _unseen(r.stderr)
    assert len(unseen) == 1 and "2 atomic instructions outside det-cc" in unseen[0], lines
    assert "without --no-patch-atomics detrec records the lock-prefixed ones, with --patch-atomics all" \
        in unseen[0], lines
    assert lines.index(unseen[0]) < next(i for i, line in enumerate(lines) if "trace saved to" in line), lines
    r = detrec("--strict", "--no-patch-atomics", "-o", tmp_path / "strict.db", "--", spin, env=env)
    assert r.returncode == 0 and not _unseen(r.stderr), r.stderr.decode()
    r = detrec("-o", tmp_path / "cc.db", "--", _require(PROGRAMS / "detcheck_spin.detcc"), env=env)
    assert r.returncode == 0 and not _unseen(r.stderr), r.stderr.decode()
    r = detrec("--strict", "-o", tmp_path / "insns.db", "--", _require(PROGRAMS / "detcheck_insns"), env=env)
    unseen = _unseen(r.stderr)
    assert len(unseen) == 1 and "1 raw syscall instruction (getpid)" in unseen[0], r.stderr.decode()
    r = detrec("-q", "-o", tmp_path / "quiet.db", "--", spin, env=env)
    assert r.returncode == 0 and r.stderr == b""


def test_rdrand_named_when_recording_and_when_the_replay_differs(tmp_path: Path):
    """A program that prints a number the CPU drew (rdrand): no recording
    holds it (no preload sees the instruction; CPUID faulting, which would
    let det hide it, is not on these machines), so every replay prints
    another. detrec says so in one line before the program runs, in every
    mode, and detreplay names it as the cause, not a data race."""
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    prog = _require(PROGRAMS / "rdrand_draw")
    for mode in ([], ["--strict"]):
        trace = tmp_path / f"rd{len(mode)}.db"
        r = detrec(*mode, "-o", trace, "--", prog, env=env)
        assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
        unseen = _unseen(r.stderr)
        assert len(unseen) == 1 and "1 rdrand/rdseed instruction (the CPU's random numbers" in unseen[0], \
            r.stderr.decode()
        rr = run([BIN / "detreplay", trace], env=env, timeout=120)
        assert rr.returncode != 0 and rr.stdout != r.stdout, rr.stderr.decode()
        assert "rdrand_draw: its code has 1 rdrand/rdseed instruction: the CPU's random numbers are not in " \
               "the trace" in rr.stderr.decode(), rr.stderr.decode()
