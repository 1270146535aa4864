"""Pids handed to the kernel: in replay getpid, gettid and fork's result are
the recorded ids, and every call that takes one (fcntl F_SETOWN, pidfd_open,
kcmp, kill, tgkill, sigqueue, the sched_ and priority calls, prlimit,
process_vm_readv, /proc/PID paths, waitpid...) must still reach the process
or thread it names; what the kernel hands back (F_GETOWN, getpgid, /proc
directory names) must be the recorded ids again (tests/programs/pid_kernel.c)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import detrec, detreplay, program

REPLAYS = 5


def record(trace: Path, *mode: str) -> bytes:
    r = detrec("-q", *mode, "-o", trace, "--", program("pid_kernel"), timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    out = r.stdout
    assert out.endswith(b"done\n"), out.decode()
    assert b"FAIL" not in out, f"the recording itself failed a check:\n{out.decode()}"
    return out


@pytest.mark.parametrize("rec_mode, replay_mode", [((), ()), ((), ("--relaxed",)), (("--strict",), ())],
                         ids=["default", "relaxed", "strict"])
def test_pids_reach_the_kernel(rec_mode: tuple[str, ...], replay_mode: tuple[str, ...], tmp_path: Path) -> None:
    trace = tmp_path / "pids.db"
    recorded = record(trace, *rec_mode)
    for i in range(REPLAYS):
        r = detreplay("-q", *replay_mode, trace, timeout=120)
        out = r.stdout.decode()
        failed = [line for line in out.splitlines() if line.startswith("FAIL")]
        assert not failed, f"replay {i + 1}: calls failed\n" + "\n".join(failed) + "\n" + r.stderr.decode()
        assert r.returncode == 0, f"replay {i + 1}: exit {r.returncode}\n{r.stderr.decode()}"
        assert r.stdout == recorded, f"replay {i + 1}: output differs\n{out}"
