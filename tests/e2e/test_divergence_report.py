"""What detreplay says when a replay does not match: the divergence at once,
then a hint about its cause only where the trace's evidence fits it, and
only as long as finding it takes a bounded time (issue 22.7: the hint's
scan of a million-event trace used to hold the divergence back by 25-130 s,
and a single-threaded program was told it had a data race)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from conftest import detrec, detreplay, program, reseal, sample_bin
from det.analysis import race_hint
from det.check.patch import SITES_ENV
from det.check.quick import atomics_unseen
from det.names import ObjectNames
from det.trace import OutOfTime, Trace

RACE_WORDS = "most likely a data race"


def _record(tmp_path: Path, name: str, *argv: str) -> Path:
    """A recording of argv; racy_counter exits 1 (its BUG line) when the race
    lost an update in this run, 0 when not: either is a trace to read."""
    trace = tmp_path / f"{Path(argv[0]).name}.det"
    r = detrec("-o", trace, *argv)
    assert r.returncode in (0, 1) and b"trace saved" in r.stderr, r.stderr.decode()
    return trace


def _spoil_stdout(trace: Path) -> None:
    """The recorded stdout's digest no longer matches: every replay's
    outcome differs (what a race that changes the output looks like)."""
    db = sqlite3.connect(trace)
    db.execute("UPDATE outcome SET stdout_sha256 = ?", ("0" * 64,))
    db.commit()
    db.close()
    reseal(trace)


def test_race_hint_needs_two_threads_of_one_process(tmp_path: Path) -> None:
    one = _record(tmp_path, "one", str(program("hello")))
    two = _record(tmp_path, "two", str(sample_bin("racy_counter")), "200")
    with Trace(one) as tr:
        assert race_hint(tr, ObjectNames(tr, symbolize=False), "outcome") == []
    with Trace(two) as tr:
        hint = race_hint(tr, ObjectNames(tr, symbolize=False), "outcome")
        assert hint and RACE_WORDS in hint[0], hint
        # before the first thread is created there is no second thread to race with
        assert race_hint(tr, ObjectNames(tr, symbolize=False), "kind", seq=0) == []


def test_race_hint_gives_up_at_its_deadline(tmp_path: Path) -> None:
    trace = _record(tmp_path, "racy", str(sample_bin("racy_counter")), "3000")
    with Trace(trace) as tr:
        with tr.deadline(0), pytest.raises(OutOfTime):
            tr.q("SELECT count(*), sum(ts) FROM events")
        # out of time: at most one line, the hint without the locks held at
        # the end (the longest scan), or the line that says it gave up
        hint = race_hint(tr, ObjectNames(tr, symbolize=False), "outcome", seconds=0)
        assert len(hint) == 1 and (RACE_WORDS in hint[0] or "stopped looking for the cause" in hint[0]), hint
        # the trace is still usable after the deadline
        assert tr.q1("SELECT count(*) FROM events") > 100
        assert RACE_WORDS in race_hint(tr, ObjectNames(tr, symbolize=False), "outcome")[0]


def test_divergence_is_said_before_the_trace_is_scanned(tmp_path: Path, monkeypatch) -> None:
    from det import analysis
    from det.replay import cli

    # pingpong_ok prints the same line in every run: with its recorded
    # stdout spoiled, each replay's outcome differs, and nothing else does
    # (racy_counter's own race made the replay's write of its line the
    # divergence now and then, under load)
    trace = _record(tmp_path, "pingpong", str(sample_bin("pingpong_ok")), "200")
    _spoil_stdout(trace)
    said: list[str] = []
    seen_at_hint: list[list[str]] = []
    real_hint = analysis.race_hint  # (det.replay.cli imports it when a replay did not match)

    def hint_after_saying(*args, **kw):
        seen_at_hint.append(list(said))
        return real_hint(*args, **kw)

    monkeypatch.setattr(analysis, "race_hint", hint_after_saying)
    res = cli.replay(str(trace), say_now=said.append)
    assert res.diverged and not res.matched
    assert seen_at_hint and any("outcome differs" in line for line in seen_at_hint[0]), seen_at_hint
    assert res.said == len(seen_at_hint[0]) and res.lines[:res.said] == said
    # and detreplay prints each line once, the divergence first
    r = detreplay(trace)
    lines = r.stderr.decode().splitlines()
    assert r.returncode == 125
    first = next(i for i, line in enumerate(lines) if "outcome differs" in line)
    hint = next(i for i, line in enumerate(lines) if RACE_WORDS in line)
    assert first < hint and sum("outcome differs" in line for line in lines) == 1, lines


def test_race_hint_names_atomics_det_did_not_see(tmp_path: Path) -> None:
    """cas_pool hands tasks over on a list under an atomic spinlock, as
    nginx's thread pool does: recorded with --no-patch-atomics, its default
    replay diverges, and the hint says how to record what det did not see
    (main named strict mode only). A recording that patched the atomics, or
    a program without any, gets no such line."""
    trace = tmp_path / "pool.det"
    # How often a replay of one recording diverges depends on the load: up
    # to 4 recordings of 5 replays each, until one diverges.
    for _ in range(4):
        r = detrec("--no-patch-atomics", "-o", trace, "--", program("cas_pool"), "300")
        assert r.returncode == 0, r.stderr.decode()
        for _ in range(5):
            rr = detreplay(trace, timeout=120)
            if rr.returncode != 0:
                break
        if rr.returncode != 0:
            break
    err = rr.stderr.decode()
    # (the race shows at an event, or only in what the program printed)
    assert rr.returncode == 125 and ("divergence at event" in err or "outcome differs" in err), err
    assert RACE_WORDS in err and "3 atomic instructions det did not see" in err, err
    assert f"recorded without it they are events that default and relaxed replay order: detrec -o {trace.name} -- " \
        in err, err
    exe = str(program("cas_pool"))
    assert atomics_unseen(exe, {}) == 3
    assert atomics_unseen(exe, {SITES_ENV: "0:00"}) == 0  # recorded with them patched
    assert atomics_unseen(str(program("hello")), {}) == 0
