"""The program's memory does not depend on det's mode: a local it never set
holds the same bytes when recorded and replayed (samples/uninit_local.c
sums one; preload/stack.c runs det's work on its own stack)."""

from __future__ import annotations

from pathlib import Path

from conftest import detrec, detreplay, program, sample_bin


def test_uninitialised_local_reads_the_same_when_replayed(tmp_path: Path) -> None:
    for i in range(3):
        trace = tmp_path / f"u{i}.db"
        r = detrec("-o", trace, sample_bin("uninit_local"), "2000")
        assert r.returncode == 0, r.stderr.decode()
        line = r.stdout.decode()
        assert line.startswith("consumed 2000 items, checksum 2001000, leftover "), line
        assert not line.rstrip().endswith("leftover 0"), "the read found nothing: the test would prove nothing"
        for mode in ([], ["--relaxed"]):
            rr = detreplay(*mode, trace)
            assert rr.stdout.decode() == line, f"recorded {line!r}, replayed {rr.stdout.decode()!r} {mode}"
            assert rr.returncode == 0 and b"outcome matches" in rr.stderr, rr.stderr.decode()


def test_det_start_up_leaves_the_same_stack_in_every_mode(tmp_path: Path) -> None:
    """det's start-up runs before the main thread has a det stack, and runs
    other code in each mode: it runs on a boot stack of its own, so what
    lies below main's frame is the same recorded and replayed
    (tests/programs/det_residue.c lists the words there that point into
    libdet.so; before, a replay found other ones and took another way)."""
    for flags, replays in (([], ([], ["--relaxed"])), (["--strict"], ([],))):
        trace = tmp_path / f"r{len(flags)}.db"
        r = detrec("-o", trace, *flags, program("det_residue"))
        assert r.returncode == 0, r.stderr.decode()
        assert r.stdout.strip(), "the program printed nothing"
        for mode in replays:
            rr = detreplay(*mode, trace)
            assert rr.stdout == r.stdout, f"recorded {r.stdout!r}, replayed {rr.stdout!r} {flags} {mode}"
            assert rr.returncode == 0 and b"outcome matches" in rr.stderr, rr.stderr.decode()


def test_calls_from_late_key_destructors(tmp_path: Path) -> None:
    """A thread-specific data destructor that runs after det's own (V8's,
    in every node worker) calls into det: it runs on the program's stack
    (the thread's det stack is gone), recorded and replayed."""
    trace = tmp_path / "dtor.db"
    r = detrec("-q", "-o", trace, "--", program("key_dtor"))
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == b"4 destructors ran\n"
    rr = detreplay("-q", trace)
    assert rr.returncode == 0 and rr.stdout == r.stdout, rr.stderr.decode()
