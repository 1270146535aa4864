"""The parts of an x86-64 ELF file detcheck needs, read with struct: its
program headers, executable sections, needed libraries, function symbols,
imports and PLT entries.

Rules of this file:
  - Standard library only (detrec's start-up reads it); the whole file is
    read once into memory and sliced.
  - Anything that is not a 64-bit little-endian x86-64 executable or shared
    object is a BadInput, said in one line.
"""

from __future__ import annotations

import bisect
import re
import struct
from dataclasses import dataclass, field

from det.errors import DetError

PT_LOAD, PT_DYNAMIC, PT_INTERP = 1, 2, 3
SHT_SYMTAB, SHT_RELA, SHT_DYNSYM = 2, 4, 11
SHF_EXECINSTR = 0x4
STT_FUNC, STT_GNU_IFUNC = 2, 10
EM_X86_64 = 62
ET_EXEC, ET_DYN = 2, 3
DT_NEEDED, DT_STRTAB = 1, 5
# The markers det-cc leaves in what it builds (include/det/cc.h: DET_CC_BUILT,
# DET_CC_BUILT_MEMORY; det_cc_atomic_begin is imported weak, so it survives strip).
DET_CC_MARKS = ("det_cc_built", "det_cc_built_memory")
DET_CC_IMPORT = "det_cc_atomic_begin"
_PLT_JMP = re.compile(rb"\xff\x25", re.S)  # jmp *disp32(%rip): a PLT entry's jump through its GOT slot


class BadInput(DetError):
    """A file detcheck cannot read as an x86-64 program (exit status 2)."""


@dataclass
class Section:
    name: str
    addr: int
    offset: int
    size: int
    executable: bool


@dataclass
class Elf:
    path: str
    data: bytes
    etype: int
    interp: str | None
    needed: list[str]
    sections: list[Section]
    funcs: list[tuple[int, int, str]]  # (start, size, name), sorted by start
    imports: set[str]  # undefined dynamic symbols
    defined: set[str]  # names of every defined symbol (det-cc's marks are objects)
    got_names: dict[int, str] = field(default_factory=dict)  # GOT slot -> symbol
    plt_names: dict[int, str] = field(default_factory=dict)  # PLT entry -> symbol
    _starts: list[int] = field(default_factory=list)

    @property
    def static(self) -> bool:
        """Statically linked: no loader, no libraries (a static PIE is ET_DYN without either)."""
        return self.interp is None and not self.needed

    @property
    def library(self) -> bool:
        """A shared library (ET_DYN with libraries and no loader of its own)."""
        return self.interp is None and bool(self.needed)

    def code(self) -> list[Section]:
        """The executable sections that hold the program's code (not its PLT stubs)."""
        return [s for s in self.sections if s.executable and s.size and not s.name.startswith(".plt")]

    def bytes_of(self, sec: Section) -> bytes:
        return self.data[sec.offset:sec.offset + sec.size]

    @property
    def det_cc(self) -> str | None:
        """"memory" or "" (built with det-cc, with memory points or not), None without det-cc."""
        if "det_cc_built_memory" in self.defined:
            return "memory"
        if "det_cc_built" in self.defined or DET_CC_IMPORT in self.imports:
            return ""
        return None

    def function_at(self, addr: int) -> tuple[str, int] | None:
        """(name, offset) of the function symbol holding addr."""
        if not self._starts:
            self._starts = [f[0] for f in self.funcs]
        i = bisect.bisect_right(self._starts, addr) - 1
        if i < 0:
            return None
        start, size, name = self.funcs[i]
        if size and addr >= start + size:
            return None
        return name, addr - start


def _cstr(data: bytes, off: int) -> str:
    end = data.find(b"\0", off)
    return data[off:end if end >= 0 else len(data)].decode(errors="replace")


def read_elf(path: str, name: str | None = None) -> Elf:
    """The file at path, parsed; name is how errors call it."""
    name = name or path
    try:
        with open(path, "rb") as f:
            data = f.read()
    except IsADirectoryError:
        raise BadInput(f"{name}: is a directory") from None
    except OSError as e:
        raise BadInput(f"{name}: cannot read ({e.strerror})") from None
    if data[:4] != b"\x7fELF":
        raise BadInput(f"{name}: not an ELF file")
    if len(data) < 64:
        raise BadInput(f"{name}: damaged ELF file (its header is cut short)")
    if data[4] != 2 or data[5] != 1 or struct.unpack_from("<H", data, 18)[0] != EM_X86_64:
        raise BadInput(f"{name}: not an x86-64 program; det records x86-64 programs only")
    try:
        return _parse(path, data, name)
    except (struct.error, IndexError, ValueError, OverflowError) as e:
        raise BadInput(f"{name}: damaged ELF file ({e})") from None


