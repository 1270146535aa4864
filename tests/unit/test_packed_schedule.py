"""The packed schedule (table schedule, docs/TRACE_FORMAT.md): what the
converter writes, the bytes as the format page spells them, and a stale or
edited one refused, never replayed."""

from __future__ import annotations

import os
import random
import re
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest

from conftest import ROOT, convert_each_way, detrec, detreplay, program, query, reseal, sample_bin

sys.path.insert(0, str(ROOT / "store"))
from det import native, schema  # noqa: E402

# ---------------------------------------------------------------- the format page's decoder

def _varint(b: bytes, i: int) -> tuple[int, int]:
    x = shift = 0
    while True:
        c = b[i]
        i += 1
        x |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return x, i


def decode_chunk(first_seq: int, events: int, b: bytes) -> list[tuple[int, int, int, int]]:
    """A chunk's (seq, tid, call, result) decoded as docs/TRACE_FORMAT.md
    ("A chunk's bytes") says, written from the page, not from the C code."""
    out: list[tuple[int, int, int, int]] = []
    nxt, prev, other, last = first_seq, 0, 0, None
    recent: dict[int, list[int]] = {}
    res: dict[int, int] = {}
    i = 0
    pending: list[int] = []
    while len(out) < events:
        if pending:
            byte = pending.pop()
        else:
            byte = b[i]
            i += 1
            if byte & 0x80:
                assert last is not None
                pending = [last] * (byte & 0x7F)
                byte = last
        tc, cc = byte & 3, (byte >> 2) & 7
        assert tc != 3 and cc <= 4
        tid = prev if tc == 0 else other
        if tc == 2:
            tid, i = _varint(b, i)
        mine = recent.setdefault(tid, [])
        if cc == 4:
            call, i = _varint(b, i)
        else:
            call = mine[cc]
        result = 0
        if byte & 0x20:
            z, i = _varint(b, i)
            res[tid] = (res.get(tid, 0) + ((z >> 1) ^ -(z & 1))) % 2**64
            result = res[tid] - 2**64 if res[tid] >= 2**63 else res[tid]
        seq = nxt
        if byte & 0x40:
            g, i = _varint(b, i)
            seq += g
        out.append((seq, tid, call, result))
        nxt = seq + 1
        if tid != prev:
            other, prev = prev, tid
        if call in mine:
            mine.remove(call)
        mine.insert(0, call)
        del mine[4:]
        last = byte if tc != 2 and cc != 4 and not byte & 0x60 else None
    assert i == len(b) and not pending, "the chunk has bytes after its events"
    return out


def decoded(trace: Path) -> list[tuple[int, int, int, int]]:
    out: list[tuple[int, int, int, int]] = []
    chunks = query(trace, "SELECT chunk, first_seq, events, bytes FROM schedule ORDER BY chunk")
    for n, (chunk, first, events, b) in enumerate(chunks):
        assert chunk == n and 0 < events <= 65536 and (events == 65536 or n == len(chunks) - 1)
        out += decode_chunk(first, events, b)
    return out


def rows(trace: Path) -> list[tuple[int, int, int, int]]:
    return query(trace, schema.REPLAY_EVENTS)


def _full_check(trace: Path, cache: Path):
    return detrec("info", trace, env=dict(os.environ, DET_VALIDATE="full", XDG_CACHE_HOME=str(cache)))


# ---------------------------------------------------------------- what the converter writes

@pytest.mark.parametrize("how", ["parallel", "inputs", "strict", "many_chunks"])
def test_converter_writes_the_packed_schedule(how: str, tmp_path: Path) -> None:
    """detrec's trace has the packed schedule: the events of event_rows, as
    the format page decodes them, with meta schedule_rows naming the rows'
    checksum lanes; a lock loop takes far less than a byte an event."""
    argv = {
        "parallel": [program("api_tour")],
        "inputs": [program("inputs_tour")],  # negative and large results
        "strict": ["--strict", sample_bin("bank_check_then_act")],
        "many_chunks": [ROOT / "bench" / "bin" / "mutex_counter", "100000", "3"],
    }[how]
    trace = tmp_path / "t.db"
    r = detrec("-q", "-o", trace, *argv, input=b"some input\n" * 10)
    assert trace.exists(), r.stderr.decode()
    want = rows(trace)
    assert len(want) > 10 and decoded(trace) == want
    made_from = query(trace, "SELECT value FROM meta WHERE key = 'schedule_rows'")[0][0]
    assert eval(made_from) == native.table_sums(trace)[0]
    assert native.schedule_check(trace)[0] is None
    if how == "many_chunks":
        assert len(want) > 4 * 65536
        size = query(trace, "SELECT sum(length(bytes)) FROM schedule")[0][0]
        assert size < len(want) / 4, size
    if how == "inputs":
        assert any(r[3] < 0 for r in want) and any(r[3] > 2**32 for r in want)
    assert _full_check(trace, tmp_path / "cache").returncode == 0


