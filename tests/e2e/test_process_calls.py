"""Thread and process calls det got wrong (tests/programs/process_calls.c
names each case and how it failed on main): each is recorded in the
default and the strict mode, behaves as Linux does when recorded, and
replays with the recorded output, three times."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import detrec, detreplay, program

CASES = ["robust", "timedlock", "futexargs", "stopcont", "settid", "pdeathsig"]


@pytest.mark.parametrize("mode", [(), ("--strict",)], ids=["default", "strict"])
@pytest.mark.parametrize("case", CASES)
def test_process_case_records_as_linux_does_and_replays(tmp_path: Path, case: str, mode: tuple[str, ...]) -> None:
    trace = tmp_path / f"{case}.db"
    r = detrec("-q", *mode, "-o", trace, "--", program("process_calls"), case, timeout=120)
    assert r.returncode == 0, f"recorded: {r.stdout!r} {r.stderr.decode()}"
    for i in range(3):
        rr = detreplay("-q", trace, timeout=120)
        assert rr.returncode == 0, f"replay {i + 1}: {rr.stderr.decode()}"
        assert rr.stdout == r.stdout, f"replay {i + 1}: {rr.stdout!r}, recorded {r.stdout!r}"
