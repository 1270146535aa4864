"""The capture log's block checksum (recorder/logfmt.h): the SSE4.2 path and
the portable one give the same value, so a log written on one CPU checks on
any other (qemu's TCG guest of make check-kmod has no SSE4.2)."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_checksum_is_the_same_with_and_without_sse42(tmp_path: Path) -> None:
    exe = tmp_path / "log_check"
    subprocess.run(["gcc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-I", ROOT / "include", "-I",
                    ROOT / "recorder", "-o", exe, ROOT / "tests" / "unit" / "c" / "log_check.c"], check=True)
    r = subprocess.run([exe], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == "same\n", r.stdout + r.stderr
