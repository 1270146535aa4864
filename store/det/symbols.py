"""Source locations for recorded addresses, through addr2line: LLVM's
where it is installed, else binutils'.

A site inside a one-line wrapper that the compiler inlined into its caller
(`static void lock(pthread_mutex_t *m) { pthread_mutex_lock(m); }`) is the
caller's line, the wrapper named as `via` (det.callsite decides what is a
wrapper, from the source).

Rules: standard library only (gdb's Python imports this module). A missing
addr2line or debug info degrades to "module+offset", never to an error; an
ELF file that cannot be read to objects without names.
"""

from __future__ import annotations

import bisect
import glob
import os
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass

from .callsite import INTERPOSED, forwarded

# One frame of an address's inline chain: (function, file, line).
Frame = tuple[str | None, str | None, int | None]


@dataclass(frozen=True)
class Location:
    """Where an address is: its module and, where known, function and line."""

    address: int
    module: str
    offset: int
    function: str | None
    file: str | None
    line: int | None
    via: str | None = None  # the inlined wrapper this site passed through (function, file and line are its caller's)
    frames: tuple[Frame, ...] = ()  # the inline chain, innermost first

    def short(self) -> str:
        """`file.c:44`, else `function`, else `module+0x1a2b`."""
        if self.file and self.line:
            return f"{os.path.basename(self.file)}:{self.line}"
        if self.function:
            return self.function
        if self.module:
            return f"{os.path.basename(self.module)}+{self.offset:#x}"
        return f"{self.address:#x}"

    def long(self) -> str:
        where = self.short()
        if self.function and self.file and self.line:
            where = f"{self.function} at {where}"
        return f"{where} (through {self.via})" if self.via else where


def addr2line_tool() -> str | None:
    """LLVM's addr2line (same command line and output) where it is
    installed, the newest one: binutils' 2.40 names the including .c file
    for a function defined in a header (its line, the wrong file) in gcc
    12's DWARF 5, which gdb and LLVM's read right. Else binutils'."""
    llvm = shutil.which("llvm-addr2line")
    if llvm:
        return llvm

    def version(path: str) -> int:
        v = path.split("/llvm-")[1].split("/")[0]
        return int(v) if v.isdigit() else 0

    found = sorted(glob.glob("/usr/lib/llvm-*/bin/llvm-addr2line"), key=version)
    return found[-1] if found else shutil.which("addr2line")


class Symbolizer:
    """Maps run-time addresses to source lines, given the run's modules."""

    def __init__(self, modules: list[tuple[str, int]]) -> None:
        mods = sorted((base, path) for path, base in modules if path)
        self.bases = [b for b, _ in mods]
        self.paths = [p for _, p in mods]
        self.cache: dict[tuple[int, bool], Location] = {}
        self.addr2line = addr2line_tool()

    def module_of(self, addr: int) -> tuple[str, int]:
        i = bisect.bisect_right(self.bases, addr) - 1
        if i < 0:
            return "", addr
        return self.paths[i], addr - self.bases[i]

    def lookup(self, addrs: list[int], return_addresses: bool = True) -> dict[int, Location]:
        """Locations of addrs; a return address is looked up one byte back,
        inside the call instruction, as debuggers do."""
        todo: dict[str, list[tuple[int, int]]] = {}
        out: dict[int, Location] = {}
        for a in set(addrs):
            key = (a, return_addresses)
            if key in self.cache:
                out[a] = self.cache[key]
                continue
            module, off = self.module_of(a)
            look = off - 1 if return_addresses and off > 0 else off
            todo.setdefault(module, []).append((a, look))
        for module, items in todo.items():
            results = self._addr2line(module, [look for _, look in items])
            for (a, _), frames in zip(items, results, strict=True):
                outer = outside_wrappers(frames) if return_addresses else 0
                func, file, line = frames[outer]
                loc = Location(a, module, self.module_of(a)[1], func, file, line,
                               frames[outer - 1][0] if outer else None, tuple(frames))
                self.cache[(a, return_addresses)] = loc
                out[a] = loc
        return out

    def one(self, addr: int, return_address: bool = True) -> Location:
        return self.lookup([addr], return_address)[addr]

    def _addr2line(self, module: str, offsets: list[int]) -> list[list[Frame]]:
        """Each offset's inline chain, innermost frame first (one frame of
        Nones when nothing is known)."""
        blank: list[list[Frame]] = [[(None, None, None)] for _ in offsets]
        if not module or not self.addr2line or not os.path.exists(module):
            return blank
        try:
            proc = subprocess.run(
                [self.addr2line, "-a", "-i", "-f", "-C", "-e", module] + [f"{o:#x}" for o in offsets],
                capture_output=True, text=True, timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired):
            return blank
        if proc.returncode != 0:
            return blank
        # -a heads each address's frames with the address itself: (function, file:line) pairs follow
        chains: list[list[str]] = []
        for text in proc.stdout.splitlines():
            if text.startswith("0x"):
                chains.append([])
            elif chains and text.strip():
                chains[-1].append(text.strip())
        if len(chains) != len(offsets) or any(not c or len(c) % 2 for c in chains):
            return blank
        res = []
        for chain in chains:
            frames: list[Frame] = []
            for func, fileline in zip(chain[::2], chain[1::2], strict=True):
                file, _, line = fileline.split(" (discriminator")[0].rpartition(":")
                frames.append((
                    None if func == "??" else func,
                    None if file in ("??", "") else file,
                    int(line) if line.isdigit() and line != "0" else None,
                ))
            res.append(frames)
        return res