def _bare_trace(path: Path) -> None:
    """A file with det's event_rows, calls, schedule and meta tables and nothing else."""
    tables = re.findall(r"(CREATE TABLE (\w+) \(.*?\n\)(?: WITHOUT ROWID)?;)", schema.SCHEMA, re.S)
    db = sqlite3.connect(path)
    db.executescript("\n".join(sql for sql, name in tables if name in ("meta", "event_rows", "schedule", "calls")))
    db.close()


def test_odd_rows_round_trip(tmp_path: Path) -> None:
    """Rows no recording makes often (seq gaps, thread 65535, huge calls,
    the extreme results, a chunk boundary, calls beyond the recent four)
    are packed by det_schedule_build and read back exactly, by the C check
    and by the format page's decoder."""
    rng = random.Random(9)
    trace = tmp_path / "odd.db"
    _bare_trace(trace)
    out, seq = [], 5
    for _ in range(140000):
        seq += 1 if rng.random() < 0.9 else rng.choice([2, 3, 1000, 2**40])
        tid = rng.choice([0, 0, 1, 2, 3, 65535, rng.randrange(65536)])
        call = rng.choice([1, 2, 3, 4, 5, 6, 2**32 - 1, rng.randrange(1, 2**32)])
        result = rng.choice([0, 0, 0, 1, -1, 16, -(2**63), 2**63 - 1, rng.randrange(-(2**63), 2**63)])
        out.append((seq, tid, call, result, 0))
    db = sqlite3.connect(trace)
    with db:
        db.executemany("INSERT INTO event_rows VALUES (?,?,?,?,?)", out)
    db.close()
    lanes = native.schedule_build(trace)
    assert lanes == native.table_sums(trace)[0]
    assert native.schedule_check(trace) == (None, lanes)
    assert decoded(trace) == [r[:4] for r in out]
    assert query(trace, "SELECT count(*) FROM schedule")[0][0] == 3


# ---------------------------------------------------------------- stale or edited: refused

def _flip(chunk: int, at: int) -> str:
    """Bit 2 of one byte of a chunk: in an event byte the recent call, in a
    run byte its length, in a varint its value: the events decode otherwise,
    or not at all."""
    return f"UPDATE schedule SET bytes = flip(bytes, {at}) WHERE chunk = {chunk}"


def _flip_byte(b: bytes, at: int) -> bytes:
    return b[:at] + bytes([b[at] ^ 4]) + b[at + 1:]


EDITS = {
    "a byte": _flip(0, 2),
    "a byte later on": _flip(1, 40),
    "events": "UPDATE schedule SET events = events - 1 WHERE chunk = 0",
    "first_seq": "UPDATE schedule SET first_seq = first_seq + 1 WHERE chunk = 0",
    "a chunk gone": "DELETE FROM schedule WHERE chunk = 1",
    "schedule_rows": "UPDATE meta SET value = '[1, 2, 3]' WHERE key = 'schedule_rows'",
    "schedule_rows gone": "DELETE FROM meta WHERE key = 'schedule_rows'",
    "bytes not a blob": "UPDATE schedule SET bytes = 'x' WHERE chunk = 0",
}

