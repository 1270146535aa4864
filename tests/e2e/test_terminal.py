"""On a terminal, the program's standard streams are a terminal under det
too (tests/programs/prompt.c in a real terminal: tmux): its prompt shows
before the user types, and the recording replays, in a terminal or not."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import DETREC, DETREPLAY, ROOT, detrec, detreplay, program


def tmux() -> str:
    path = shutil.which("tmux")
    if not path:
        pytest.fail("tmux is missing (Debian: apt-get install tmux); tools/setup.sh installs it", pytrace=False)
    return path


class Pane:
    def __init__(self, name: str) -> None:
        self.name = name
        subprocess.run([tmux(), "new-session", "-d", "-s", name, "-x", "150", "-y", "40",
                        "env -i PATH=/usr/bin:/bin HOME=/tmp TERM=xterm bash --norc --noprofile"], check=True)

    def send(self, *keys: str) -> None:
        subprocess.run([tmux(), "send-keys", "-t", self.name, *keys], check=True)

    def text(self) -> str:
        return subprocess.run([tmux(), "capture-pane", "-p", "-t", self.name], capture_output=True,
                              check=True).stdout.decode()

    def wait_for(self, words: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.text()
            if words in text:
                return text
            time.sleep(0.1)
        raise AssertionError(f"{words!r} did not appear in the terminal:\n{self.text()}")

    def close(self) -> None:
        subprocess.run([tmux(), "kill-session", "-t", self.name], capture_output=True)


def test_prompt_in_a_terminal(tmp_path: Path) -> None:
    trace = tmp_path / "prompt.db"
    pane = Pane(f"det-test-terminal-{os.getpid()}")
    try:
        pane.send(f"cd {ROOT} && {DETREC} -o {trace} {program('prompt')}; echo REC-$((1 + 1))-DONE", "Enter")
        # The prompt has no newline: it shows before anything is typed only
        # if stdout is a terminal (line-buffered, flushed before the read).
        text = pane.wait_for("name?")  # (tmux trims the trailing space)
        assert "hello" not in text, text
        pane.send("bob", "Enter")
        text = pane.wait_for("REC-2-DONE")  # (not the typed command)
        assert "hello bob; isatty: stdin 1 stdout 1 stderr 1" in text, text
        assert "detrec: exit 0" in text, text
        # Replayed in the terminal: the same streams, the same output.
        pane.send(f"{DETREPLAY} {trace}; echo REPLAY-$((1 + 1))-DONE", "Enter")
        text = pane.wait_for("REPLAY-2-DONE")
        # (4: the read scanf makes of the terminal is one)
        assert "detreplay: replayed 4 events; outcome matches the recording: exit 0" in text, text
    finally:
        pane.close()
    # Replayed outside a terminal: the program still gets terminals, and the
    # input it read then.
    r = detreplay(trace, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == b"name? hello bob; isatty: stdin 1 stdout 1 stderr 1\n", r.stdout
    assert r.stderr.startswith(b"bye bob\n") and b"outcome matches" in r.stderr


def test_pipes_stay_pipes(tmp_path: Path) -> None:
    trace = tmp_path / "piped.db"
    r = detrec("-o", trace, program("prompt"), input=b"ann\n")
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == b"name? hello ann; isatty: stdin 0 stdout 0 stderr 0\n"
    r = detreplay(trace)
    assert r.returncode == 0 and b"outcome matches" in r.stderr, r.stderr.decode()
    assert r.stdout == b"name? hello ann; isatty: stdin 0 stdout 0 stderr 0\n"
