"""Damaged capture logs through every tool that reads one: seeded mutations
of real logs (what a killed detrec leaves, NAME.incomplete.log).

    python tests/fuzz/fuzz_logs.py [--mutations N] [--seed S] [-j J]   (make fuzz: 10000)

Rules of this file:
  - Base logs are captured here by det's own capture (det.record.capture_run,
    in a child python) from test programs that cover every chunk and entry
    kind (threads and their sync kinds, inputs with data, child processes,
    a strict recording); the logs are complete (an END chunk), and
    truncation makes them cut, as a killed detrec leaves them.
  - Mutation i of seed S is a function of (S, i) alone: byte flips and
    truncation anywhere (caught by the chunks' checksums), and edits made
    with the checksum made right again (tests/caplog.py, written from
    docs/TRACE_FORMAT.md), so that they reach what the reader does with a
    chunk's contents: header fields, chunk header fields, ring entry
    fields, the words of THREAD, PROCS, MODULES and CLOCK chunks, chunks
    dropped, repeated and reordered, huge counts (a full 4 MiB ring chunk,
    thread 65535, a process table at its largest), and META chunks that are
    deeply nested, oversized, wide, not an object, not UTF-8, or a trace's
    meta with a value of the wrong type.
  - Each tool reads its own copy of the log, in-process as from the
    command line (tests/fuzz/fuzz_traces.py's harness, in a forked child of
    its own): `detrec salvage`, `detrec info` and `detdiff` (which salvage
    by themselves), dettui's model (what it opens a trace with), the
    schedule digest of the log (det.native.log_digest, as a hunt reads its
    runs), and `detreplay` on what `detrec salvage` made.
  - What is counted: tracebacks, crashes (the tools' process killed by a
    signal), hangs (a mutation taking more than HANG_S), an error of more
    than one line (exit status 2), a log lost by a tool that refused it, and
    "matches" from a replay of a salvaged trace (which has no outcome).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import fuzz_traces
from fuzz_traces import BIN, ROOT, STALL, Finding, Summary, ToolRun, call

sys.path.insert(0, str(ROOT / "tests"))
import caplog  # noqa: E402

HANG_S = 60

# Base logs: (name, program and arguments, strict, stdin bytes).
BASES = [
    ("api", ["tests/bin/api_tour"], False, b""),
    ("inputs", ["tests/bin/inputs_tour"], False, b"piped input\n" * 50),
    ("procs", ["tests/bin/proc_tour", "spawn"], False, b""),
    ("strict", ["samples/bin/bank_check_then_act"], True, b""),
]

CAPTURE = """
import sys
from pathlib import Path
from det.record.engine import Options, capture_run
out, strict, argv = Path(sys.argv[1]), sys.argv[2] == "1", sys.argv[3:]
c = capture_run(argv[0], argv, out, Options(strict=strict))
c.writer.path.unlink()
print(c.writer.log)
"""


def capture_bases(work: Path) -> list[Path]:
    """The base logs, each in a directory of its own, as NAME.incomplete.log."""
    out = []
    for name, argv, strict, stdin in BASES:
        d = work / "base" / name
        d.mkdir(parents=True)
        r = subprocess.run([str(BIN / "python"), "-c", CAPTURE, str(d / "t.db"), "1" if strict else "0",
                            str(ROOT / argv[0]), *argv[1:]], input=stdin, capture_output=True, timeout=300,
                           cwd=ROOT)
        log = d / "t.db.incomplete.log"
        if r.returncode != 0 or not log.exists():
            raise SystemExit(f"fuzz: cannot capture {name}: {r.stderr.decode()[-2000:]}")
        out.append(log)
    return out


def salvaged_bases(logs: list[Path], work: Path) -> dict[Path, Path]:
    """Each base log's salvaged trace (detdiff's other side)."""
    from det.record.salvage import salvage

    out = {}
    for log in logs:
        d = work / "salvaged" / log.parent.name
        d.mkdir(parents=True)
        shutil.copy(log, d / log.name)
        out[log] = salvage(d / log.name)[0]
    return out


# ---------------------------------------------------------------- mutations

INTERESTING = (0, 1, 2, 3, 7, 8, 16, 28, 29, 32, 255, 4095, 0x7FFF, 0x8000, 0x8001, 0x8002, 0x8003, 0x8004, 0x8005,
               0x8006, 0xFFFF, 0x10000, 0x10FFFF, 0x110000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF, 2**32,
               2**62, 2**63 - 1, 2**63, 2**64 - 2, 2**64 - 1)
# struct det_rec's fields: name, offset, bytes
REC_FIELDS = (("seq", 0, 8), ("ra", 8, 8), ("obj", 16, 4), ("aux", 20, 4), ("dts", 24, 4), ("kind", 28, 2),
              ("flags", 30, 2))
HEADER_FIELDS = (("magic", 0, 8), ("version", 8, 4), ("header_bytes", 12, 4), ("rec_bytes", 16, 4),
                 ("shm_version", 20, 4), ("pad", 24, 8))
CHUNK_MAX = 1 << 22  # DET_LOG_CHUNK_MAX
PROC_BYTES = 128  # sizeof(struct det_proc)


def _value(rng: random.Random, size: int) -> int:
    v = rng.choice(INTERESTING) if rng.random() < 0.8 else rng.getrandbits(8 * size)
    return v & ((1 << (8 * size)) - 1)


def _put(buf: bytearray, at: int, size: int, value: int) -> None:
    buf[at:at + size] = value.to_bytes(size, "little")


def _meta_text(rng: random.Random, base: dict) -> tuple[bytes, str]:
    """A META chunk's payload that is no good one, and what it is."""
    pick = rng.randrange(9)
    text = json.dumps(base)
    if pick == 0:
        depth = rng.choice((33, 1000, 100_000, 1_000_000))
        return (text[:-1] + ', "deep": ' + "[" * depth + "]" * depth + "}").encode(), f"META nested {depth} deep"
    if pick == 1:
        depth = rng.choice((33, 100_000))
        return (text[:-1] + ', "deep": ' + "{\"a\": " * depth + "1" + "}" * depth + "}").encode(), \
            f"META nested {depth} objects deep"
    if pick == 2:
        size = rng.choice((CHUNK_MAX - 64, CHUNK_MAX + 8, 8 << 20))
        return (text[:-1] + ', "big": "' + "x" * (size - len(text) - 12) + '"}').encode(), f"META of {size} bytes"
    if pick == 3:
        n = rng.choice((1000, 500_000))
        return (text[:-1] + ', "wide": [' + ",".join(["[]"] * n) + "]}").encode(), f"META with a list of {n}"
    if pick == 4:
        what = rng.choice(("[]", "null", "1", '"text"', "", "{", '{"a": 1}', "[" * 50_000))
        return what.encode(), f"META {fuzz_traces._short(what)}"
    if pick == 5:
        cut = rng.randrange(len(text))
        raw = bytearray(text.encode())
        raw[cut] = rng.choice((0, 0xFF, 0xC3, ord('"'), ord("\\"), ord("["), ord("}")))
        return bytes(raw), f"META byte {cut} set to {raw[cut]:#x}"
    meta = dict(base)
    key = rng.choice(sorted(meta))
    if pick == 6:
        del meta[key]
        return json.dumps(meta).encode(), f"META without {key}"
    new = fuzz_traces._values(rng, meta[key])
    if isinstance(new, bytes):
        new = new.decode("latin-1")
    if pick == 7 and rng.random() < 0.5:
        new = rng.choice(({"a": [1]}, [[["x"]]], [1, "a"], 2**64, -(2**70), 1e308, float("nan"), "\udcff", True))
    meta[key] = new
    return json.dumps(meta).encode(), f"META {key} = {fuzz_traces._short(new)}"


