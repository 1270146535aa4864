"""The atomic instructions detrec --patch-atomics has libdet.so trap
(preload/trapped_atomics.c): the lock-prefixed instructions and xchg with
memory that det.check.scan finds in the executable's own code, each as its
link-time address and its bytes, for the program's environment.

Rules of this file:
  - SITES_ENV's value is "VADDR:BYTES,..." in hex, the format
    preload/trapped_atomics.c parses; it goes into the recorded environment,
    so every replay traps the same instructions.
  - capstone is imported when sites are computed (as det.check.scan does).
"""

from __future__ import annotations

from .elf import read_elf
from .scan import MAX_INSN, scan

SITES_ENV = "_DET_ATOMIC_SITES"


def atomic_sites(path: str) -> list[tuple[int, bytes]]:
    """(address, bytes) of each atomic instruction in path's own code."""
    import capstone

    elf = read_elf(path)
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    out = []
    for site in scan(elf, quick=True).sites:
        if site.kind != "atomic":
            continue
        sec = next(s for s in elf.code() if s.addr <= site.address < s.addr + s.size)
        off = site.address - sec.addr + sec.offset
        insn = next(md.disasm_lite(elf.data[off:off + MAX_INSN], site.address, 1), None)
        if insn is not None:
            out.append((site.address, elf.data[off:off + insn[1]]))
    return out


def sites_value(sites: list[tuple[int, bytes]]) -> str:
    return ",".join(f"{addr:x}:{code.hex()}" for addr, code in sites)
