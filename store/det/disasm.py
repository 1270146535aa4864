"""Disassembly for gdb's `det disas` and dettui: capstone's lines around a
thread's place in the code, with symbols from the ELF files (pyelftools).

Rules of this file:
  - Standard library only at import (gdb's Python loads it); capstone and
    pyelftools are optional: `missing()` says in one line what to install,
    and nothing else in det or its gdb extension imports them.
  - Code bytes come from the program's memory (gdb's read_memory, no
    inferior calls); symbols from the files of the recording's modules
    (det.trace modules: path and load bias; ASLR is off in every det run).
  - Pure functions of their arguments, no gdb import: the gdb side passes
    the pc, the modules and a memory reader in (dettui a reader of the ELF
    files).
"""

from __future__ import annotations

import bisect
import os
import sys
from collections.abc import Callable
from functools import lru_cache

WINDOW_BEFORE = 12
WINDOW_AFTER = 8
MAX_FUNCTION = 1 << 16


def missing(site_packages: list[str]) -> str | None:
    """None when capstone and pyelftools import; else what to do, in one line."""
    try:
        import capstone  # noqa: F401
        import elftools  # noqa: F401
        return None
    except ImportError:
        pass
    # det's virtualenv is built on the same system python3 as gdb's Python.
    for p in site_packages:
        if p not in sys.path and os.path.isdir(p):
            sys.path.append(p)
    try:
        import capstone  # noqa: F401, F811
        import elftools  # noqa: F401, F811
        return None
    except ImportError as e:
        ver = ".".join(map(str, sys.version_info[:3]))
        return (f"needs the Python packages capstone and pyelftools in gdb's Python {ver} ({e}): "
                f"`pip install capstone pyelftools` (det's `make` installs them into .venv); "
                f"gdb's own `x/20i $pc` works without them")


class Symbols:
    """Function symbols and PLT entries of one ELF file, by file offset address."""

    def __init__(self, path: str) -> None:
        from elftools.elf.elffile import ELFFile
        from elftools.elf.relocation import RelocationSection
        from elftools.elf.sections import SymbolTableSection

        self.addrs: list[int] = []
        self.items: list[tuple[int, int, str]] = []  # (start, size, name)
        syms: dict[int, tuple[int, str]] = {}
        with open(path, "rb") as f:
            elf = ELFFile(f)
            for sec in elf.iter_sections():
                if isinstance(sec, SymbolTableSection):
                    for s in sec.iter_symbols():
                        if s["st_info"]["type"] in ("STT_FUNC", "STT_GNU_IFUNC") and s["st_value"] and s.name:
                            old = syms.get(s["st_value"])
                            if old is None or (not old[0] and s["st_size"]):
                                syms[s["st_value"]] = (s["st_size"], s.name)
            got_names: dict[int, str] = {}
            for sec in elf.iter_sections():
                if isinstance(sec, RelocationSection) and sec["sh_link"]:
                    symtab = elf.get_section(sec["sh_link"])
                    for r in sec.iter_relocations():
                        if r["r_info_sym"]:
                            got_names[r["r_offset"]] = symtab.get_symbol(r["r_info_sym"]).name
            for name in (".plt", ".plt.sec", ".plt.got"):
                sec = elf.get_section_by_name(name)
                if sec is not None and got_names:
                    for entry, got in _plt_slots(sec.data(), sec["sh_addr"]):
                        if got in got_names:
                            syms.setdefault(entry, (16, got_names[got] + "@plt"))
        for start in sorted(syms):
            size, name = syms[start]
            self.addrs.append(start)
            self.items.append((start, size, name))

    def find(self, off: int) -> tuple[int, int, str] | None:
        i = bisect.bisect_right(self.addrs, off) - 1
        if i < 0:
            return None
        start, size, name = self.items[i]
        if off < start + max(size, 1) or (not size and off - start < 4096):
            return self.items[i]
        return None


