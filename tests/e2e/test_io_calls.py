"""Descriptor calls whose results replay took from the kernel of the
moment instead of the trace (tests/programs/io_calls.c names each case and
how it failed on main): each case is recorded in the default and the strict
mode and replays with the recorded output, three times."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import detrec, detreplay, program

CASES = ["shutdown", "pwritev2", "creds", "fionread", "winsize", "pwait2", "eventfd", "getlk", "bigpipe", "flock",
         "fclose"]


@pytest.mark.parametrize("mode", [(), ("--strict",)], ids=["default", "strict"])
@pytest.mark.parametrize("case", CASES)
def test_io_call_replays_its_recorded_result(tmp_path: Path, case: str, mode: tuple[str, ...]) -> None:
    trace = tmp_path / f"{case}.db"
    r = detrec("-q", *mode, "-o", trace, "--", program("io_calls"), case, cwd=tmp_path)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout, "the program said nothing"
    for i in range(3):
        rr = detreplay("-q", trace, cwd=tmp_path)
        assert rr.returncode == 0, f"replay {i + 1}: {rr.stderr.decode()}"
        assert rr.stdout == r.stdout, f"replay {i + 1}: {rr.stdout!r}, recorded {r.stdout!r}"
