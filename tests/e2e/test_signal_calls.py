"""Signal behaviours det got wrong (tests/programs/signal_calls.c names each
case and how it failed on main): each is recorded in the default and the
strict mode, behaves as Linux does when recorded, and replays with the
recorded output, three times."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import case_replays, replays_in_each_mode

CASES = ["sleep", "siginfo", "ticks", "semintr", "semtime", "altstack", "unblock", "samask", "futexintr", "timeleft"]


@pytest.mark.parametrize("mode", [(), ("--strict",)], ids=["default", "strict"])
@pytest.mark.parametrize("case", CASES)
def test_signal_case_records_as_linux_does_and_replays(tmp_path: Path, case: str, mode: tuple[str, ...]) -> None:
    case_replays(tmp_path, "signal_calls", case, mode)


def test_signals_sent_to_a_thread_in_sigwait_between_sleeps(tmp_path: Path) -> None:
    """sigwait_kills: three pthread_kills, a sleep after each, to a thread
    that takes them with sigwait. A relaxed replay, which skips the sleeps,
    let the kills come while the first was pending (one signal): 2 relaxed
    replays of 3 stalled. The sigwaits now join the signalled thread's
    events that another thread's sleep comes after."""
    replays_in_each_mode(tmp_path, "sigwait_kills", b"affinity asked: 0; sent 3, taken 3\n", relaxed=5)
