"""Resources a program asks the kernel for, with det's own beside them
(issue 23.7): det's shared region is gigabytes of address space that a
program's mlockall must not fault in and pin."""

from __future__ import annotations

from pathlib import Path

from conftest import detrec, detreplay, program

LOCKED = b"locked: the program's memory, not det's"


def test_mlockall_locks_the_program_not_det(tmp_path: Path) -> None:
    """mlockall(MCL_CURRENT | MCL_FUTURE) locks the program's 64 MiB buffer
    and not det's rings (on main: 4.3 GB locked, 31 s, exit 1)."""
    trace = tmp_path / "mlock.det"
    r = detrec("-o", trace, program("mlock_all"), timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == LOCKED, r.stdout + r.stderr
    for mode in ([], ["--relaxed"]):
        r = detreplay(*mode, trace, timeout=60)
        assert r.returncode == 0 and r.stdout.strip() == LOCKED, r.stdout + r.stderr
    strict = tmp_path / "mlock-strict.det"
    r = detrec("--strict", "-o", strict, program("mlock_all"), timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == LOCKED, r.stdout + r.stderr
    r = detreplay(strict, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == LOCKED, r.stdout + r.stderr