@pytest.fixture(scope="module")
def counter_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    trace = tmp_path_factory.mktemp("counter") / "c.db"
    r = detrec("-q", "-o", trace, ROOT / "bench" / "bin" / "mutex_counter", "20000", "2")
    assert r.returncode == 0, r.stderr.decode()
    assert query(trace, "SELECT count(*) FROM schedule")[0][0] == 2  # (80k events)
    return trace


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edited_packed_schedule_is_refused(edit: str, counter_trace: Path, tmp_path: Path) -> None:
    """A packed schedule changed by SQL (the checksum does not cover it) is
    refused by the validator and detreplay never runs the program with it,
    even where the replayer's own count check would not notice."""
    trace = tmp_path / "edited.db"
    shutil.copy(counter_trace, trace)
    db = sqlite3.connect(trace)
    db.create_function("flip", 2, _flip_byte)
    with db:
        assert db.execute(EDITS[edit]).rowcount == 1
    db.close()
    r = _full_check(trace, tmp_path / "cache")
    err = r.stderr.decode()
    assert r.returncode != 0 and "schedule" in err, err
    r = detreplay(trace, env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache2")))
    assert r.returncode == 2 and "schedule" in r.stderr.decode() and not r.stdout, r.stderr.decode()


# A change of event_rows no order rule looks at: the result of the program's
# output (stdio_write), which only the checksum covers.
OUTPUT_RESULT = ("UPDATE event_rows SET result = result + 7 WHERE call IN "
                 "(SELECT call FROM calls JOIN event_kinds k USING (kind) WHERE k.name = 'stdio_write')")


def test_rows_rewritten_without_a_new_schedule_are_refused(counter_trace: Path, tmp_path: Path) -> None:
    """event_rows changed and sealed by a writer that kept the old packed
    schedule (a checksum made from the new rows, as a det from before the
    packed schedule sealed): its schedule is stale, and refused."""
    from det.seal import seal

    trace = tmp_path / "stale.db"
    shutil.copy(counter_trace, trace)
    db = sqlite3.connect(trace)
    with db:
        assert db.execute(OUTPUT_RESULT).rowcount == 1
    seal(db, native.table_sums(trace))  # the lanes given: the schedule is not made again
    db.close()
    r = _full_check(trace, tmp_path / "cache")
    err = r.stderr.decode()
    assert r.returncode != 0 and "table schedule was edited, or made from other rows" in err, err


def test_det_writers_make_it_again(counter_trace: Path, tmp_path: Path) -> None:
    """A trace det rewrites and seals (det.seal.seal without the
    converter's lanes, as detdiff --bisect's hybrids, detrec scrub and
    conftest.reseal do) gets a packed schedule of its new rows, which the
    full pass accepts."""
    trace = tmp_path / "resealed.db"
    shutil.copy(counter_trace, trace)
    before = decoded(trace)
    db = sqlite3.connect(trace)
    with db:
        assert db.execute(OUTPUT_RESULT).rowcount == 1
    db.close()
    reseal(trace)
    after = decoded(trace)
    assert after != before and after == rows(trace)
    assert _full_check(trace, tmp_path / "cache").returncode == 0


def test_a_trace_without_it_replays_from_its_rows(counter_trace: Path, tmp_path: Path) -> None:
    """A trace of this format made before the packed schedule (no table, no
    meta schedule_rows) is valid and replays from event_rows."""
    from det.replay.native import Replayer

    trace = tmp_path / "older.db"
    shutil.copy(counter_trace, trace)
    db = sqlite3.connect(trace)
    with db:
        db.execute("DROP TABLE schedule")
        db.execute("DELETE FROM meta WHERE key = 'schedule_rows'")
    db.close()
    assert _full_check(trace, tmp_path / "cache").returncode == 0
    rep = Replayer(trace, True, False)
    try:
        assert not rep.packed
    finally:
        rep.close()
    r = detreplay(trace, env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache")))
    assert r.returncode == 0 and "outcome matches" in r.stderr.decode(), r.stderr.decode()


def test_the_replayer_reads_rows_when_the_counts_differ(counter_trace: Path, tmp_path: Path) -> None:
    """libdetsup.so reads the packed schedule only when meta schedule_rows
    counts the events the threads have (a cheap staleness check of its own,
    beside the validator's), and never with DET_REPLAY_ROWS=1."""
    from det.replay.native import Replayer

    def packed(trace: Path) -> bool:
        rep = Replayer(trace, True, False)
        try:
            return rep.packed
        finally:
            rep.close()

    assert packed(counter_trace)
    os.environ["DET_REPLAY_ROWS"] = "1"
    try:
        assert not packed(counter_trace)
    finally:
        del os.environ["DET_REPLAY_ROWS"]
    trace = tmp_path / "counted.db"
    shutil.copy(counter_trace, trace)
    db = sqlite3.connect(trace)
    with db:
        db.execute("UPDATE meta SET value = '[1, 0, 0]' WHERE key = 'schedule_rows'")
    db.close()
    assert not packed(trace)


# ---------------------------------------------------------------- the validator's cache key

def test_the_identity_sees_every_byte_and_the_length(tmp_path: Path) -> None:
    """det.seal's cache key (native.file_identity, no longer SHA-256)
    changes with any one bit flipped, wherever it is (each of the four lanes,
    the partial last stripe, past the first read), and with the length, zero
    bytes added included."""
    from det.seal import file_identity

    rng = random.Random(3)
    f = tmp_path / "f"
    for size in (0, 1, 31, 32, 33, 100003, (1 << 20) + 45):
        data = rng.randbytes(size)
        f.write_bytes(data)
        base = file_identity(f)
        assert base is not None and base == file_identity(f)
        for at in {0, 7, 8, 15, 16, 24, 31, size // 2, size - 1, (1 << 20) + 3, rng.randrange(size or 1)}:
            if 0 <= at < size:
                f.write_bytes(data[:at] + bytes([data[at] ^ 1 << rng.randrange(8)]) + data[at + 1:])
                assert file_identity(f) != base, (size, at)
        f.write_bytes(data + b"\0")
        assert file_identity(f) != base, size


def test_a_remembered_trace_edited_afterwards_is_checked_again(tmp_path: Path) -> None:
    """detrec remembers the trace it wrote as valid; once its packed schedule
    is edited, the next detreplay does the full pass again and refuses it."""
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    trace = tmp_path / "t.db"
    r = detrec("-q", "-o", trace, ROOT / "bench" / "bin" / "mutex_counter", "20000", "2", env=env)
    assert r.returncode == 0, r.stderr.decode()
    assert (tmp_path / "cache" / "det" / "valid-traces").read_text().strip()
    db = sqlite3.connect(trace)
    db.create_function("flip", 2, _flip_byte)
    with db:
        assert db.execute(_flip(1, 40)).rowcount == 1
    db.close()
    r = detreplay(trace, env=env)
    assert r.returncode == 2 and "packed schedule" in r.stderr.decode() and not r.stdout, r.stderr.decode()


@pytest.mark.parametrize("prog", ["inputs_tour", "mutex_counter"])
def test_packed_as_converted_or_made_again_from_the_rows(prog: str, tmp_path: Path) -> None:
    """The converter packs events as it makes their rows, and makes the
    schedule again from the rows after the merge when a result comes too
    late for the events it holds back (DET_CONVERT_REPACK=1 takes that way
    every time): both give the same chunks and meta schedule_rows."""
    got = []
    for db, _ in convert_each_way(tmp_path, prog, [] if prog == "inputs_tour" else ["40000", "3"],
                                  "DET_CONVERT_REPACK"):
        got.append((query(db, "SELECT * FROM schedule ORDER BY chunk"),
                    query(db, "SELECT value FROM meta WHERE key = 'schedule_rows'")))
        assert decoded(db) == rows(db)
    assert got[0] == got[1] and got[0][0] and got[0][1]
    if prog == "mutex_counter":
        assert len(got[0][0]) >= 2


def test_the_decoder_rewinds(tmp_path: Path) -> None:
    """The feeder rewinds its decoder when the program starts again (gdb):
    a thread's recent calls from the pass before must not leak into the next
    (tests/unit/c/sched_rewind.c: three passes over three chunks)."""
    import subprocess

    exe = tmp_path / "sched_rewind"
    subprocess.run(["gcc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-I", ROOT / "include", "-I",
                    ROOT / "supervisor", "-o", exe, ROOT / "tests" / "unit" / "c" / "sched_rewind.c", "-lsqlite3"],
                   check=True)
    r = subprocess.run([exe], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == "same\n", r.stdout