def _plt_slots(data: bytes, addr: int) -> list[tuple[int, int]]:
    """(entry address, GOT slot) of each `jmp [rip+disp]` in a PLT section."""
    import capstone

    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    md.detail = True
    out = []
    for insn in md.disasm(data, addr):
        if insn.mnemonic in ("jmp", "bnd jmp") and insn.operands:
            op = insn.operands[0]
            if op.type == capstone.x86.X86_OP_MEM and op.mem.base == capstone.x86.X86_REG_RIP:
                entry = addr + ((insn.address - addr) // 16) * 16
                out.append((entry, insn.address + insn.size + op.mem.disp))
    return out


@lru_cache(maxsize=16)
def symbols(path: str) -> Symbols | None:
    try:
        return Symbols(path)
    except (OSError, ValueError, ImportError, Exception):  # noqa: BLE001 - pyelftools raises its own errors
        return None


class Resolver:
    """Run-time address -> `name+off`, over all modules of the recording."""

    def __init__(self, modules: list[tuple[str, int]]) -> None:
        mods = sorted((base, path) for path, base in modules if path and os.path.exists(path))
        self.bases = [b for b, _ in mods]
        self.paths = [p for _, p in mods]

    def module(self, addr: int) -> tuple[str, int] | None:
        i = bisect.bisect_right(self.bases, addr) - 1
        return (self.paths[i], self.bases[i]) if i >= 0 else None

    def name(self, addr: int) -> tuple[str, int, int] | None:
        """(symbol, its run-time start, its size) containing addr."""
        m = self.module(addr)
        if m is None:
            return None
        syms = symbols(m[0])
        hit = syms.find(addr - m[1]) if syms is not None else None
        if hit is None:
            return None
        return hit[2], hit[0] + m[1], hit[1]

    def label(self, addr: int) -> str:
        n = self.name(addr)
        if n is None:
            return ""
        off = addr - n[1]
        return f"<{n[0]}+{off}>" if off else f"<{n[0]}>"


def disassemble(pc: int, modules: list[tuple[str, int]], read_memory: Callable[[int, int], object],
                call_site: bool, who: str) -> list[str]:
    """Lines around pc; with call_site, pc is a return address and the call before it is marked."""
    import capstone

    res = Resolver(modules)
    fn = res.name(pc - 1 if call_site else pc)
    if fn is not None and 0 < fn[2] <= MAX_FUNCTION:
        start, length = fn[1], fn[2]
    else:
        start, length = (pc - 64 if call_site else pc), 160
    try:
        code = bytes(read_memory(start, length))
    except Exception as e:  # noqa: BLE001 - gdb.MemoryError, without importing gdb here
        return [f"det: cannot read the code at {start:#x}: {e}"]
    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    md.detail = True
    insns = list(md.disasm(code, start))
    at = next((i for i, x in enumerate(insns) if (x.address + x.size == pc if call_site else x.address == pc)), None)
    if at is None:
        # Without a symbol the bytes before pc may decode out of step: start at pc.
        insns = list(md.disasm(bytes(read_memory(pc, 96)), pc))
        at = 0
    lo, hi = max(0, at - WINDOW_BEFORE), min(len(insns), at + WINDOW_AFTER + 1)
    m = res.module(pc)
    where = f"{fn[0]} in {os.path.basename(m[0])}" if fn is not None and m is not None else f"{pc:#x}"
    how = "the call it is in" if call_site else "its next instruction"
    out = [f"det: {who} at {where}; => marks {how} (capstone {capstone.__version__})"]
    for x in insns[lo:hi]:
        ops = x.op_str
        if x.group(capstone.CS_GRP_CALL) or x.group(capstone.CS_GRP_JUMP):
            op = x.operands[0] if x.operands else None
            if op is not None and op.type == capstone.x86.X86_OP_IMM:
                ops += " " + res.label(op.imm)
            elif op is not None and op.type == capstone.x86.X86_OP_MEM and op.mem.base == capstone.x86.X86_REG_RIP:
                ops += f" ; [{x.address + x.size + op.mem.disp:#x}]"
        mark = "=>" if x is insns[at] else "  "
        out.append(f"{mark} {x.address:#x} {res.label(x.address):<28} {x.mnemonic} {ops}".rstrip())
    return out
