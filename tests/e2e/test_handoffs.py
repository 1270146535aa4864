"""Hand-offs between threads through descriptors (issue 22, cause 1).

A thread pool's thread stores a handler pointer and then writes an eventfd,
a pipe or a socket pair; the main thread waits for it (epoll, poll, select or
a blocking read), reads it and calls through the pointer, as nginx's thread
pool does. The descriptor is the only happens-before between the store and
the call: a replay that lets the wait return before the write calls NULL.
Both replay modes that run threads in parallel (ordered and relaxed) must
keep it. Before the fix the eventfd cases were killed by SIGSEGV in every
replay and the non-blocking pipe cases diverged ("a pipe read returned
another count").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import detrec, program, replay_matches

CASES = [
    ("eventfd", "epoll"),
    ("eventfd", "read"),
    ("eventfd", "poll"),
    ("pipe_nb", "poll"),
    ("pipe_nb", "epoll"),
    ("socketpair_nb", "select"),
]


@pytest.mark.parametrize(("channel", "wait"), CASES, ids=[f"{c}-{w}" for c, w in CASES])
def test_handoff_through_descriptor_replays(tmp_path: Path, channel: str, wait: str) -> None:
    trace = tmp_path / "handoff.db"
    r = detrec("-q", "-o", trace, "--", program("eventfd_handoff"), channel, wait, "300")
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().startswith("300 rounds, sum "), r.stdout.decode()
    replay_matches(trace, [], 4)
    replay_matches(trace, ["--relaxed"], 3)


@pytest.mark.parametrize(("channel", "modes"), [("pipe", ([], ["--relaxed"])), ("socketpair", (["--relaxed"],))])
def test_write_larger_than_the_buffer_replays(tmp_path: Path, channel: str, modes: tuple[list[str], ...]) -> None:
    """A write is a hand-off that the reads after it wait for; one larger than
    the pipe's or socket's buffer returns only once the reader took most of
    it, so replay lets the readers go once the writer reached its write (a
    replay that waited for the write to end stalled at the first read).
    (An ordered replay of a socket pair can still stall where the writer
    closes its end: it keeps the reads in the global order, and only a pipe
    is read ahead while a read waits; not this change's.)"""
    trace = tmp_path / "bulk.db"
    r = detrec("-q", "-o", trace, "--", program("socketpair_bulk"), channel, "2048")
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().startswith("read 2097152 bytes"), r.stdout.decode()
    for mode in modes:
        replay_matches(trace, mode, 3)
