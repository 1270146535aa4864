"""Damaged traces through every tool: seeded mutations of real traces.

    python tests/fuzz/fuzz_traces.py [--mutations N] [--seed S] [-j J]   (make fuzz: 100000)

Rules of this file:
  - Base traces are recorded here by the real detrec from test programs
    that cover every table (threads and their sync kinds, inputs with data,
    a piped stdin, child processes, a strict recording).
  - Mutation i of seed S is a function of (S, i) alone, so any failure is
    reproduced by its number: byte flips anywhere in the file, truncation,
    and SQL edits that cycle through every column of every table of the
    schema (new values of every type, JSON nested deeper than Python's
    recursion, deleted and duplicated rows, swapped values, dropped tables
    and columns, changed identity pragmas).
  - Every mutation goes through every tool that reads traces, in-process
    (as their main() runs from the command line, output captured): detrec
    info (text and --json), detdiff against the original, detreplay, and
    the reading side of detreplay --gdb (the checks made before gdb starts,
    and the gdb extension's schedule model). A few also go through the
    real `detreplay --gdb` in gdb.
  - What is counted: tracebacks (an exception out of a tool, or a traceback
    printed by one of its threads), hangs (a mutation that takes more than
    HANG_S), and "matches": detreplay saying the outcome matches (or detdiff
    saying Identical) on a mutation that changed what replay enforces. What
    replay enforces is spelled here independently of det (ENFORCED), and
    read with plain SQL: a mutation that makes it unreadable changed it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import multiprocessing
import os
import pickle
import random
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".venv" / "bin"
sys.path.insert(0, str(ROOT / "gdb-ext"))

HANG_S = 120
STALL = "4"

# What replay enforces, read with plain SQL (not det's code).
ENFORCED = {
    "events": "SELECT seq, tid, idx, kind, obj, result, aux FROM events ORDER BY seq",
    "data": "SELECT seq, bytes FROM data ORDER BY seq",
    "stdin": "SELECT chunk, bytes FROM stdin ORDER BY chunk",
    "meta": "SELECT key, value FROM meta WHERE key IN ('argv', 'env', 'cwd', 'binary', 'binary_sha256', 'stdin', "
            "'stdout', 'stderr', 'mode', 'format_version') ORDER BY key",
    "outcome": "SELECT status, exit_code, signal, stdout_bytes, stdout_sha256, stderr_bytes, stderr_sha256 "
               "FROM outcome",
    "threads": "SELECT tid, obj, events, end_state, process FROM threads ORDER BY tid",
    "processes": "SELECT process, pid, status FROM processes ORDER BY process",
    "objects": "SELECT obj, kind FROM objects ORDER BY obj",
    "identity": "SELECT * FROM pragma_user_version, pragma_application_id",
}

# Base traces: (name, detrec options, program and arguments, stdin bytes or None).
BASES = [
    ("api", [], ["tests/bin/api_tour"], None),
    ("inputs", [], ["tests/bin/inputs_tour"], b"piped input\n" * 50),
    ("procs", [], ["tests/bin/proc_tour", "spawn"], None),
    ("strict", ["--strict"], ["samples/bin/bank_check_then_act"], None),
]


def enforced(path: Path) -> object:
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return {k: db.execute(sql).fetchall() for k, sql in ENFORCED.items()}
        finally:
            db.close()
    except (sqlite3.Error, ValueError, OverflowError) as e:
        return f"unreadable: {e}"


def record_bases(work: Path) -> list[Path]:
    out = []
    for name, opts, argv, stdin in BASES:
        trace = work / f"{name}.db"
        r = subprocess.run([str(BIN / "detrec"), "-q", *opts, "-o", str(trace), "--",
                            str(ROOT / argv[0]), *argv[1:]], input=stdin or b"", capture_output=True,
                           timeout=300, cwd=ROOT)
        if not trace.exists():
            raise SystemExit(f"fuzz: cannot record {name}: {r.stderr.decode()}")
        out.append(trace)
    return out


# ---------------------------------------------------------------- mutations


def _columns() -> list[tuple[str, str]]:
    from det import schema
    from det.validate import COLUMNS

    assert COLUMNS and schema.SCHEMA
    return [(t, c) for t, cols in COLUMNS.items() for c in cols]


def _values(rng: random.Random, old: object) -> object:
    choices: list[object] = [
        None, 0, 1, -1, 2, 16, 255, 4096, -4096, 2**31, -(2**31), 2**63 - 1, -(2**63), rng.randint(-10, 1000),
        rng.getrandbits(64) - 2**63, 1.5, -0.0, "", "x", "not json {", "[]", "{}", "null", '{"kind": 7}',
        '["a", 1]', '{"A": 1}', "\udcff".encode("utf-8", "surrogatepass").decode("latin-1"), b"", b"\x00\xff\xfe",
        rng.randbytes(rng.randint(1, 64)), "[" * 100_000 + "]" * 100_000,  # (deeper than json.loads can go)
    ]
    if isinstance(old, int) and not isinstance(old, bool):
        choices += [old + 1, old - 1, old ^ (1 << rng.randint(0, 62)), -old, str(old)]
    if isinstance(old, str):
        choices += [old[:-1], old + "x", old.upper(), old.encode(), old[::-1] if old else "?"]
    if isinstance(old, bytes):
        choices += [old[:-1], old + b"\0", bytes(b ^ 1 for b in old), old.decode("latin-1")]
    return rng.choice(choices)


def mutate(base: Path, out: Path, seed: int, i: int) -> str:
    """Apply mutation i of `seed` to a copy of base; returns what it did."""
    rng = random.Random(seed * 1_000_003 + i)
    shutil.copyfile(base, out)
    pick = rng.random()
    if pick < 0.2:
        return flip_bytes(rng, out)
    if pick < 0.28:
        return truncate(rng, out)
    cols = _columns()
    table, col = cols[i % len(cols)]
    db = sqlite3.connect(out)
    try:
        op = rng.random()
        rows = db.execute(f"SELECT rowid, {col} FROM {table}").fetchall()
        if op < 0.04:
            db.execute(f"DROP TABLE {table}")
            what = f"drop table {table}"
        elif op < 0.07:
            try:
                db.execute(f"ALTER TABLE {table} DROP COLUMN {col}")
                what = f"drop column {table}.{col}"
            except sqlite3.Error as e:
                what = f"drop column {table}.{col} refused by SQLite ({e})"
        elif op < 0.1:
            pragma = rng.choice(("user_version", "application_id"))
            v = rng.choice((0, 1, 3, 99, -1, 0x64657430))
            db.execute(f"PRAGMA {pragma} = {v}")
            what = f"pragma {pragma} = {v}"
        elif not rows:
            db.execute(f"INSERT INTO {table}({col}) VALUES (?)", (_values(rng, None),)) if table != "meta" else None
            what = f"insert into empty {table}"
        elif op < 0.17:
            rid = rng.choice(rows)[0]
            db.execute(f"DELETE FROM {table} WHERE rowid = ?", (rid,))
            what = f"delete {table} row {rid}"
        elif op < 0.22 and len(rows) > 1:
            (r1, v1), (r2, v2) = rng.sample(rows, 2)
            db.execute(f"UPDATE OR IGNORE {table} SET {col} = ? WHERE rowid = ?", (v2, r1))
            db.execute(f"UPDATE OR IGNORE {table} SET {col} = ? WHERE rowid = ?", (v1, r2))
            what = f"swap {table}.{col} of rows {r1} and {r2}"
        elif op < 0.26:
            rid = rng.choice(rows)[0]
            cols_all = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
            keys = [r[1] for r in db.execute(f"PRAGMA table_info({table})") if r[5]]
            sel = ", ".join(f"{c} + 1000000" if c in keys else c for c in cols_all)
            db.execute(f"INSERT OR IGNORE INTO {table} SELECT {sel} FROM {table} WHERE rowid = ?", (rid,))
            what = f"duplicate {table} row {rid}"
        else:
            rid, old = rng.choice(rows)
            if table == "meta" and col == "value":
                key = db.execute("SELECT key FROM meta WHERE rowid = ?", (rid,)).fetchone()[0]
                col_name = f"meta[{key}]"
            else:
                col_name = f"{table}.{col} row {rid}"
            new = _values(rng, old)
            # Write around NOT NULL and type checks, as a damaged file would.
            db.execute("PRAGMA ignore_check_constraints = 1")
            try:
                db.execute(f"UPDATE OR IGNORE {table} SET {col} = ? WHERE rowid = ?", (new, rid))
            except sqlite3.IntegrityError:
                db.execute("PRAGMA writable_schema = 1")
                db.execute(f"UPDATE OR IGNORE {table} SET {col} = ? WHERE rowid = ?", (0, rid))
            what = f"set {col_name} from {_short(old)} to {_short(new)}"
        db.commit()
    except sqlite3.Error as e:
        what = f"edit of {table}.{col} refused by SQLite ({e})"
    finally:
        db.close()
    return what


def flip_bytes(rng: random.Random, path: Path) -> str:
    """A few bits of the file flipped anywhere; returns what it did."""
    data = bytearray(path.read_bytes())
    flips = []
    for _ in range(rng.choice((1, 1, 2, 4, 16))):
        at = rng.randrange(len(data))
        data[at] ^= 1 << rng.randrange(8)
        flips.append(at)
    path.write_bytes(bytes(data))
    return f"byte flips at {flips}"


def truncate(rng: random.Random, path: Path) -> str:
    """The file cut anywhere, near its end or near its start."""
    size = path.stat().st_size
    cut = max(rng.choice((rng.randrange(size), size - rng.randint(1, 4096), rng.randrange(100))), 0)
    with open(path, "r+b") as f:
        f.truncate(cut)
    return f"truncated to {cut} bytes"


def _short(v: object) -> str:
    s = repr(v)
    return s if len(s) < 40 else s[:37] + "..."


# ---------------------------------------------------------------- the tools, in-process


@dataclass
class ToolRun:
    tool: str
    status: int
    out: str
    err: str
    traceback: str = ""
    seconds: float = 0.0


class _Stream(io.TextIOWrapper):
    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", errors="replace", write_through=True)

    def text(self) -> str:
        self.flush()
        return self.buffer.getvalue().decode(errors="replace")


def call(tool: str, fn, *args) -> ToolRun:
    out, err = _Stream(), _Stream()
    tb = ""
    status = 0
    t0 = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = fn(*args)
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else 2
        except Exception:
            tb = traceback.format_exc()
            status = -1
    r = ToolRun(tool, status if isinstance(status, int) else 0, out.text(), err.text(), tb, time.monotonic() - t0)
    if "Traceback (most recent call last)" in r.err + r.out and not r.traceback:
        r.traceback = r.err
    return r


def gdb_reading_side(path: str) -> int:
    """What detreplay --gdb reads before gdb starts, then what the gdb
    extension reads (det_gdb_model.Schedule), as one tool."""
    from det_gdb_model import Schedule

    from det.errors import DetError
    from det.replay.checks import check_binary
    from det.replay.gdb import check_goto
    from det.trace import Trace

    try:
        with Trace(path) as tr:
            check_binary(tr, False)
            check_goto(tr, 0 if tr.q1("SELECT min(seq) FROM events") == 0 else None)
        s = Schedule(path)
        try:
            if s.total:
                s.describe(s.first)
                s.timeline_text(s.first, s.first + 10, s.first, [])
            s.recorded_end()
        finally:
            s.close()
    except DetError as e:
        print(f"detreplay: {e}", file=sys.stderr)
        return e.status
    return 0


def tools(base: Path, path: Path) -> list[ToolRun]:
    from det.compare.cli import main as detdiff
    from det.record.info import main as info
    from det.replay.cli import main as detreplay

    p, b = str(path), str(base)
    return [
        call("detrec info", info, [p]),
        call("detrec info --json", info, [p, "--json"]),
        call("detdiff", detdiff, [b, p]),
        call("detreplay", detreplay, ["--stall", STALL, p]),
        call("detreplay --gdb (reading)", gdb_reading_side, p),
    ]


def real_gdb(path: Path) -> ToolRun:
    r = subprocess.run([str(BIN / "detreplay"), "--gdb", str(path), "--", "-batch", "-ex", "det status"],
                       capture_output=True, timeout=HANG_S, stdin=subprocess.DEVNULL)
    out, err = r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")
    tb = out + err if "Traceback" in out + err or "Python Exception" in out + err else ""
    return ToolRun("detreplay --gdb", r.returncode, out, err, tb)


# ---------------------------------------------------------------- the run


@dataclass
class Finding:
    number: int
    base: str
    mutation: str
    problem: str
    detail: str


@dataclass
class Summary:
    mutations: int = 0
    tool_runs: int = 0
    refused: int = 0
    replayed: int = 0
    changed: int = 0
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    tool_seconds: dict[str, float] = field(default_factory=dict)


def _in_child(fn, timeout: float):
    """fn() in a forked child of its own process group, killed with all it
    started after `timeout` s: returns (fn's result, None) or (None, why)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.setpgid(0, 0)
        try:
            data = pickle.dumps((fn(), None))
        except BaseException:
            data = pickle.dumps((None, "harness error: " + traceback.format_exc()))
        with os.fdopen(w, "wb") as f:
            f.write(data)
        os._exit(0)
    os.close(w)
    chunks = []
    deadline = time.monotonic() + timeout
    with os.fdopen(r, "rb") as f:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([f], [], [], left)[0]:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return None, f"hang: more than {timeout:g} s"
            chunk = os.read(f.fileno(), 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)  # anything the tools left running
    try:
        return pickle.loads(b"".join(chunks))
    except Exception:
        return None, f"crash: the tools' process ended with wait status {status:#x} and no answer"


def _warm() -> None:
    """Pool initializer: import what the tools import, once per worker, so
    each mutation's forked child starts with it (imports are most of the
    cost of a refused trace)."""
    import det_gdb_model  # noqa: F401

    import det.compare.cli  # noqa: F401
    import det.record.info  # noqa: F401
    import det.replay.cli  # noqa: F401
    import det.replay.gdb  # noqa: F401
    from det.native import lib

    lib()


_ENFORCED: dict[Path, object] = {}


def _enforced_base(base: Path) -> object:
    if base not in _ENFORCED:
        _ENFORCED[base] = enforced(base)
    return _ENFORCED[base]


def one(args: tuple[list[Path], int, int, Path, bool]) -> tuple[int, int, bool, bool, list[Finding], dict]:
    """Mutation i: (tool runs, refusals by detreplay, replayed, changed, findings, seconds per tool)."""
    bases, seed, i, work, with_gdb = args
    base = bases[i % len(bases)]
    path = work / f"m{i}-{base.name}"
    findings: list[Finding] = []
    what = mutate(base, path, seed, i)
    changed = enforced(path) != _enforced_base(base)

    def run_tools() -> list[ToolRun]:
        runs = tools(base, path)
        if with_gdb:
            runs.append(real_gdb(path))
        return runs

    runs, problem = _in_child(run_tools, HANG_S)
    for p in path.parent.glob(path.name + "*"):
        p.unlink(missing_ok=True)
    if problem:
        findings.append(Finding(i, base.name, what, problem.split(":")[0], problem))
    runs = runs or []
    replay = next((r for r in runs if r.tool == "detreplay"), None)
    for r in runs:
        if r.traceback:
            findings.append(Finding(i, base.name, what, f"traceback in {r.tool}", r.traceback[-1500:]))
    if changed and replay is not None and "outcome matches the recording" in replay.err:
        findings.append(Finding(i, base.name, what, "detreplay says matches", replay.err[-500:]))
    diff = next((r for r in runs if r.tool == "detdiff"), None)
    if changed and diff is not None and diff.status == 0:
        findings.append(Finding(i, base.name, what, "detdiff says identical", diff.out[-500:]))
    refused = replay is not None and replay.status == 2
    return (len(runs), int(refused), replay is not None and not refused, changed, findings,
            {r.tool: r.seconds for r in runs})


def run(mutations: int, seed: int, jobs: int, gdb_every: int = 0, start: int = 0, quiet: bool = False) -> Summary:
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="det-fuzz-") as d:
        work = Path(d)
        os.environ["XDG_CACHE_HOME"] = str(work / "cache")  # det.seal's cache of valid traces: ours alone
        bases = record_bases(work)
        s = Summary()
        todo = [(bases, seed, i, work, bool(gdb_every) and i % gdb_every == 0) for i in range(start, start + mutations)]
        for refused, replayed, changed in pooled(one, todo, jobs, _warm, 4, s, "mutations", quiet):
            s.refused += refused
            s.replayed += replayed
            s.changed += changed
    s.seconds = time.monotonic() - t0
    return s