def mutate_log(base: Path, out: Path, seed: int, i: int) -> str:
    """Apply mutation i of `seed` to a copy of base (written to out); returns what it did."""
    rng = random.Random(seed * 1_000_033 + i)
    header, chunks, tail = caplog.read(base)
    pick = rng.random()
    if pick < 0.2:  # (what the checksums catch)
        shutil.copyfile(base, out)
        return fuzz_traces.flip_bytes(rng, out) if pick < 0.12 else fuzz_traces.truncate(rng, out)
    what = ""
    if pick < 0.26:
        h = bytearray(header)
        name, at, size = rng.choice(HEADER_FIELDS)
        v = _value(rng, size)
        _put(h, at, size, v)
        header = bytes(h)
        what = f"header {name} = {v:#x}"
    elif pick < 0.4:
        k = rng.randrange(len(chunks))
        c = chunks[k]
        field = rng.choice(("type", "bytes", "thread", "check"))
        v = _value(rng, 4)
        setattr(c, field, v)
        fixed = field in ("type", "thread") and rng.random() < 0.8
        if fixed:
            chunks[k] = caplog.Chunk(c.type, c.bytes, caplog.checksum(c.payload, c.type, c.bytes), c.thread, c.payload)
        what = f"chunk {k} (type {chunks[k].type}) {field} = {v:#x}{', checksum made right' if fixed else ''}"
    elif pick < 0.62:
        rings = [k for k, c in enumerate(chunks) if c.type == caplog.RING and c.payload]
        k = rng.choice(rings)
        payload = bytearray(chunks[k].payload)
        edits = []
        for _ in range(rng.choice((1, 1, 1, 2, 8))):
            e = rng.randrange(len(payload) // caplog.REC.size) * caplog.REC.size
            name, at, size = rng.choice(REC_FIELDS)
            v = _value(rng, size)
            _put(payload, e + at, size, v)
            edits.append(f"entry {e // caplog.REC.size} {name} = {v:#x}")
        chunks[k] = caplog.chunk(caplog.RING, bytes(payload), chunks[k].thread)
        what = f"ring chunk {k} of T{chunks[k].thread}: " + ", ".join(edits)
    elif pick < 0.72:
        tables = [k for k, c in enumerate(chunks) if c.type in (caplog.THREAD, caplog.PROCS, caplog.MODULES,
                                                                 caplog.CLOCK) and c.payload]
        k = rng.choice(tables)
        payload = bytearray(chunks[k].payload)
        size = rng.choice((4, 8))
        at = rng.randrange(len(payload) // size) * size
        v = _value(rng, size)
        _put(payload, at, size, v)
        chunks[k] = caplog.chunk(chunks[k].type, bytes(payload), chunks[k].thread)
        what = f"chunk {k} (type {chunks[k].type}): {size} bytes at {at} = {v:#x}"
    elif pick < 0.8:
        op = rng.randrange(5)
        k, j = rng.randrange(len(chunks)), rng.randrange(len(chunks))
        if op == 0:
            del chunks[k]
            what = f"chunk {k} dropped"
        elif op == 1:
            chunks.insert(j, chunks[k])
            what = f"chunk {k} repeated at {j}"
        elif op == 2:
            chunks[k], chunks[j] = chunks[j], chunks[k]
            what = f"chunks {k} and {j} swapped"
        elif op == 3:
            chunks = [c for c in chunks if c.type != caplog.END]
            what = "END chunk dropped (a killed capture)"
        else:
            rng.shuffle(chunks)
            what = "chunks shuffled"
    elif pick < 0.92:
        payload, what = _meta_text(rng, json.loads(chunks[0].payload.rstrip(b"\0")))
        chunks[0] = caplog.chunk(caplog.META, payload)
    else:
        op = rng.randrange(4)
        if op == 0:  # a full ring chunk of one entry, again and again
            rings = [c for c in chunks if c.type == caplog.RING and c.payload]
            c = rng.choice(rings)
            e = rng.randrange(len(c.payload) // caplog.REC.size) * caplog.REC.size
            entry = c.payload[e:e + caplog.REC.size]
            chunks.insert(rng.randrange(1, len(chunks)), caplog.chunk(caplog.RING, entry * (CHUNK_MAX // len(entry)),
                                                                         c.thread))
            what = f"a full ring chunk of T{c.thread}'s entry {e // caplog.REC.size}"
        elif op == 1:  # the largest thread number
            c = rng.choice([c for c in chunks if c.type in (caplog.RING, caplog.THREAD)])
            t = rng.choice((65535, 65536, 2**32 - 1))
            chunks.insert(rng.randrange(1, len(chunks)), caplog.chunk(c.type, c.payload, t))
            what = f"a type {c.type} chunk for T{t}"
        elif op == 2:  # the largest process table, its entries' words changed
            procs = [c for c in chunks if c.type == caplog.PROCS]
            table = bytearray(procs[-1].payload * (CHUNK_MAX // max(len(procs[-1].payload), PROC_BYTES) + 1))
            del table[CHUNK_MAX:]
            for _ in range(rng.choice((0, 16, 1000))):
                _put(table, rng.randrange(len(table) // 4) * 4, 4, _value(rng, 4))
            chunks.insert(len(chunks) - 1, caplog.chunk(caplog.PROCS, bytes(table)))
            what = f"a process table of {len(table) // PROC_BYTES} processes"
        else:  # a chunk claiming more than there is
            k = rng.randrange(len(chunks))
            chunks[k].bytes = rng.choice((CHUNK_MAX, CHUNK_MAX + 8, 2**32 - 8, chunks[k].bytes + 8))
            what = f"chunk {k} claims {chunks[k].bytes} bytes"
    caplog.write(out, header, chunks, tail)
    return what


# ---------------------------------------------------------------- the tools, in-process


def tui_model(path: str) -> int:
    """What dettui opens a trace with (det.tui.model.TraceModel; its
    DetError goes to the app's error screen)."""
    from det.errors import DetError
    from det.tui.model import TraceModel

    try:
        TraceModel(path).tr.close()
    except DetError as e:
        print(f"dettui: {e}", file=sys.stderr)
        return e.status
    return 0


def log_digest(path: str) -> int:
    """A hunt's reading of a run's log (det.native.log_digest)."""
    from det.errors import DetError
    from det.native import log_digest as digest

    try:
        digest(Path(path))
    except DetError as e:
        print(f"log digest: {e}", file=sys.stderr)
        return e.status
    return 0


def log_tools(other: Path, log: Path, i: int, every_tool: bool) -> list[ToolRun]:
    """The tools on their own copies of the log (they salvage it): detrec
    salvage, then detreplay on its trace, and detrec info, detdiff and
    dettui's model, or (not every_tool) one of those three in turn."""
    from det.compare.cli import main as detdiff
    from det.record.info import main as info
    from det.record.salvage import main as salvage
    from det.replay.cli import main as detreplay

    def own(tool: str) -> Path:
        d = log.parent / tool
        d.mkdir()
        shutil.copy(log, d / log.name)
        return d / log.name

    name = log.name.removesuffix(".incomplete.log")
    runs = []
    s = own("salvage")
    runs.append(call("detrec salvage", salvage, [str(s)]))
    if runs[-1].status == 0:
        runs.append(call("detreplay (salvaged)", detreplay, ["--stall", STALL, str(s.with_suffix(""))]))
    elif not s.exists():
        runs.append(ToolRun(LOST, runs[-1].status, "", runs[-1].err))
    salvaging = [lambda: call("detrec info", info, [str(own("info").parent / name)]),
                 lambda: call("detdiff", detdiff, [str(other), str(own("diff").parent / name)]),
                 lambda: call("dettui (model)", tui_model, str(own("tui").parent / name))]
    runs += [tool() for tool in (salvaging if every_tool else salvaging[i % 3:i % 3 + 1])]
    runs.append(call("log digest", log_digest, str(log)))
    return runs


# ---------------------------------------------------------------- the run


@dataclass
class LogSummary(Summary):
    """(refused: mutations `detrec salvage` refused, salvaged: those it made
    a trace of; why: its refusals, counted by what they name)"""

    salvaged: int = 0
    why: dict[str, int] = field(default_factory=dict)


# What a refusal names: the META chunk, the file or chunk framing, or the
# contents of a chunk (the converter's bounds).
REFUSALS = (("META", "META chunk"), ("framing", "not a det capture log"), ("framing", "capture log version"),
            ("contents", "not a log det wrote"))


def refusal(err: str) -> str:
    return next((name for name, words in REFUSALS if words in err), "other")


LOST = "detrec salvage refused the log and lost it"


def _problems(r: ToolRun) -> list[str]:
    if r.tool == LOST:
        return [LOST]
    out = []
    if r.traceback:
        out.append(f"traceback in {r.tool}")
    notes = ("det: salvaged", "detrec: salvaged")
    lines = [ln for ln in r.err.splitlines() if ln.strip() and not ln.startswith(notes)]
    if r.status == 2 and len(lines) != 1 and not r.traceback:
        out.append(f"{len(lines)} lines of error from {r.tool}")
    if r.tool.startswith("detreplay") and "matches" in r.err:
        out.append("detreplay says matches")
    return out


def one(args: tuple[list[Path], dict[Path, Path], int, int, Path, bool]) -> tuple[int, str, list[Finding], dict]:
    """Mutation i: (tool runs, "" if salvaged or why not, findings, seconds per tool)."""
    bases, others, seed, i, work, every_tool = args
    base = bases[i % len(bases)]
    d = work / f"m{i}"
    d.mkdir()
    log = d / base.name
    findings: list[Finding] = []
    try:
        what = mutate_log(base, log, seed, i)
        runs, problem = fuzz_traces._in_child(lambda: log_tools(others[base], log, i, every_tool), HANG_S)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    name = base.parent.name
    if problem:
        findings.append(Finding(i, name, what, problem.split(":")[0], problem))
    runs = runs or []
    for r in runs:
        for p in _problems(r):
            findings.append(Finding(i, name, what, p, (r.traceback or r.err)[-1500:]))
    salvage = next((r for r in runs if r.tool == "detrec salvage"), None)
    why = "" if salvage is not None and salvage.status == 0 else refusal(salvage.err if salvage else "")
    return len(runs), why, findings, {r.tool: r.seconds for r in runs}


def run(mutations: int, seed: int, jobs: int, start: int = 0, quiet: bool = False,
        every_tool: bool = True) -> LogSummary:
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="det-logfuzz-") as d:
        work = Path(d)
        os.environ["XDG_CACHE_HOME"] = str(work / "cache")
        bases = capture_bases(work)
        others = salvaged_bases(bases, work)
        s = LogSummary()
        todo = [(bases, others, seed, i, work, every_tool) for i in range(start, start + mutations)]
        for (why,) in fuzz_traces.pooled(one, todo, jobs, _warm, 2, s, "log mutations", quiet):
            s.salvaged += not why
            s.refused += bool(why)
            if why:
                s.why[why] = s.why.get(why, 0) + 1
    s.seconds = time.monotonic() - t0
    return s


def _warm() -> None:
    fuzz_traces._warm()
    import det.record.salvage  # noqa: F401
    import det.tui.model  # noqa: F401


def report(s: LogSummary, seed: int) -> str:
    why = ", ".join(f"{k} {v}" for k, v in sorted(s.why.items()))
    lines = [f"fuzz: seed {seed}: {s.mutations} log mutations, {s.tool_runs} tool runs in {s.seconds:.0f} s; "
             f"detrec salvage made a trace of {s.salvaged}, refused {s.refused} ({why}); {len(s.findings)} findings; "
             "seconds per tool: " + ", ".join(f"{k} {v:.0f}" for k, v in sorted(s.tool_seconds.items()))]
    return "\n".join(lines + fuzz_traces.findings_lines(s.findings))


def main(argv: list[str] | None = None) -> int:
    ns = fuzz_traces.parser("Fuzz det's capture log readers with seeded mutations of real logs.").parse_args(argv)
    s = run(ns.mutations, ns.seed, ns.jobs, ns.start)
    print(report(s, ns.seed))
    return 1 if s.findings else 0


if __name__ == "__main__":
    sys.exit(main())
