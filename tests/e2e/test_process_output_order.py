"""Several processes (and their threads) writing one stdout they share
(tests/programs/fork_output_order.c): the output order is which process's
write reached the shared open file first, decided by the kernel after det
placed each write. Replay prints the recorded order, byte for byte, in
each mode (preload/shared_out.c). On main: default 20/30 replays identical,
relaxed 0/20 (a strict recording already kept the order)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import detrec, program, replays_identically

LINES = 40


@pytest.mark.parametrize("mode", [(), ("--relaxed",), ("--strict",)], ids=["default", "relaxed", "strict"])
def test_processes_writing_one_stdout_replay_in_the_recorded_order(mode: tuple[str, ...], tmp_path: Path) -> None:
    trace = tmp_path / "order.db"
    rec_mode = ("--strict",) if mode == ("--strict",) else ()
    r = detrec("-q", *rec_mode, "-o", trace, "--", program("fork_output_order"), str(LINES), timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    lines = r.stdout.decode().splitlines()
    want = [f"P{p} T{t} {way} {i}" for p in range(3) for t in range(2) for way in ("stdio", "raw")
            for i in range(LINES)]
    assert sorted(lines[:-1]) == sorted(want) and lines[-1] == "all done", r.stdout
    replay_mode = ("--relaxed",) if mode == ("--relaxed",) else ()
    replays_identically(trace, r.stdout, n=10, mode=replay_mode)


@pytest.mark.parametrize("mode", [(), ("--relaxed",), ("--strict",)], ids=["default", "relaxed", "strict"])
def test_output_written_at_exit_replays_in_the_recorded_order(mode: tuple[str, ...], tmp_path: Path) -> None:
    """fork_exit_flush's processes print into a pipe, so their lines stay
    in their buffers until exit() writes them, past det's stdio calls; the
    parent's sleep is skipped in replay. main: 2 of 10 default replays of
    TLPI's t_fork, which does the same, printed the parent's line first."""
    trace = tmp_path / "flush.db"
    rec_mode = ("--strict",) if mode == ("--strict",) else ()
    r = detrec("-q", *rec_mode, "-o", trace, "--", program("fork_exit_flush"), "3", timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    assert sorted(r.stdout.decode().splitlines()) == sorted(
        [f"child {i} of 3" for i in range(3)] + ["parent after 3 children"]), r.stdout
    replay_mode = ("--relaxed",) if mode == ("--relaxed",) else ()
    replays_identically(trace, r.stdout, n=10, mode=replay_mode)