def pooled(one: Callable[[Any], tuple], todo: list, jobs: int, warm: Callable[[], None], chunksize: int,
           s: Summary, what: str, quiet: bool) -> Iterator[tuple]:
    """one(item) for each item of todo, in a pool of `jobs` forked workers
    (warm: their initializer); one() returns (tool runs, ..., findings,
    seconds per tool), which are added to s, and the rest is yielded."""
    t0 = time.monotonic()
    with multiprocessing.get_context("fork").Pool(jobs, initializer=warm, maxtasksperchild=200) as pool:
        for n, (runs, *rest, found, secs) in enumerate(pool.imap_unordered(one, todo, chunksize)):
            for tool, t in secs.items():
                s.tool_seconds[tool] = s.tool_seconds.get(tool, 0.0) + t
            s.mutations += 1
            s.tool_runs += runs
            s.findings += found
            yield tuple(rest)
            if not quiet and (n + 1) % 500 == 0:
                print(f"fuzz: {n + 1}/{len(todo)} {what}, {len(s.findings)} findings, {time.monotonic() - t0:.0f} s",
                      file=sys.stderr, flush=True)


def report(s: Summary, seed: int) -> str:
    lines = [f"fuzz: seed {seed}: {s.mutations} mutations, {s.tool_runs} tool runs in {s.seconds:.0f} s; "
             f"{s.changed} changed what replay enforces; detreplay refused {s.refused}, replayed {s.replayed}; "
             f"{len(s.findings)} findings; seconds per tool: "
             + ", ".join(f"{k} {v:.0f}" for k, v in sorted(s.tool_seconds.items()))]
    return "\n".join(lines + findings_lines(s.findings))


def findings_lines(findings: list[Finding]) -> list[str]:
    """The first 30 findings, by mutation number, for a report."""
    return [f"  #{f.number} ({f.base}: {f.mutation}): {f.problem}\n    " + f.detail.replace("\n", "\n    ")
            for f in sorted(findings, key=lambda f: f.number)[:30]]


def parser(description: str) -> argparse.ArgumentParser:
    """The options of a fuzz run (this one's, and fuzz_logs.py's)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--mutations", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--start", type=int, default=0, help="first mutation number (to repeat one)")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser("Fuzz det's trace readers with seeded mutations of real traces.")
    p.add_argument("--gdb-every", type=int, default=0, metavar="N", help="also run the real detreplay --gdb on "
                   "every Nth mutation")
    ns = p.parse_args(argv)
    s = run(ns.mutations, ns.seed, ns.jobs, ns.gdb_every, ns.start)
    print(report(s, ns.seed))
    return 1 if s.findings else 0


if __name__ == "__main__":
    sys.exit(main())
