"""Descriptor calls whose results replay took from the kernel of the
moment instead of the trace (tests/programs/io_calls.c names each case and
how it failed on main): each case is recorded in the default and the strict
mode and replays with the recorded output, three times."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import case_replays

CASES = ["shutdown", "pwritev2", "creds", "fionread", "winsize", "pwait2", "eventfd", "getlk", "bigpipe", "flock",
         "fclose"]


@pytest.mark.parametrize("mode", [(), ("--strict",)], ids=["default", "strict"])
@pytest.mark.parametrize("case", CASES)
def test_io_call_replays_its_recorded_result(tmp_path: Path, case: str, mode: tuple[str, ...]) -> None:
    case_replays(tmp_path, "io_calls", case, mode)
