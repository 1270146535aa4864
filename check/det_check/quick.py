"""detcheck's quick part, for detrec's start: is the program statically
linked, which raw system call instructions and atomic instructions outside
det-cc its own code has (the atomics with their bytes: detrec has
libdet.so patch them, preload/trapped_atomics.c); and the one line detrec
says when the mode it records in will not see something.

Cost: the answer is cached per file (path, size, mtime) in
$XDG_CACHE_HOME/det/detcheck-quick.json, so only the first recording of a
build pays, before the program starts (the sites must be in its
environment): a regular expression over the executable sections
(det.check.scan's QUICK_PATTERN) finds where such an instruction could
start, and capstone is imported only when there is such a place to confirm
(not for a program with none): /bin/true 20 ms, nginx 80 ms, gdb 0.45 s.

Rules of this file:
  - Standard library only at import; never fails detrec: an unreadable
    cache, a file that is not ELF or capstone missing mean no answer.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

CACHE_NAME = "detcheck-quick.json"
CACHE_ENTRIES = 256
VERSION = 4  # of what an entry holds; bump when quick() finds more or differently


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
    """{static, det_cc, syscalls: [names], atomics: count, sites: [[address, bytes in hex]], random:
    count of rdrand/rdseed} of the program's own code."""
    from .elf import read_elf
    from .patch import site_bytes
    from .scan import QUICK_PATTERN, candidates, scan

    elf = read_elf(path)
    out = {"static": elf.static, "det_cc": elf.det_cc is not None, "syscalls": [], "atomics": 0, "sites": [],
           "random": 0}
    if not candidates(elf, QUICK_PATTERN):
        return out  # no place such an instruction could start: no disassembly
    result = scan(elf, quick=True)
    out["syscalls"] = [s.detail for s in result.sites if s.kind == "syscall"]
    atomics = [s.address for s in result.sites if s.kind == "atomic"]
    out["atomics"] = len(atomics)
    out["random"] = sum(1 for s in result.sites if s.kind in ("rdrand", "rdseed"))
    out["sites"] = [[a, code.hex()] for a, code in site_bytes(elf, atomics)]
    return out


def known(path: str) -> dict | None:
    """compute(path), from the cache when this version of the file is in it,
    else computed now and kept; None when it cannot be (capstone missing)."""
    key = _key(path)
    cached = _load(_cache_file()).get(key) if key else None
    if isinstance(cached, dict):
        return cached
    try:
        return check_and_remember(path)
    except Exception:  # noqa: BLE001 (capstone missing, an odd file: nothing to say)
        return None


_PREFIXES = frozenset(b"\x66\xf0\xf2\xf3\x2e\x3e\x26\x36\x64\x65")


def is_xchg(code: bytes) -> bool:
    """Whether the instruction is xchg with memory (opcode 86 or 87 after
    prefixes and REX), not a lock-prefixed read-modify-write."""
    i = 0
    while i < len(code) and code[i] in _PREFIXES:
        i += 1
    if i < len(code) and 0x40 <= code[i] <= 0x4F:
        i += 1
    return i < len(code) and code[i] in (0x86, 0x87)


def patch_sites(found: dict | None, xchg: bool = False) -> list[tuple[int, bytes]]:
    """The atomic sites detrec patches in a program with this answer: none
    in a det-cc build (its atomics are det's calls already). xchg: its xchg
    sites too (detrec --patch-atomics). Without it they stay the CPU's:
    gcc makes every seq_cst store an xchg whose old value the program never
    reads, and a replay that checks it fails on any value the program
    overwrote unread that differs (a pointer, CPython's signal handlers at
    exit, once in a CI run), while most of a program's exchanges are such
    stores; its lock-prefixed read-modify-writes (compare-exchange,
    fetch_add...) read what they change."""
    if not found or found.get("unreadable") or found.get("static") or found.get("det_cc"):
        return []
    sites = [(int(a), bytes.fromhex(code)) for a, code in found.get("sites") or []]
    return sites if xchg else [(a, code) for a, code in sites if not is_xchg(code)]


def atomics_unseen(path: str, env: dict[str, str]) -> int:
    """How many atomic instructions outside det-cc the program at path has
    that a recording in env did not patch (detrec puts them in env unless
    told --no-patch-atomics): 0 when it patched them, or when that is not
    known (never an error: detreplay says it after a divergence)."""
    from .patch import SITES_ENV

    if SITES_ENV in env:
        return 0
    found = known(path)
    if not isinstance(found, dict) or found.get("unreadable") or found.get("det_cc"):
        return 0
    return int(found.get("atomics") or 0)


def random_unrecorded(path: str) -> int:
    """How many rdrand/rdseed instructions the program at path has in its
    own code: the CPU's random numbers, which no recording holds (0 when
    that is not known)."""
    found = known(path)
    return int(found.get("random") or 0) if isinstance(found, dict) and not found.get("unreadable") else 0


def random_line(name: str, n: int) -> str:
    return (f"{name}: its code has {n} rdrand/rdseed instruction{'s' if n != 1 else ''}: the CPU's random numbers "
            "are not in the trace, so a replay draws others; `detcheck " + name + "` says where")


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


def unseen_line(found: dict | None, name: str, mode: str, left: int, opt_out: bool) -> str | None:
    """The one line to say when recording name in mode ("default", "strict",
    "logical") and its own code has what that mode does not see (left: its
    atomic instructions not patched; opt_out: told --no-patch-atomics)."""
    if not found or found.get("unreadable") or found.get("static"):
        return None  # (a static program goes to detrec --ptrace, with its own line)
    parts = []
    if n := int(found.get("random") or 0):
        parts.append(f"{n} rdrand/rdseed instruction{'s' if n > 1 else ''} (the CPU's random numbers: not in the "
                     "trace, a replay draws others)")
    calls = found["syscalls"]
    if calls:
        names = sorted(set(calls))
        parts.append(f"{len(calls)} raw syscall instruction{'s' if len(calls) > 1 else ''} ({', '.join(names[:4])}"
                     + (", ..." if len(names) > 4 else "") + ")")
    atomics = left and not found["det_cc"] and mode != "strict"
    if atomics:
        parts.append(f"{left} atomic instruction{'s' if left > 1 else ''} outside det-cc (their order is not "
                     "recorded)")
    if not parts:
        return None
    line = f"{name}: its code has {' and '.join(parts)} that {mode} mode does not see; `detcheck {name}` says where"
    if calls:
        line += "; `detrec --ptrace` sees system calls at the kernel boundary"
    if atomics:
        line += ("; without --no-patch-atomics detrec records the lock-prefixed ones, with --patch-atomics all"
                 if opt_out else "; `detrec --patch-atomics` records them (xchg, which detrec leaves by default)")
    return line
