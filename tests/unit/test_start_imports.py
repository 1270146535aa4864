"""detrec's and detreplay's start-up (issue 25): a plain recording or replay
imports only what it uses (the other subcommands' modules are imported when
used), and the commands end without the interpreter's teardown
(det.command_end) yet as an exit must: atexit handlers run, buffered output
written, the status kept."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

PY = ROOT / ".venv" / "bin" / "python"
BIN = ROOT / ".venv" / "bin"

# modules of other commands and options, never needed by `detrec -q -- PROG` (once detcheck's quick
# part of PROG is cached: det.check.quick, standard library only) or by `detreplay TRACE` when the
# replay matches
NOT_FOR_RECORDING = ("det.check.elf", "det.check.scan", "det.check.patch", "det.check.cli", "det.check.lines",
                     "det.check.verdict", "det.check.syscalls", "det.hunt", "det.verdict", "det.replay.cli",
                     "det.analysis", "det.record.pack",
                     "det.record.huntcli", "det.compare", "det.tui", "det.validate")
NOT_FOR_REPLAYING = ("det.check", "det.hunt", "det.verdict", "det.record.cli", "det.record.engine",
                     "det.record.huntcli", "det.compare", "det.tui", "det.analysis", "det.names")


def imported(cmd: list[str], env: dict[str, str] | None = None) -> set[str]:
    """The modules the command imported (python -X importtime), after checking it succeeded."""
    r = subprocess.run([str(PY), "-X", "importtime", *cmd], capture_output=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    return set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \| *(\S+)$", r.stderr.decode(), re.M))


def unwanted(mods: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in mods if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_a_plain_recording_and_replay_import_only_what_they_use(tmp_path: Path) -> None:
    trace = tmp_path / "t.db"
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    first = imported([str(BIN / "detrec"), "-q", "-o", str(tmp_path / "first.db"), "--", "/bin/true"], env)
    assert "det.check.elf" in first  # (the first recording of a build reads it)
    rec = imported([str(BIN / "detrec"), "-q", "-o", str(trace), "--", "/bin/true"], env)
    assert "det.record.engine" in rec  # (the parse found the modules)
    assert unwanted(rec, NOT_FOR_RECORDING) == []
    rep = imported([str(BIN / "detreplay"), str(trace)])
    assert "det.replay.cli" in rep
    assert unwanted(rep, NOT_FOR_REPLAYING) == []


def end(code: str, stdout: int = subprocess.PIPE) -> subprocess.CompletedProcess:
    prog = ("import atexit, sys, tempfile\n"
            "from det.command_end import end_command\n" + code)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # (output stays buffered until the end)
    return subprocess.run([str(PY), "-c", prog], stdout=stdout, stderr=subprocess.PIPE, env=env, timeout=60)


def test_end_command_exits_as_an_exit_does(tmp_path: Path) -> None:
    d = tmp_path / "kept"
    r = end(f"d = tempfile.TemporaryDirectory(dir={str(tmp_path)!r}); open(d.name + '/f', 'w').close()\n"
            f"atexit.register(lambda: print('atexit ran', file=sys.stderr))\n"
            f"import os; os.symlink(d.name, {str(d)!r})\n"
            "sys.stdout.write('buffered, no newline'); sys.stderr.write('err, no newline; ')\n"
            "end_command(7)\nprint('not reached')")
    assert r.returncode == 7
    assert r.stdout == b"buffered, no newline"
    assert r.stderr == b"err, no newline; atexit ran\n"
    assert not d.resolve().exists()  # tempfile's finalizer ran (atexit)


def test_end_command_waits_for_threads_as_an_exit_does() -> None:
    """A thread that is not a daemon, and a thread pool's pending work, finish first."""
    r = end("import threading, time, concurrent.futures\n"
            "threading.Thread(target=lambda: (time.sleep(0.3), print('thread done'))).start()\n"
            "pool = concurrent.futures.ThreadPoolExecutor(1)\n"
            "pool.submit(lambda: (time.sleep(0.3), print('work done')))\n"
            "end_command(0)")
    assert r.returncode == 0 and sorted(r.stdout.decode().split("\n")) == ["", "thread done", "work done"], r


def test_end_command_with_a_closed_stdout_ends_as_python_does() -> None:
    """A stream it cannot flush (its reader gone) is left to the interpreter's
    own end: the same status and the same report as a plain sys.exit."""
    def closed_stdout(end_with: str) -> subprocess.CompletedProcess:
        r, w = os.pipe()
        os.close(r)
        try:
            return end(f"sys.stdout.write('x' * 100)\n{end_with}(3)", stdout=w)
        finally:
            os.close(w)

    ours, plain = closed_stdout("end_command"), closed_stdout("sys.exit")
    assert plain.returncode == 120 and b"BrokenPipeError" in plain.stderr, plain.stderr  # (what Python does)
    assert (ours.returncode, ours.stderr) == (plain.returncode, plain.stderr)


if __name__ == "__main__":
    sys.exit(subprocess.call([sys.executable, "-m", "pytest", "-q", __file__]))