def outside_wrappers(frames: list[Frame]) -> int:
    """The first frame of an inline chain outside the one-line wrappers
    that only forward their parameter to the call below them (innermost:
    the interposed call)."""
    callee = INTERPOSED
    for i, (func, file, line) in enumerate(frames[:-1]):
        if forwarded(file, line, func, callee) is None:
            return i
        callee = re.escape((func or "").split("(")[0].split("::")[-1])
    return len(frames) - 1


# A place in the program's code in a message of det's runtime (a return
# address, preload/runtime.h DET_CODE_AT).
CODE_SITE = re.compile(r"\{code:(0x[0-9a-f]+)\}")


def name_code_sites(text: str, modules: list[tuple[str, int]]) -> str:
    """The message with each place in the program's code named by its
    function and source line (else module+offset)."""
    if not CODE_SITE.search(text):
        return text
    sym = Symbolizer(modules)
    return CODE_SITE.sub(lambda m: sym.one(int(m.group(1), 16)).long(), text)


# sizeof each object kind on x86-64 glibc: names elements of arrays.
OBJ_SIZES = {"MUTEX": 40, "COND": 48, "RWLOCK": 56, "BARRIER": 32, "SEM": 32, "SPIN": 4, "ONCE": 4}

# glibc's FILE objects behind stdin, stdout and stderr.
STDIO_NAMES = {"_IO_2_1_stdin_": "stdin", "_IO_2_1_stdout_": "stdout", "_IO_2_1_stderr_": "stderr"}


class DataSymbols:
    """Names of variables in one ELF file, read from its symbol table
    (.symtab, else .dynsym) with the standard library: a replay that
    diverges names its objects without running nm over libc. C++ names are
    demangled by binutils' c++filt when it is there."""

    def __init__(self, module: str) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.names: list[str] = []
        try:
            rows = _elf_objects(module)
        except (OSError, ValueError, struct.error):
            return
        mangled = sorted({n for _, _, n in rows if n.startswith("_Z")})
        plain = demangle(mangled) if mangled else {}
        rows = sorted((a, size, STDIO_NAMES.get(n, plain.get(n, n))) for a, size, n in rows)
        self.starts = [r[0] for r in rows]
        self.ends = [r[0] + r[1] for r in rows]
        self.names = [r[2] for r in rows]

    def lookup(self, off: int, elem: int = 0) -> str | None:
        """The variable at offset off: `name`, `name[3]` (elem: the size of
        the object, when the variable is an array of them), `name+16`."""
        i = bisect.bisect_right(self.starts, off) - 1
        if i < 0 or off >= self.ends[i]:
            return None
        start, size = self.starts[i], self.ends[i] - self.starts[i]
        if elem and size > elem and size % elem == 0 and (off - start) % elem == 0:
            return f"{self.names[i]}[{(off - start) // elem}]"
        return self.names[i] if off == start else f"{self.names[i]}+{off - start}"


SHT_SYMTAB, SHT_DYNSYM, STT_OBJECT, STT_FUNC = 2, 11, 1, 2


def _elf_objects(path: str, sym_type: int = STT_OBJECT) -> list[tuple[int, int, str]]:
    """(value, size, name) of the data objects (STT_OBJECT, defined, sized),
    or of another symbol type, in a 64-bit little-endian ELF file's .symtab,
    or its .dynsym if it has none."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    for want in (SHT_SYMTAB, SHT_DYNSYM):
        tables = [s for s in sections if s[1] == want]
        if not tables:
            continue
        rows = []
        for _name, _type, _flags, _addr, off, size, link, _info, _align, entsize in tables:
            strtab = sections[link]
            str_off = strtab[4]
            for i in range(0, size, entsize or 24):
                st_name, st_info, _other, st_shndx, value, sz = struct.unpack_from("<IBBHQQ", data, off + i)
                if st_info & 0xF != sym_type or st_shndx == 0 or not sz:
                    continue
                end = data.index(b"\0", str_off + st_name)
                # a copy-relocated variable carries its version (stdout@GLIBC_2.2.5)
                name = data[str_off + st_name:end].decode(errors="replace").split("@", 1)[0]
                rows.append((value, sz, name))
        if rows:
            return rows
    return []


def main_source(path: str) -> str | None:
    """The source file that defines a program's main(), from its debug
    information, if it has some and the file is there."""
    try:
        main = [value for value, _size, name in _elf_objects(path, STT_FUNC) if name == "main"]
    except (OSError, ValueError, struct.error):
        return None
    tool = addr2line_tool()
    if not main or not tool:
        return None
    try:
        out = subprocess.run([tool, "-e", path, f"{main[0]:#x}"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    file = out.strip().rsplit(":", 1)[0]
    return file if file and file != "??" and os.path.isfile(file) else None


def demangle(names: list[str]) -> dict[str, str]:
    """C++ names as written (c++filt), for those it knows; {} without c++filt."""
    tool = shutil.which("c++filt")
    if not tool:
        return {}
    try:
        p = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    out = p.stdout.splitlines()
    return dict(zip(names, out, strict=True)) if len(out) == len(names) else {}


def variable_name(sym: Symbolizer, cache: dict[str, DataSymbols], objkind: str, addr: int) -> str | None:
    """The variable at a run-time address (static objects only), e.g.
    `account`, `token[1]`; objkind (e.g. "mutex") names array elements.
    cache: one DataSymbols per module, kept by the caller."""
    if not addr:
        return None
    module, off = sym.module_of(addr)
    if not module:
        return None
    if module not in cache:
        cache[module] = DataSymbols(module)
    return cache[module].lookup(off, OBJ_SIZES.get(objkind.upper(), 0))
