"""det-cc (llvm/) and logical time: the pass's own checks (lit + FileCheck),
ordinary builds with CC=det-cc, atomics as events, strict mode with ticks
and memory points, and logical-time runs that are the same every time."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import BIN, ROOT, Sample, detrec, outcome, program, query, replay_matches, run, sample_bin, samples

DETCC = ROOT / "llvm" / "det-cc"
DETRUN = BIN / "detrun"
PROJECT = ROOT / "tests" / "projects" / "atomics"
REPLAYS = 20
RUNS = 20
ATOMIC_KINDS = (70, 71, 72, 73, 74)
CC_YIELD = 75

# samples built with det-cc (the Makefile's CC_SAMPLES), and the window bugs
# (NAME.mem, built with --sched-points=memory)
CC_SAMPLES = {
    "atomic_spinlock": ["2000"],
    "spsc_queue": ["2000"],
    "seqlock": ["500"],
    "dcl_bug": ["3"],
    "check_then_act_flag": ["8"],
    "lost_update": ["8"],
}
WINDOW_BUGS = {
    "dcl_bug": "BUG: a thread used the configuration",
    "check_then_act_flag": "BUG: job",
    "lost_update": "BUG: lost updates",
}


def _tool(path: Path | str) -> str:
    found = shutil.which(str(path))
    if not found:
        pytest.fail(f"{path} is missing (tools/setup.sh installs it)", pytrace=False)
    return found


def det_cc(*args: str | os.PathLike[str], cwd: Path | None = None) -> None:
    r = run([DETCC, *args], cwd=cwd)
    assert r.returncode == 0, r.stderr.decode()


def test_pass_lit_filecheck() -> None:
    """The pass's IR tests (llvm/test/*.ll), run by lit with LLVM's FileCheck."""
    r = run([_tool(BIN / "lit"), "-v", ROOT / "llvm" / "test"], timeout=300)
    out = r.stdout.decode() + r.stderr.decode()
    assert r.returncode == 0, out
    assert "Passed: 4" in out, out


def test_det_cc_bad_option(tmp_path: Path) -> None:
    r = run([DETCC, "--sched-points=everything", "-c", "x.c"], cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.decode().strip() == "det-cc: --sched-points must be none or memory, not 'everything'"


def _build_project(kind: str, tmp: Path) -> Path:
    src = tmp / "src"
    shutil.copytree(PROJECT, src, ignore=shutil.ignore_patterns("make", "cmake", "autotools"))
    for f in (PROJECT / kind).iterdir():
        shutil.copy(f, src / f.name)
    env = dict(os.environ, CC=str(DETCC))
    if kind == "make":
        r = run(["make", f"CC={DETCC}"], cwd=src, env=env, timeout=300)
        exe = src / "counter_demo"
    elif kind == "cmake":
        build = tmp / "build"
        r = run([_tool("cmake"), "-S", src, "-B", build, f"-DCMAKE_C_COMPILER={DETCC}"], env=env, timeout=300)
        assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
        r = run([_tool("cmake"), "--build", build], env=env, timeout=300)
        exe = build / "counter_demo"
    else:
        r = run([_tool("autoreconf"), "-i"], cwd=src, timeout=300)
        assert r.returncode == 0, r.stderr.decode()
        r = run(["./configure", f"CC={DETCC}"], cwd=src, env=env, timeout=300)
        assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
        r = run(["make"], cwd=src, env=env, timeout=300)
        exe = src / "counter_demo"
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    assert exe.exists()
    return exe


@pytest.mark.parametrize("kind", ["make", "cmake", "autotools"])
def test_ordinary_build(kind: str, tmp_path: Path) -> None:
    """CC=det-cc in a Makefile, CMake (with the library shared) and autotools
    project: the program runs natively, and under detrec its atomics are
    events that replay."""
    exe = _build_project(kind, tmp_path)
    native = run([exe])
    assert native.returncode == 0 and native.stdout == b"total 3000\n", native
    trace = tmp_path / "run.db"
    r = detrec("-o", trace, "--", exe)
    assert r.returncode == 0, r.stderr.decode()
    kinds = dict(query(trace, "SELECT kind, count(*) FROM events GROUP BY kind"))
    assert kinds.get(72) == 2000, kinds  # every atomic_fetch_add, the library's too
    assert kinds.get(70) == 1, kinds     # the final atomic_load
    replay_matches(trace, [], 3)


@pytest.mark.parametrize("name", list(CC_SAMPLES), ids=list(CC_SAMPLES))
def test_cc_sample_strict_replays(name: str, tmp_path: Path) -> None:
    """Each det-cc sample, recorded in strict mode, replays 20/20 the same."""
    trace = tmp_path / f"{name}.db"
    r = detrec("--strict", "-o", trace, "--", sample_bin(name), *CC_SAMPLES[name])
    assert trace.exists(), r.stderr.decode()
    # (CI once saw a trace of this test without thread T0: what detrec said then)
    assert query(trace, "SELECT count(*) FROM threads WHERE tid = 0") == [(1,)], r.stderr.decode()
    assert int(dict(query(trace, "SELECT key, value FROM meta"))["preemptions"]) == 0
    replay_matches(trace, [], REPLAYS)


def test_spinning_thread_yields_at_ticks(tmp_path: Path) -> None:
    """A thread spinning on a plain flag with no call: built with det-cc,
    strict mode hands the turn on at the end of a tick quantum (a CC_YIELD
    event) instead of the watchdog (a PREEMPT, not exact), and replays."""
    exe = tmp_path / "spin_wait"
    det_cc("-O2", "-pthread", "-o", exe, ROOT / "tests" / "programs" / "spin_wait.c")
    trace = tmp_path / "spin.db"
    r = detrec("--strict", "--timeout", "30", "-o", trace, "--", exe)
    assert r.returncode == 0, r.stderr.decode()
    meta = dict(query(trace, "SELECT key, value FROM meta"))
    assert int(meta["preemptions"]) == 0, meta
    assert "not exact" not in (outcome(trace)["message"] or "")
    yields = query(trace, "SELECT tid, aux, result FROM events WHERE kind = ?", (CC_YIELD,))
    assert yields and all(aux == 0 and res > 0 for _, aux, res in yields), yields
    replay_matches(trace, [], REPLAYS)


@pytest.mark.parametrize("name", list(WINDOW_BUGS), ids=list(WINDOW_BUGS))
def test_window_bug_needs_memory_points(name: str, tmp_path: Path) -> None:
    """A bug between two plain accesses with no call between them: PCT over
    det-cc's memory points finds it within 100 seeded runs; the same source
    built without memory points (switches only at calls and loop ticks)
    passes all 100. Seeds 1..100 fix both outcomes."""
    args = CC_SAMPLES[name]
    found = tmp_path / "found.db"
    r = detrec("--chaos", "--strict", "--seed", "1", "--runs", "100", "-o", found, "--",
               sample_bin(f"{name}.mem"), *args, timeout=900)
    err = r.stderr.decode()
    assert r.returncode == 1 and "failure after" in err, err
    assert WINDOW_BUGS[name].encode() in outcome(found)["stdout_tail"]
    replay_matches(found, [], 5)

    missed = tmp_path / "missed.db"
    r = detrec("--chaos", "--strict", "--seed", "1", "--runs", "100", "-o", missed, "--",
               sample_bin(name), *args, timeout=900)
    err = r.stderr.decode()
    assert r.returncode == 0 and "no failure in 100 run(s)" in err, err


def detrun(*args: str | os.PathLike[str]) -> tuple[int, bytes]:
    r = run([_tool(DETRUN), "--timeout", "60", *args], timeout=120)
    return r.returncode, r.stdout


def _same_every_run(cmd: list[str | os.PathLike[str]]) -> tuple[int, bytes]:
    first = detrun(*cmd)
    assert first[0] != 124, f"{cmd}: timed out"
    for i in range(RUNS - 1):
        again = detrun(*cmd)
        assert again == first, f"{cmd}: run {i + 2} differs:\n{again[1][-300:]!r}\nfirst:\n{first[1][-300:]!r}"
    return first


@pytest.mark.parametrize("s", [s for s in samples() if s.logical is not None], ids=lambda s: s.name)
def test_logical_same_every_run(s: Sample, tmp_path: Path) -> None:
    """Samples without inputs from the world (and race-free, or with their
    races ordered by det-cc memory points): 20 logical-time runs, one
    output."""
    _same_every_run([s.path, *s.logical])


@pytest.mark.parametrize("name,args", [("racy_counter", ["300"]), ("flag_handoff", ["30"])])
def test_logical_racy_built_with_memory_points(name: str, args: list[str], tmp_path: Path) -> None:
    """Racy samples: natively and in plain logical time their output varies;
    built with det-cc --sched-points=memory, every shared access takes its
    turn and 20 logical-time runs give one output."""
    exe = tmp_path / name
    det_cc("--sched-points=memory", "-O2", "-pthread", "-o", exe, ROOT / "samples" / f"{name}.c")
    _same_every_run([exe, *args])


def test_logical_seed_trace_replay_diff(tmp_path: Path) -> None:
    """detrec --logical: the same schedule every run (detdiff finds the traces
    identical), another one with --seed, and the trace replays."""
    exe = sample_bin("bounded_buffer")
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    for t in (a, b):
        r = detrec("--logical", "-o", t, "--", exe, "300")
        assert r.returncode == 0, r.stderr.decode()
    d = run([BIN / "detdiff", a, b])
    assert b"Identical: the same schedule" in d.stdout, d.stdout.decode()
    replay_matches(a, [], 3)
    differs = 0
    for seed in (1, 2, 3):
        s1, s2 = tmp_path / f"s{seed}.db", tmp_path / f"s{seed}-again.db"
        for t in (s1, s2):
            detrec("--logical", "--seed", str(seed), "-o", t, "--", exe, "300")
        same = run([BIN / "detdiff", s1, s2])
        assert b"Identical: the same schedule" in same.stdout, same.stdout.decode()
        differs += b"Identical" not in run([BIN / "detdiff", a, s1]).stdout
    assert differs, "no seed gave another schedule"
    meta = dict(query(a, "SELECT key, value FROM meta"))
    assert meta["mode"] == "logical"


def test_logical_handoffs_same_every_run() -> None:
    """A mutex handed around 80,000 times: 40 logical-time runs, one order of
    holders (a woken thread once took its turn by its clock from before its
    waker raised it, and about one run in ten differed)."""
    exe = program("lt_handoff")
    first = detrun(exe, "4", "20000")
    assert first[0] == 0 and first[1].startswith(b"order "), first
    outputs = {detrun(exe, "4", "20000") for _ in range(39)}
    assert outputs == {first}, f"{len(outputs)} different outcomes: {sorted(outputs)[:3]}"
