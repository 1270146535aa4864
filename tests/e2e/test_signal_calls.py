"""Signal behaviours det got wrong (tests/programs/signal_calls.c names each
case and how it failed on main): each is recorded in the default and the
strict mode, behaves as Linux does when recorded, and replays with the
recorded output, three times."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import case_replays

CASES = ["sleep", "siginfo", "ticks", "semintr", "semtime", "altstack", "unblock", "samask", "futexintr", "timeleft"]


@pytest.mark.parametrize("mode", [(), ("--strict",)], ids=["default", "strict"])
@pytest.mark.parametrize("case", CASES)
def test_signal_case_records_as_linux_does_and_replays(tmp_path: Path, case: str, mode: tuple[str, ...]) -> None:
    case_replays(tmp_path, "signal_calls", case, mode)