def _parse(path: str, data: bytes, name: str) -> Elf:
    etype, = struct.unpack_from("<H", data, 16)
    if etype not in (ET_EXEC, ET_DYN):
        raise BadInput(f"{name}: not a program or shared library (ELF type {etype})")
    phoff, shoff = struct.unpack_from("<QQ", data, 32)
    phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", data, 54)
    interp = None
    segments = []  # executable PT_LOADs: the code of a file without section headers
    loads = []  # (vaddr, offset, size) of every PT_LOAD: where the dynamic section's addresses are in the file
    dynamic = None
    for i in range(phnum):
        p_type, p_flags, p_off, p_va, _pa, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == PT_INTERP:
            interp = _cstr(data, p_off)
        elif p_type == PT_DYNAMIC:
            dynamic = (p_off, p_filesz)
        elif p_type == PT_LOAD:
            loads.append((p_va, p_off, p_filesz))
            if p_flags & 1 and p_off + p_filesz <= len(data):  # PF_X
                segments.append(Section(f"PT_LOAD@{p_va:#x}", p_va, p_off, p_filesz, True))
    raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)] if shoff else []
    names_off = raw[shstrndx][4] if raw and shstrndx < len(raw) else 0
    sections = [Section(_cstr(data, names_off + s[0]), s[3], s[4], s[5] if s[1] != 8 else 0, bool(s[2] & SHF_EXECINSTR))
                for s in raw]  # (SHT_NOBITS: no bytes in the file)
    if not any(sec.executable for sec in sections):
        sections += segments
    funcs: dict[int, tuple[int, str]] = {}
    imports: set[str] = set()
    defined: set[str] = set()
    dynsym: list[str] = []
    for _sh_name, sh_type, _f, _a, off, size, link, _info, _al, _entsize in raw:
        if sh_type not in (SHT_SYMTAB, SHT_DYNSYM):
            continue
        str_off = raw[link][4]
        names = []
        for st_name, st_info, _other, st_shndx, value, sz in struct.iter_unpack("<IBBHQQ", data[off:off + size]):
            sym = _cstr(data, str_off + st_name).split("@", 1)[0] if st_name else ""
            names.append(sym)
            if not sym:
                continue
            if st_shndx == 0:
                if sh_type == SHT_DYNSYM:
                    imports.add(sym)
                continue
            defined.add(sym)
            if st_info & 0xF in (STT_FUNC, STT_GNU_IFUNC) and value:
                old = funcs.get(value)
                if old is None or (not old[0] and sz):
                    funcs[value] = (sz, sym)
        if sh_type == SHT_DYNSYM:
            dynsym = names
    needed = []
    if dynamic is not None:  # (PT_DYNAMIC, as the loader reads it: section headers may be gone)
        entries = list(struct.iter_unpack("<qQ", data[dynamic[0]:dynamic[0] + dynamic[1] // 16 * 16]))
        strtab = next((val for tag, val in entries if tag == DT_STRTAB), None)
        str_off = next((off + strtab - va for va, off, size in loads
                        if strtab is not None and va <= strtab < va + size), None)
        for tag, val in entries:
            if tag == 0:
                break
            if tag == DT_NEEDED and str_off is not None:
                needed.append(_cstr(data, str_off + val))
    got_names: dict[int, str] = {}
    for _n, sh_type, _f, _a, off, size, link, _info, _al, _es in raw:
        if sh_type == SHT_RELA and link and raw[link][1] == SHT_DYNSYM:
            for r_offset, r_info, _addend in struct.iter_unpack("<QQq", data[off:off + size]):
                sym = r_info >> 32
                if 0 < sym < len(dynsym) and dynsym[sym]:
                    got_names[r_offset] = dynsym[sym]
    elf = Elf(path, data, etype, interp, needed, sections,
              sorted((a, sz, n) for a, (sz, n) in funcs.items()), imports, defined, got_names)
    for sec in sections:
        if sec.name in (".plt", ".plt.sec", ".plt.got") and sec.size:
            code = elf.bytes_of(sec)
            for m in _PLT_JMP.finditer(code):
                if m.start() + 6 > len(code):
                    break
                disp, = struct.unpack_from("<i", code, m.start() + 2)
                slot = sec.addr + m.start() + 6 + disp
                if slot in got_names:
                    elf.plt_names[(sec.addr + m.start()) & ~15] = got_names[slot]
    return elf


def eh_frame_starts(elf: Elf) -> list[int]:
    """Function starts from .eh_frame_hdr's sorted search table (a stripped
    program keeps it): initial locations, encoded datarel sdata4."""
    sec = next((s for s in elf.sections if s.name == ".eh_frame_hdr"), None)
    if sec is None or sec.size < 12:
        return []
    hdr = elf.bytes_of(sec)
    if len(hdr) < 12:
        return []  # (cut short)
    version, _ptr_enc, count_enc, table_enc = hdr[:4]
    if version != 1 or _ptr_enc != 0x1B or count_enc != 0x03 or table_enc != 0x3B:  # udata4 count, datarel|sdata4 table
        return []
    count, = struct.unpack_from("<I", hdr, 8)
    table = hdr[12:12 + 8 * count]
    table = table[:len(table) // 8 * 8]
    return [sec.addr + loc for loc, _fde in struct.iter_unpack("<ii", table)]
