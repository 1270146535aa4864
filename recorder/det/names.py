"""How every det tool names a recorded object: `mutex 4 (account)`.

One scheme in detrec's deadlock report, `detrec info`, detreplay's
divergence and deadlock lines, det's gdb commands and detdiff:
  - the kind and the trace's object number: objects are numbered by the
    recording, so every tool that reads one trace shows the same number
    (detdiff, reading two, numbers by A and shows B's number where it
    differs);
  - a thread object is its thread's T-name (`T2`);
  - the program's name for it when it has one: the variable, from the ELF
    symbol tables, `name[3]` for an element of an array of
    such objects, `name+16` inside a larger variable; glibc's FILE objects
    behind the standard streams are `stdin`, `stdout`, `stderr`;
  - otherwise (the heap, a stack): where the program first used it
    (`first used at x.c:31`); det's gdb commands add the pointer expression
    that reaches it from the program's static data (`pool->lock`), which
    only a live program can tell.

Rules: standard library only (gdb's Python imports this module). An
unreadable ELF file, or no addr2line, degrades names to numbers, never to
errors.
"""

from __future__ import annotations

import bisect
import shutil
import struct
import subprocess
from collections.abc import Callable

from . import events as ev
from .symbols import Symbolizer
from .trace import Trace, objkind_name

# glibc's FILE objects behind stdin, stdout and stderr.
STDIO_NAMES = {"_IO_2_1_stdin_": "stdin", "_IO_2_1_stdout_": "stdout", "_IO_2_1_stderr_": "stderr"}
# Sizes of the pthread objects on x86-64 glibc: an array of them names its elements.
OBJ_SIZES = {"MUTEX": 40, "COND": 48, "RWLOCK": 56, "BARRIER": 32, "SEM": 32, "SPIN": 4, "ONCE": 4}
THREAD_KIND = next(o.number for o in ev.OBJKINDS if o.name == "THREAD")


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
        plain = _demangle(mangled) if mangled else {}
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


SHT_SYMTAB, SHT_DYNSYM, STT_OBJECT = 2, 11, 1


def _elf_objects(path: str) -> list[tuple[int, int, str]]:
    """(value, size, name) of the data objects (STT_OBJECT, defined, sized) in
    a 64-bit little-endian ELF file's .symtab, or its .dynsym if it has none."""
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
                if st_info & 0xF != STT_OBJECT or st_shndx == 0 or not sz:
                    continue
                end = data.index(b"\0", str_off + st_name)
                # a copy-relocated variable carries its version (stdout@GLIBC_2.2.5)
                name = data[str_off + st_name:end].decode(errors="replace").split("@", 1)[0]
                rows.append((value, sz, name))
        if rows:
            return rows
    return []


def _demangle(names: list[str]) -> dict[str, str]:
    tool = shutil.which("c++filt")
    if not tool:
        return {}
    try:
        p = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    out = p.stdout.splitlines()
    return dict(zip(names, out, strict=True)) if len(out) == len(names) else {}


class ObjectNames:
    """Labels of one trace's objects.

    live: for det's gdb commands, a function (address, kind name) -> the
    pointer expression that reaches an object with no symbol, or None."""

    def __init__(self, trace: Trace, sym: Symbolizer | None = None, symbolize: bool = True,
                 live: Callable[[int, str], str | None] | None = None) -> None:
        self.trace = trace
        self.sym = sym if sym is not None else Symbolizer(trace.modules())
        self.symbolize = symbolize
        self.live = live
        self.objects = trace.objects()
        self.thread_of = {t["obj"]: t["tid"] for t in trace.threads() if t.get("obj")}
        self._symbols: dict[str, DataSymbols] = {}
        self._names: dict[int, str | None] = {}
        self._sites: dict[int, str | None] = {}

    def kind(self, obj: int) -> str:
        return objkind_name(self.objects.get(obj, (0, 0))[0])

    def symbol(self, address: int, kind: str) -> str | None:
        """The program's variable at address (static objects), or None."""
        if not self.symbolize or not address:
            return None
        module, off = self.sym.module_of(address)
        if not module:
            return None
        return self.data_symbols(module).lookup(off, OBJ_SIZES.get(kind.upper(), 0))

    def data_symbols(self, module: str) -> DataSymbols:
        if module not in self._symbols:
            self._symbols[module] = DataSymbols(module)
        return self._symbols[module]

    def name(self, obj: int) -> str | None:
        """The program's name for the object: its variable, or the pointer
        expression that reaches it (gdb), or None."""
        if obj not in self._names:
            kind_no, addr = self.objects.get(obj, (0, 0))
            kind = objkind_name(kind_no)
            n = None
            if kind_no != THREAD_KIND:
                n = self.symbol(addr, kind)
                if n is None and self.live is not None and addr:
                    n = self.live(addr, kind)
                    if n is None:
                        return None  # the program may not reach it yet: ask again later
            self._names[obj] = n
        return self._names[obj]

    def first_use(self, obj: int) -> str | None:
        """`x.c:31`: where the program first used the object."""
        if obj not in self._sites:
            ra = self.trace.q1("SELECT s.address FROM events e JOIN sites s ON s.site = e.site WHERE e.obj = ? "
                               "ORDER BY e.seq LIMIT 1", (obj,))
            self._sites[obj] = self.sym.one(ra).short() if ra and self.symbolize else None
        return self._sites[obj]

    def label(self, obj: int) -> str:
        """`mutex 4 (account)`, `T2`, `mutex 7 (first used at x.c:31)`; "" for no object."""
        if not obj:
            return ""
        kind_no = self.objects.get(obj, (0, 0))[0]
        if kind_no == THREAD_KIND and obj in self.thread_of:
            return f"T{self.thread_of[obj]}"
        base = f"{objkind_name(kind_no)} {obj}"
        n = self.name(obj)
        if n:
            return f"{base} ({n})"
        site = self.first_use(obj)
        return f"{base} (first used at {site})" if site else base

    def at(self, address: int) -> str:
        """An address no recorded object has (a divergence's): `an object at 0x.. (other)`."""
        if not address:
            return "no object"
        n = self.symbol(address, "")
        if n is None and self.live is not None:
            n = self.live(address, "")
        return f"an object at {address:#x} ({n})" if n else f"an object at {address:#x}"
