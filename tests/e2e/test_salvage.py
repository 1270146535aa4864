"""A detrec killed with SIGKILL mid-run leaves its capture log; the trace
made from it (by `detrec salvage`, or by the tools by themselves) replays,
and a log whose end is torn or damaged is cut, never misread."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from conftest import detrec, detreplay, killed_recording, query


def replays_all(inc: Path) -> int:
    n = query(inc, "SELECT count(*) FROM event_rows")[0][0]
    assert n > 100
    assert query(inc, "SELECT value FROM meta WHERE key = 'forced'") == [(0,)]
    for mode in ([], ["--relaxed"]):
        rr = detreplay(*mode, inc)
        # an incomplete recording has no outcome to match: never exit 0 as if it had
        assert rr.returncode == 125, rr.stderr.decode()
        assert f"replayed all {n} events of the recording, which did not finish".encode() in rr.stderr, \
            rr.stderr.decode()
        assert b"matches" not in rr.stderr
    return n


def test_sigkilled_detrec_is_salvaged_and_replays(tmp_path: Path) -> None:
    log = killed_recording(tmp_path)
    r = detrec("salvage", log)
    assert r.returncode == 0, r.stderr.decode()
    assert b"salvaged" in r.stderr and b"lost.db.incomplete" in r.stderr
    assert not log.exists()  # converted: the log goes
    inc = tmp_path / "lost.db.incomplete"
    assert query(inc, "SELECT value FROM meta WHERE key = 'salvaged'") == [(1,)]
    assert query(inc, "SELECT count(*) FROM outcome") == [(0,)]
    # the threads' orders are whole: every thread's events are numbered 0..n-1
    for tid, n, top in query(inc, "SELECT tid, count(*), max(idx) FROM events GROUP BY tid"):
        assert top == n - 1, tid
    replays_all(inc)


def test_tools_salvage_by_themselves(tmp_path: Path) -> None:
    killed_recording(tmp_path)
    # detreplay given the name the trace would have had
    rr = detreplay(tmp_path / "lost.db")
    assert rr.returncode == 125, rr.stderr.decode()
    assert b"salvaged" in rr.stderr and b"replayed all" in rr.stderr
    assert not (tmp_path / "lost.db.incomplete.log").exists()


def test_torn_and_damaged_logs_are_cut(tmp_path: Path) -> None:
    log = killed_recording(tmp_path)
    size = log.stat().st_size
    # a torn tail: the last chunk lacks its end
    torn = tmp_path / "torn"
    torn.mkdir()
    tlog = torn / log.name
    shutil.copy(log, tlog)
    os.truncate(tlog, size - 1000)
    r = detrec("salvage", tlog)
    assert r.returncode == 0, r.stderr.decode()
    assert b"torn end cut off" in r.stderr, r.stderr.decode()
    n_torn = replays_all(torn / "lost.db.incomplete")
    # a damaged byte in the middle: nothing after it is read
    bad = tmp_path / "bad"
    bad.mkdir()
    blog = bad / log.name
    shutil.copy(log, blog)
    with open(blog, "r+b") as f:
        f.seek(size // 2)
        b = f.read(1)
        f.seek(size // 2)
        f.write(bytes([b[0] ^ 0x5A]))
    r = detrec("salvage", blog)
    assert r.returncode == 0, r.stderr.decode()
    assert b"torn end cut off" in r.stderr, r.stderr.decode()
    n_bad = replays_all(bad / "lost.db.incomplete")
    assert n_bad < n_torn
    # not a log at all
    junk = tmp_path / "junk.db.incomplete.log"
    junk.write_bytes(b"hello" * 100)
    r = detrec("salvage", junk)
    assert r.returncode != 0 and b"not a det capture log" in r.stderr
    assert len(r.stderr.decode().strip().splitlines()) == 1
