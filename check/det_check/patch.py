"""The instructions detrec has libdet.so patch or trap: unless told
--no-patch-atomics (preload/trapped_atomics.c) the lock-prefixed instructions and xchg with
memory that det.check.scan finds in the executable's own code, each as its
link-time address and its bytes; where one thread runs at a time
(preload/trapped_syscalls.c) the raw `syscall` instructions of the
executable and its libraries (libgomp's futex calls), each as its
link-time address in its module. Both go into the program's environment.

Rules of this file:
  - SITES_ENV's value is "VADDR:BYTES,..." in hex, the format
    preload/trapped_atomics.c parses; it goes into the recorded environment,
    so every replay traps the same instructions.
  - capstone is imported when sites are computed (as det.check.scan does).
"""

from __future__ import annotations

import functools
import os
import re
import subprocess

from det.errors import DetError

from .elf import read_elf
from .scan import MAX_INSN, scan

SITES_ENV = "_DET_ATOMIC_SITES"


def site_bytes(elf, addresses: list[int]) -> list[tuple[int, bytes]]:
    """(address, the instruction's bytes) of each instruction at addresses in elf's code."""
    import capstone

    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    out = []
    for address in addresses:
        sec = next(s for s in elf.code() if s.addr <= address < s.addr + s.size)
        off = address - sec.addr + sec.offset
        insn = next(md.disasm_lite(elf.data[off:off + MAX_INSN], address, 1), None)
        if insn is not None:
            out.append((address, elf.data[off:off + insn[1]]))
    return out


def sites_value(sites: list[tuple[int, bytes]]) -> str:
    return ",".join(f"{addr:x}:{code.hex()}" for addr, code in sites)


# Code whose raw system calls are libc's own business (det interposes libc's
# functions), or det's.
_NOT_TRAPPED = ("libc.so", "ld-linux", "libdet", "linux-vdso")
_LOADER_WAIT_S = 10.0


def loaded_libraries(exe: str, interp: str | None) -> list[str]:
    """The libraries the loader maps for exe, as `ld.so --list` resolves them
    (the program does not run); [] when it cannot say."""
    if not interp:
        return []
    try:
        r = subprocess.run([interp, "--list", exe], capture_output=True, timeout=_LOADER_WAIT_S, text=True,
                           errors="replace")
    except (OSError, subprocess.TimeoutExpired):
        return []
    if r.returncode != 0:
        return []
    return [m.group(1) for m in re.finditer(r"=> (/\S+) \(0x", r.stdout)]


@functools.lru_cache(maxsize=8)
def _syscall_sites(path: str, size: int, mtime_ns: int) -> tuple[int, ...]:
    """The raw `syscall` instructions in path's code (its size and mtime: the cache's key)."""
    return tuple(s.address for s in scan(read_elf(path), quick=True).sites
                 if s.kind == "syscall" and s.text == "syscall")


def syscall_sites_value(exe: str) -> str:
    """DET_SYSCALL_SITES_ENV's value for exe (preload/trapped_syscalls.c):
    the raw system call instructions libdet.so traps where one thread runs
    at a time, "NAME@VADDR,...;..." in hex, NAME a library's file name or
    "-" for the executable; "" if none. Needs capstone (ImportError
    otherwise)."""
    import capstone  # noqa: F401  (scan's; fail here, before any scan)

    elf = read_elf(exe)
    parts = []
    for name, path in [("-", exe)] + [(os.path.basename(p), p) for p in loaded_libraries(exe, elf.interp)]:
        if name != "-" and name.startswith(_NOT_TRAPPED):
            continue
        try:
            st = os.stat(path)
            found = _syscall_sites(path, st.st_size, st.st_mtime_ns)
        except (OSError, DetError):
            continue  # unreadable, or not ELF: its calls stay the kernel's
        if found:
            parts.append(f"{name}@" + ",".join(f"{a:x}" for a in found))
    return ";".join(parts)
