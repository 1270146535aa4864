"""Capture logs whose records are out of bounds (crafted, or damaged with
their checksums made right again): every tool that reads a log (detrec
salvage, detrec info, detreplay, detdiff, dettui's model) refuses it in one
line with exit status 2 and leaves it where it was, or cuts it as it cuts a
torn tail; never a traceback, a crash or a huge allocation. The logs come
from a real capture of a test program (det.record.capture_run), taken apart
and put back together by tests/caplog.py."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from pathlib import Path

import caplog
import pytest

from conftest import BIN, DETREC, ROOT, detrec, detreplay, program, query

TOOLS = ("detrec salvage", "detrec info", "detreplay", "detdiff", "dettui")


@pytest.fixture(scope="module")
def base_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete capture log of api_tour (threads, locks, conditions)."""
    from det.record.engine import Options, capture_run

    d = tmp_path_factory.mktemp("base")
    exe = str(program("api_tour"))
    c = capture_run(exe, [exe], d / "api.db", Options())
    return c.writer.log


def base_meta(base: Path) -> dict:
    return json.loads(caplog.read(base)[1][0].payload.rstrip(b"\0"))


def ordered_events(chunks: list[caplog.Chunk]):
    """(chunk index, offset, fields) of the ring entries that are events
    ordered on their object."""
    for i, c in enumerate(chunks):
        if c.type == caplog.RING:
            for at in range(0, len(c.payload), caplog.REC.size):
                seq, _, obj, _, _, kind, _ = fields = caplog.REC.unpack_from(c.payload, at)
                if kind < 0x8000 and obj and seq != 2**64 - 1:
                    yield i, at, fields


def with_meta(base: Path, d: Path, meta: bytes) -> Path:
    """base with its META chunk's payload replaced (checksum right), as
    d/t.db.incomplete.log."""
    header, chunks, tail = caplog.read(base)
    assert chunks[0].type == caplog.META
    chunks[0] = caplog.chunk(caplog.META, meta)
    d.mkdir(parents=True, exist_ok=True)
    log = d / "t.db.incomplete.log"
    caplog.write(log, header, chunks, tail)
    return log


def run_tool(tool: str, log: Path) -> subprocess.CompletedProcess:
    """The tool on a copy of the log of its own (it may salvage it)."""
    d = log.parent / tool.replace(" ", "-")
    d.mkdir()
    own = d / log.name
    shutil.copy(log, own)
    name = d / "t.db"
    if tool == "detrec salvage":
        return detrec("salvage", own)
    if tool == "detrec info":
        return detrec("info", name)
    if tool == "detreplay":
        return detreplay(name)
    if tool == "detdiff":
        return subprocess.run([BIN / "detdiff", name, name], capture_output=True, timeout=120)
    # dettui: the model it opens a trace with (it salvages as it opens); its
    # DetError is what the app shows on its error screen
    code = ("import sys\nfrom det.errors import DetError\nfrom det.tui.model import TraceModel\n"
            "try:\n    TraceModel(sys.argv[1])\nexcept DetError as e:\n"
            "    print(f'dettui: {e}', file=sys.stderr)\n    sys.exit(e.status)\n")
    return subprocess.run([BIN / "python", "-c", code, name], capture_output=True, timeout=120, cwd=ROOT)


def refused_in_one_line(tool: str, log: Path, what: str) -> None:
    r = run_tool(tool, log)
    err = r.stderr.decode(errors="replace")
    assert "Traceback" not in err, f"{tool}: {err[-2000:]}"
    assert r.returncode == 2, f"{tool}: {r.returncode}: {err}"
    lines = err.strip().splitlines()
    assert len(lines) == 1 and what in lines[0], f"{tool}: {err}"
    assert (log.parent / tool.replace(" ", "-") / log.name).exists(), f"{tool}: the log was lost"


@pytest.mark.parametrize("tool", TOOLS)
def test_deeply_nested_meta_is_refused_in_one_line(tmp_path: Path, base_log: Path, tool: str) -> None:
    deep = 100_000
    text = json.dumps(base_meta(base_log))[:-1] + ', "nested": ' + "[" * deep + "]" * deep + "}"
    log = with_meta(base_log, tmp_path, text.encode())
    refused_in_one_line(tool, log, "META")


# META chunks that are JSON, bounded, but no trace's meta table (what the
# trace would hold must pass det.validate as any trace's meta does)
BAD_METAS = {
    "a list": lambda m: "[]",
    "no argv": lambda m: json.dumps({k: v for k, v in m.items() if k != "argv"}),
    "argv not a list": lambda m: json.dumps({**m, "argv": 5}),
    "a dict where a value goes": lambda m: json.dumps({**m, "host": {"a": 1}}),
    "an integer beyond 64 bits": lambda m: json.dumps({**m, "start_unix_ns": 2**70}),
    "a lone surrogate": lambda m: json.dumps({**m, "host": "\udcff"}),
    "NaN": lambda m: json.dumps({**m, "timeout": float("nan")}),
    "deep brackets that do not pair": lambda m: json.dumps(m)[:-1] + ', "x": ' + "[" * 100_000 + "}",
}


@pytest.mark.parametrize("what", BAD_METAS)
def test_a_meta_that_is_no_meta_table_is_refused_in_one_line(tmp_path: Path, base_log: Path, what: str) -> None:
    log = with_meta(base_log, tmp_path, BAD_METAS[what](base_meta(base_log)).encode())
    refused_in_one_line("detrec salvage", log, "its META chunk")


