"""Thread and process calls det got wrong (tests/programs/process_calls.c
names each case and how it failed on main): each is recorded in the
default and the strict mode, behaves as Linux does when recorded, and
replays with the recorded output, three times."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import case_replays

CASES = ["robust", "timedlock", "futexargs", "stopcont", "settid", "stopkill", "shmrmid", "pdeathsig"]


@pytest.mark.parametrize("mode", [(), ("--strict",)], ids=["default", "strict"])
@pytest.mark.parametrize("case", CASES)
def test_process_case_records_as_linux_does_and_replays(tmp_path: Path, case: str, mode: tuple[str, ...]) -> None:
    case_replays(tmp_path, "process_calls", case, mode)
