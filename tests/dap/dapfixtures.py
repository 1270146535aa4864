"""tests/dap's fixtures (imported by its tests): Microsoft's DAP client installed from npm, and a
trace of gdb_counter recorded from a copy of the program (so a process
left behind is found by its executable's path, whoever else runs tests).

Rules: node and npm missing fail the tests (tools/setup.sh installs them);
the client comes from tests/dap/client's package-lock.json (`npm ci`) into
build/dap-client, once per lock file.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, detrec, need, program

CLIENT_SRC = Path(__file__).parent / "client"
CLIENT_DIR = ROOT / "build" / "dap-client"


@pytest.fixture(scope="session")
def dap_client() -> Path:
    """The directory whose node_modules has @vscode/debugadapter-testsupport."""
    need("node")
    npm = need("npm")
    CLIENT_DIR.mkdir(parents=True, exist_ok=True)
    lock = (CLIENT_SRC / "package-lock.json").read_bytes()
    stamp = CLIENT_DIR / ".installed"
    with open(CLIENT_DIR / ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if not stamp.exists() or stamp.read_bytes() != lock:
            for f in ("package.json", "package-lock.json"):
                shutil.copy(CLIENT_SRC / f, CLIENT_DIR / f)
            r = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=CLIENT_DIR,
                               capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                pytest.fail(f"npm ci of tests/dap/client failed: {r.stderr.strip()}", pytrace=False)
            stamp.write_bytes(lock)
    return CLIENT_DIR


@pytest.fixture
def counter_trace(tmp_path: Path) -> tuple[Path, Path]:
    """(trace, executable) of gdb_counter 20, recorded from a copy in tmp_path."""
    exe = tmp_path / "gdb_counter"
    shutil.copy(program("gdb_counter"), exe)
    trace = tmp_path / "counter.db"
    r = detrec("-q", "-o", trace, "--", exe, "20")
    assert r.returncode == 0, r.stderr.decode()
    return trace, exe
