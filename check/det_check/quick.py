"""detcheck's quick part, for detrec's start: is the program statically
linked, how many raw system call instructions and atomic instructions
outside det-cc its own code has; and the one line detrec says when the mode
it records in will not see them.

Cost: the answer is cached per file (path, size, mtime) in
$XDG_CACHE_HOME/det/detcheck-quick.json, so only the first recording of a
build pays, in a process of its own while the program runs. There a regular expression over the executable sections
(det.check.scan's QUICK_PATTERN) finds where such an instruction could
start; capstone is imported only when there is such a place to confirm
(not for a program with none).

Rules of this file:
  - Standard library only at import; never fails detrec: an unreadable
    cache, a file that is not ELF or capstone missing mean no line.
  - The check proper runs as `python -m det.check.quick PATH`, which
    prints its answer as JSON and stores it in the cache. detrec makes it
    nice 19 while the program runs and gives it detrec's own priority back
    when the run is over (where the system lets it: root or RLIMIT_NICE),
    so a busy machine does not starve it past detrec's wait.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

CACHE_NAME = "detcheck-quick.json"
CACHE_ENTRIES = 256
VERSION = 2  # of what an entry holds; bump when quick() finds more or differently


def _cache_file() -> Path | None:
    base = os.environ.get("XDG_CACHE_HOME") or (os.path.join(os.environ["HOME"], ".cache")
                                                 if os.environ.get("HOME") else None)
    return Path(base) / "det" / CACHE_NAME if base else None


def _key(path: str) -> str | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{VERSION}:{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}"


def _load(f: Path | None) -> dict:
    if f is None:
        return {}
    try:
        data = json.loads(f.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _store(f: Path | None, cache: dict) -> None:
    if f is None:
        return
    try:
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_name(f"{f.name}.{os.getpid()}")
        tmp.write_text(json.dumps(dict(list(cache.items())[-CACHE_ENTRIES:])))
        os.replace(tmp, f)
    except OSError:
        pass


def compute(path: str) -> dict:
    """{static, det_cc, syscalls: [names], atomics: count} of the program's own code."""
    from .elf import read_elf
    from .scan import QUICK_PATTERN, candidates, scan

    elf = read_elf(path)
    out = {"static": elf.static, "det_cc": elf.det_cc is not None, "syscalls": [], "atomics": 0}
    if not candidates(elf, QUICK_PATTERN):
        return out  # no place such an instruction could start: no disassembly
    result = scan(elf, quick=True)
    out["syscalls"] = [s.detail for s in result.sites if s.kind == "syscall"]
    out["atomics"] = sum(1 for s in result.sites if s.kind == "atomic")
    return out


class QuickCheck:
    """compute(path) for detrec: from the cache at once when this version of
    the file is in it, else in a process of its own at the lowest priority
    while the program runs (the first recording of a build must not wait
    for capstone, ~0.1-0.2 s; a thread would hold detrec's GIL meanwhile,
    which forwards the program's output)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.found: dict | None = None
        self._proc: subprocess.Popen | None = None
        key = _key(path)
        if key is None:
            return
        cached = _load(_cache_file()).get(key)
        if isinstance(cached, dict):
            self.found = cached
            return
        try:
            self._proc = subprocess.Popen([sys.executable, "-m", __name__, path], stdin=subprocess.DEVNULL,
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except OSError:
            self._proc = None
            return
        self._renice(19)

    def _renice(self, nice: int) -> None:
        assert self._proc is not None
        try:
            os.setpriority(os.PRIO_PROCESS, self._proc.pid, nice)
        except OSError:  # gone already, or not allowed to raise its priority again
            pass

    def ready(self) -> bool:
        """Whether the answer came from the cache (or there is none to wait for)."""
        return self._proc is None

    def wait(self, timeout: float) -> dict | None:
        if self._proc is not None:
            self._renice(os.getpriority(os.PRIO_PROCESS, 0))  # the run is over: nothing left to disturb
            try:
                out, _ = self._proc.communicate(timeout=timeout)
                found = json.loads(out) if self._proc.returncode == 0 else None
                self.found = found if isinstance(found, dict) else None
            except (subprocess.TimeoutExpired, ValueError):
                self._proc.kill()
                self._proc.wait()
            self._proc = None
        return self.found


def atomics_unseen(path: str, env: dict[str, str]) -> int:
    """How many atomic instructions outside det-cc the program at path has
    that a recording in env did not trap (detrec --patch-atomics puts them
    in env): 0 when it trapped them, or when that is not known (the cache,
    else the check; never an error: detreplay says it after a divergence)."""
    from .patch import SITES_ENV

    if SITES_ENV in env:
        return 0
    key = _key(path)
    found = _load(_cache_file()).get(key) if key else None
    if not isinstance(found, dict):
        try:
            found = check_and_remember(path)
        except Exception:  # noqa: BLE001 (capstone missing, an odd file: nothing to say)
            return 0
    if not isinstance(found, dict) or found.get("unreadable") or found.get("det_cc"):
        return 0
    return int(found.get("atomics") or 0)


def check_and_remember(path: str) -> dict | None:
    """compute(path), kept in the cache."""
    from .elf import BadInput

    key = _key(path)
    if key is None:
        return None
    try:
        found = compute(path)
    except BadInput:  # a script, a damaged file: remembered too, not checked at each recording
        found = {"unreadable": True}
    f = _cache_file()
    cache = _load(f)
    cache.pop(key, None)
    cache[key] = found
    _store(f, cache)
    return found


def unseen_line(found: dict | None, name: str, mode: str) -> str | None:
    """The one line to say when recording name in mode ("default", "strict",
    "logical") and its own code has what that mode does not see."""
    if not found or found.get("unreadable") or found.get("static"):
        return None  # (a static program goes to detrec --ptrace, with its own line)
    parts = []
    calls = found["syscalls"]
    if calls:
        names = sorted(set(calls))
        parts.append(f"{len(calls)} raw syscall instruction{'s' if len(calls) > 1 else ''} ({', '.join(names[:4])}"
                     + (", ..." if len(names) > 4 else "") + ")")
    n = found["atomics"]
    if n and not found["det_cc"] and mode != "strict":
        parts.append(f"{n} atomic instruction{'s' if n > 1 else ''} outside det-cc (their order is not recorded)")
    if not parts:
        return None
    line = f"{name}: its code has {' and '.join(parts)} that {mode} mode does not see; `detcheck {name}` says where"
    if calls:
        line += "; `detrec --ptrace` sees system calls at the kernel boundary"
    if n and not found["det_cc"] and mode != "strict":
        line += "; `detrec --patch-atomics` records them"
    return line


if __name__ == "__main__":  # QuickCheck's process: the answer on stdout, as JSON
    try:
        print(json.dumps(check_and_remember(sys.argv[1])))
    except Exception:  # noqa: BLE001 (not ELF, damaged, capstone missing: no line)
        sys.exit(1)
