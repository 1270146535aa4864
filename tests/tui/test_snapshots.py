"""dettui's screens as pictures (pytest-textual-snapshot), at a fixed
terminal size, on synthetic traces with fixed contents and relative names.

Rules: a snapshot that changes is a change of what users see: look at the
report (`pytest --snapshot-report`), then `pytest tests/tui --snapshot-update`
if the new picture is right.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from textual.pilot import Pilot
from tuitraces import SIZE, bank, bank_swapped, deadlock, in_tmp  # noqa: F401 - fixtures

from det.tui.app import DetTui


@pytest.fixture(autouse=True)
def plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pictures do not depend on the caller's colour wishes (NO_COLOR) or Textual's own settings."""
    for name in list(os.environ):
        if name == "NO_COLOR" or (name.startswith("TEXTUAL") and not name.startswith("TEXTUAL_SNAPSHOT")):
            monkeypatch.delenv(name)


async def loaded(pilot: Pilot) -> None:
    """Until the screen has read the schedule (or compared the traces)."""
    for _ in range(400):
        s = pilot.app.screen
        if getattr(s, "lanes_loaded", False) or getattr(s, "result", None) is not None:
            break
        await pilot.pause(0.05)
    await pilot.pause(0.2)


def test_trace_view(snap_compare, bank: str) -> None:
    assert snap_compare(DetTui([bank]), terminal_size=SIZE, run_before=loaded, press=["j", "j", "j"])


def test_deadlock_view(snap_compare, deadlock: str) -> None:
    assert snap_compare(DetTui([deadlock]), terminal_size=SIZE, run_before=loaded, press=["end"])


def test_diff_view(snap_compare, bank: str, bank_swapped: str) -> None:
    assert snap_compare(DetTui([bank, bank_swapped]), terminal_size=SIZE, run_before=loaded)


def test_filter_dialog(snap_compare, bank: str) -> None:
    assert snap_compare(DetTui([bank]), terminal_size=SIZE, run_before=loaded, press=["f", *"T1"])


def test_help(snap_compare, bank: str) -> None:
    assert snap_compare(DetTui([bank]), terminal_size=SIZE, run_before=loaded, press=["question_mark"])


def test_newer_format_error(snap_compare, bank: str) -> None:
    db = sqlite3.connect(bank)
    db.execute("PRAGMA user_version = 99")
    db.commit()
    db.close()
    os.utime(bank, (1767225600, 1767225600))   # 2026-01-01 00:00 UTC: the screen says when the file changed
    assert Path(bank).exists()
    assert snap_compare(DetTui([bank]), terminal_size=SIZE)
