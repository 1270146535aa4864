"""Shared helpers for det's tests.

Rules: tests run the real tools (.venv/bin/detrec, detreplay) on real
programs; nothing is mocked. A tool or file the tests need that is missing
fails the test loudly, never skips it.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Recordings made without -o land in a trace directory of the test session's
# own, never in the user's (~/.local/share/det/traces).
_TRACE_DIR = tempfile.mkdtemp(prefix="det-test-traces-")
os.environ["DET_TRACE_DIR"] = _TRACE_DIR
atexit.register(shutil.rmtree, _TRACE_DIR, True)
# Programs run as from a user's shell: `make test`'s own variables would make a
# recorded make print "Entering directory" (MAKELEVEL) or join make's jobserver.
for _var in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES"):
    os.environ.pop(_var, None)
BIN = ROOT / ".venv" / "bin"
DETREC = BIN / "detrec"
DETREPLAY = BIN / "detreplay"
SAMPLES = ROOT / "samples" / "bin"
PROGRAMS = ROOT / "tests" / "bin"


def _require(path: Path) -> Path:
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make` first", pytrace=False)
    return path


def run(cmd: list[str | os.PathLike[str]], timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], capture_output=True, timeout=timeout, **kw)


def detrec(*args: str | os.PathLike[str], timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    return run([_require(DETREC), *args], timeout=timeout, **kw)


def detreplay(*args: str | os.PathLike[str], timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    return run([_require(DETREPLAY), *args], timeout=timeout, **kw)


def sample_bin(name: str) -> Path:
    return _require(SAMPLES / name)


def program(name: str) -> Path:
    return _require(PROGRAMS / name)


def source_line(path: Path, text: str) -> int:
    """The number of the one line of a source file that contains text."""
    found = [i + 1 for i, ln in enumerate(path.read_text().splitlines()) if text in ln]
    assert len(found) == 1, (path.name, text, found)
    return found[0]


def replays_identically(trace: Path, recorded: bytes, n: int = 10, mode: tuple[str, ...] = ()) -> None:
    """Replay `trace` n times (-q): each exits 0 and prints exactly `recorded`."""
    for i in range(n):
        rr = detreplay("-q", *mode, trace, timeout=120)
        assert rr.returncode == 0, f"replay {i + 1} {mode}: {rr.stderr.decode()}"
        assert rr.stdout == recorded, f"replay {i + 1} {mode}: output differs\n{rr.stdout!r}\n{recorded!r}"


def replays_in_each_mode(tmp_path: Path, name: str, want: bytes, relaxed: int) -> None:
    """Test program `name` prints `want` recorded in the default mode and in
    each replay of that (3 ordered, `relaxed` relaxed); recorded in strict
    mode too, and replayed twice."""
    trace = tmp_path / f"{name}.db"
    r = detrec("-q", "-o", trace, "--", program(name))
    assert (r.returncode, r.stdout) == (0, want), r.stderr.decode()
    replays_identically(trace, want, 3)
    replays_identically(trace, want, relaxed, ("--relaxed",))
    strict = tmp_path / f"{name}-strict.db"
    r = detrec("-q", "--strict", "-o", strict, "--", program(name))
    assert (r.returncode, r.stdout) == (0, want), r.stderr.decode()
    replays_identically(strict, want, 2)


def case_replays(tmp_path: Path, prog: str, case: str, mode: tuple[str, ...], n: int = 3) -> None:
    """Record program `prog` with argument `case` (in mode) in tmp_path: it
    exits 0, as it does when it sees what Linux does; then replay it n
    times, each exiting 0 with the recorded stdout."""
    trace = tmp_path / f"{case}.db"
    r = detrec("-q", *mode, "-o", trace, "--", program(prog), case, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, f"recorded: {r.stdout!r} {r.stderr.decode()}"
    assert r.stdout, "the program said nothing"
    for i in range(n):
        rr = detreplay("-q", trace, cwd=tmp_path, timeout=120)
        assert rr.returncode == 0, f"replay {i + 1}: {rr.stderr.decode()}"
        assert rr.stdout == r.stdout, f"replay {i + 1}: {rr.stdout!r}, recorded {r.stdout!r}"


def replay_matches(trace: Path, mode: list[str], n: int) -> None:
    """Replay `trace` n times: each replay ends as the recording did, says
    so, and prints the same output."""
    rec = outcome(trace)
    want_status = 124 if rec["status"] == "timeout" else (
        128 + rec["signal"] if rec["signal"] is not None else rec["exit_code"])
    for i in range(n):
        r = detreplay(*mode, trace)
        err = r.stderr.decode()
        assert r.returncode == want_status, f"replay {i + 1} {mode}: exit {r.returncode}, want {want_status}\n{err}"
        assert "outcome matches the recording" in err, f"replay {i + 1} {mode}:\n{err}"
        if rec["status"] != "timeout":
            assert r.stdout.endswith(rec["stdout_tail"]), f"replay {i + 1} {mode}: stdout differs"


@dataclass
class Sample:
    name: str
    binary: str
    args: list[str]
    test_args: list[str]
    bug: str | None
    hang: bool
    strict: bool = False
    logical: list[str] | None = None  # arguments of a logical-time test run (None: not tested there)

    @property
    def path(self) -> Path:
        return sample_bin(self.binary)


def samples() -> list[Sample]:
    data = json.loads((ROOT / "samples" / "manifest.json").read_text())
    return [
        Sample(s["name"], s.get("binary", s["name"]), s["args"], s["test_args"], s["bug"], s["hang"],
               s.get("strict", False), s.get("logical"))
        for s in data["samples"]
    ]


def outcome(trace: Path) -> dict:
    db = sqlite3.connect(trace)
    cur = db.execute("SELECT * FROM outcome")
    row = cur.fetchone()
    names = [d[0] for d in cur.description]
    db.close()
    assert row is not None, f"{trace} has no outcome"
    return dict(zip(names, row, strict=True))


def program_pid(*argv: str | os.PathLike[str]) -> int:
    """The pid of the program running with exactly this command line (not
    detrec or its watchdog, whose command lines hold it too: pids wrap
    around quickly here, so the newest of those can be either)."""
    line = " ".join(re.escape(str(a)) for a in argv)
    return int(subprocess.check_output(["pgrep", "-n", "-x", "-f", line]))


def query(trace: Path, sql: str, args: tuple = ()) -> list[tuple]:
    db = sqlite3.connect(trace)
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


def reseal(trace: Path) -> None:
    """A test that edits a trace on purpose (to make an unusual but valid
    one) seals it again, as det's own writers do: det.validate refuses a
    trace whose content no longer matches its checksum."""
    from det.seal import seal

    db = sqlite3.connect(trace)
    try:
        seal(db)
    finally:
        db.close()


def move_events(trace: Path, order: list[int], dts: dict[int, int] | None = None) -> None:
    """Renumber a stretch of the trace's events by hand (an order det could
    have recorded): the events whose seqs `order` lists get the seqs from
    min(order) on, in that order, with their input data; dts gives new time
    deltas by old seq. The objects' first uses and the marks follow, the
    recorded schedule digest goes, and the trace is sealed again."""
    from det import schema

    base = min(order)
    db = sqlite3.connect(trace)
    try:
        with db:  # the stored tables (events is a view over event_rows)
            for table in ("event_rows", "data"):
                db.executemany(f"UPDATE {table} SET seq = ? WHERE seq = ?", [(-1 - old, old) for old in order])
                db.executemany(f"UPDATE {table} SET seq = ? WHERE seq = ?",
                               [(base + i, -1 - old) for i, old in enumerate(order)])
            if dts:
                db.executemany("UPDATE event_rows SET dts = ? WHERE seq = ?",
                               [(dts[old], base + i) for i, old in enumerate(order)])
            db.execute("UPDATE objects SET first_seq = coalesce((SELECT min(seq) FROM events "
                       "WHERE obj = objects.obj), first_seq)")
            db.execute("DELETE FROM meta WHERE key = 'schedule_digest'")  # another order: hashed from its rows
        db.executescript(schema.REBUILD_MARKS)
    finally:
        db.close()
    reseal(trace)


def build_packed_program(d: Path) -> Path:
    """tests/programs/packed/ built into d (created): the program, a library
    it links (RUNPATH $ORIGIN), one it dlopens and two data files with the
    same content. Returns the program."""
    src = ROOT / "tests" / "programs" / "packed"
    d.mkdir(parents=True)
    cc = ["gcc", "-O1", "-g", "-Wall", "-Werror"]
    for lib in ("foo", "bar"):
        subprocess.run([*cc, "-shared", "-fPIC", "-o", d / f"lib{lib}.so", src / f"lib{lib}.c"], check=True)
    subprocess.run([*cc, "-pthread", "-o", d / "main", src / "main.c", f"-L{d}", "-lfoo", "-Wl,-rpath,$ORIGIN",
                    "-ldl"], check=True)
    (d / "data.txt").write_text("the data\n")
    (d / "copy.txt").write_text("the data\n")
    return d / "main"


def convert_each_way(tmp_path: Path, prog: str, args: list[str], env: str) -> list[tuple[Path, object]]:
    """Capture one run of a test program (inputs_tour) or of bench's
    mutex_counter, then convert copies of its capture log with the converter
    switch `env` set to 0 and to 1: [(trace, ConvertStats)] for each."""
    from det import native
    from det.record.engine import Options, capture_run

    exe = str(program(prog)) if prog != "mutex_counter" else str(ROOT / "bench" / "bin" / "mutex_counter")
    c = capture_run(exe, [exe, *args], tmp_path / "t.db", Options())
    out = []
    for value in ("0", "1"):
        db, log = tmp_path / f"{env}{value}.db", tmp_path / f"{env}{value}.db.log"
        shutil.copy(c.writer.path, db)
        shutil.copy(c.writer.log, log)
        os.environ[env] = value
        try:
            out.append((db, native.convert(log, db)))
        finally:
            del os.environ[env]
    return out


def killed_recording(tmp_path: Path) -> Path:
    """Record the lock-spinning program, SIGKILL detrec mid-run; returns the
    capture log it left."""
    trace = tmp_path / "lost.db"
    p = subprocess.Popen([str(DETREC), "-o", str(trace), str(program("spinner"))],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline() == b"running\n"
    time.sleep(0.5)
    p.send_signal(signal.SIGKILL)
    p.wait()
    log = tmp_path / "lost.db.incomplete.log"
    assert log.exists() and not trace.exists()
    return log


def need(tool: str) -> str:
    """The tool's path; a missing one fails the test (tools/setup.sh installs it)."""
    path = shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/sbin")
    if not path:
        pytest.fail(f"{tool} is not installed (tools/setup.sh installs it)", pytrace=False)
    return path


def gdb_batch(trace: Path, *cmds: str, opts: tuple[str, ...] = (), gdb_opts: tuple[str, ...] = (),
              timeout: float = 120) -> str:
    """Run detreplay --gdb with gdb commands in batch mode; all output, as text."""
    need("gdb")
    args = ["--gdb", *opts, str(trace), "--", "-nx", "-batch", *gdb_opts]
    for c in cmds:
        args += ["-ex", c]
    r = detreplay(*args, timeout=timeout)
    out = r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")
    assert "Traceback" not in out and "Python Exception" not in out, out
    return out


def marks(out: str, tag: str) -> list[list[int]]:
    """Values printed by `printf "@tag %d ...\\n"`, in order."""
    return [[int(x) for x in m.split()] for m in re.findall(rf"^@{tag} ([-\d ]+)$", out, re.M)]