def test_a_good_meta_rewritten_is_still_salvaged(tmp_path: Path, base_log: Path) -> None:
    """(the control: with_meta itself makes a log det reads, and its trace
    passes det.validate)"""
    payload = caplog.read(base_log)[1][0].payload.rstrip(b"\0")
    log = with_meta(base_log, tmp_path, payload)
    r = detrec("salvage", log)
    assert r.returncode == 0 and b"salvaged" in r.stderr, r.stderr.decode()
    r = detrec("info", tmp_path / "t.db.incomplete")
    assert r.returncode == 0, r.stderr.decode()


def test_an_entry_naming_an_impossible_object_is_refused_in_one_line(tmp_path: Path, base_log: Path) -> None:
    """An object id beyond any a run makes (a trace's ids stop at 0x10FFFF)
    would have the converter's per-object counts grow to it (32 GB)."""
    header, chunks, tail = caplog.read(base_log)
    i, at, (seq, ra, obj, aux, dts, kind, flags) = next(ordered_events(chunks))
    payload = bytearray(chunks[i].payload)
    caplog.REC.pack_into(payload, at, seq, ra, 0xFFFFFFF0, aux, dts, kind, flags)
    chunks[i] = caplog.chunk(caplog.RING, bytes(payload), chunks[i].thread)
    log = tmp_path / "t.db.incomplete.log"
    caplog.write(log, header, chunks, tail)
    for tool in TOOLS:
        refused_in_one_line(tool, log, "names object 4294967280")


def test_a_meta_too_large_for_the_log_is_refused_before_the_run(tmp_path: Path) -> None:
    """The META chunk holds the program's arguments and environment: one
    beyond a chunk's bound (4 MiB: here 1.4 MB of control characters, six
    bytes each in JSON) would be cut by the reader with everything after it
    (a trace of 0 events and no threads). detrec says so before the run."""
    env = {"PATH": "/usr/bin:/bin", **{f"BIG{i}": "\x01" * 120_000 for i in range(12)}}
    trace = tmp_path / "big.db"
    r = subprocess.run([DETREC, "-o", trace, program("hello")], env=env, capture_output=True, timeout=120)
    err = r.stderr.decode(errors="replace")
    assert "Traceback" not in err, err
    assert r.returncode != 0 and len(err.strip().splitlines()) == 1, f"{r.returncode}: {err}"
    assert "arguments and environment" in err and b"hello" not in r.stdout, err  # (the program never ran)
    assert not trace.exists() and not (tmp_path / "big.db.incomplete.log").exists()


def test_a_thread_numbered_65535_costs_no_more_than_its_events(tmp_path: Path, base_log: Path) -> None:
    """What the merge does for an event must not cost in proportion to the
    highest thread number a log names: here T65535's 4 MiB of events that
    each wait for a position that never comes (each is forced), and of
    waits for the program's own pid (each waits for its threads to end).
    Before, each forced event cleared the whole wait table and each wait
    went through every thread number: minutes; now a few seconds (the
    timeout is a hang guard, 20 times that)."""
    header, chunks, tail = caplog.read(base_log)
    _, _, (_, ra, obj, aux, dts, kind, flags) = next(ordered_events(chunks))
    per_chunk = (1 << 22) // caplog.REC.size
    forced = b"".join(caplog.REC.pack((1 << 40) + 2 * i, ra, obj, aux, dts, kind, flags) for i in range(per_chunk))
    procs = [c for c in chunks if c.type == caplog.PROCS][-1]
    pid = struct.unpack_from("<i", procs.payload, 4)[0]  # struct det_proc's rec_pid, of the program
    proc_wait = 67  # DET_EV_PROC_WAIT, its result the pid in a RESULT entry (0x8002) that follows it
    waits = b"".join(caplog.REC.pack(2**64 - 1, ra, 0, 0, 1, proc_wait, 0) + caplog.REC.pack(i, pid, 0, 0, 0, 0x8002, 0)
                     for i in range(per_chunk // 2))
    extra = [caplog.chunk(caplog.RING, forced, 65535), caplog.chunk(caplog.RING, waits, 65534)]
    log = tmp_path / "t.db.incomplete.log"
    caplog.write(log, header, chunks[:-1] + extra + chunks[-1:], tail)
    r = detrec("salvage", log, timeout=60)
    assert r.returncode == 0 and b"salvaged" in r.stderr, r.stderr.decode()
    forced_events = query(tmp_path / "t.db.incomplete", "SELECT value FROM meta WHERE key = 'forced'")[0][0]
    assert forced_events >= per_chunk, forced_events


def test_an_error_quoting_what_a_log_holds_is_one_line(tmp_path: Path, base_log: Path) -> None:
    """A module path that is not UTF-8 and holds a newline: the trace made
    of the log is refused as damaged, quoting the path, in one line."""
    header, chunks, tail = caplog.read(base_log)
    k = max(i for i, c in enumerate(chunks) if c.type == caplog.MODULES)
    payload = bytearray(chunks[k].payload)
    payload[8 + 5:8 + 8] = b"\xff\n\xfe"  # struct det_module: base, then path[248]
    chunks[k] = caplog.chunk(caplog.MODULES, bytes(payload))
    log = tmp_path / "t.db.incomplete.log"
    caplog.write(log, header, chunks, tail)
    for tool in ("detrec info", "detreplay", "detdiff", "dettui"):
        r = run_tool(tool, log)
        err = r.stderr.decode(errors="replace")
        lines = [ln for ln in err.strip().splitlines() if not ln.startswith("det: salvaged")]
        assert "Traceback" not in err and r.returncode == 2, f"{tool}: {r.returncode}: {err}"
        assert len(lines) == 1 and "damaged" in lines[0], f"{tool}: {err}"
