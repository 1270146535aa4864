"""Source locations for recorded addresses, through binutils' addr2line.

Rules: standard library only (gdb's Python imports this module). A missing
addr2line or debug info degrades to "module+offset", never to an error; a
missing nm to objects without names.
"""

from __future__ import annotations

import bisect
import os
import shutil
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    address: int
    module: str
    offset: int
    function: str | None
    file: str | None
    line: int | None

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
            return f"{self.function} at {where}"
        return where


class Symbolizer:
    """Maps run-time addresses to source lines, given the run's modules."""

    def __init__(self, modules: list[tuple[str, int]]) -> None:
        mods = sorted((base, path) for path, base in modules if path)
        self.bases = [b for b, _ in mods]
        self.paths = [p for _, p in mods]
        self.cache: dict[tuple[int, bool], Location] = {}
        self.addr2line = shutil.which("addr2line")

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
            for (a, _), (func, file, line) in zip(items, results, strict=True):
                loc = Location(a, module, self.module_of(a)[1], func, file, line)
                self.cache[(a, return_addresses)] = loc
                out[a] = loc
        return out

    def one(self, addr: int, return_address: bool = True) -> Location:
        return self.lookup([addr], return_address)[addr]

    def _addr2line(self, module: str, offsets: list[int]) -> list[tuple[str | None, str | None, int | None]]:
        blank: list[tuple[str | None, str | None, int | None]] = [(None, None, None)] * len(offsets)
        if not module or not self.addr2line or not os.path.exists(module):
            return blank
        try:
            proc = subprocess.run(
                [self.addr2line, "-f", "-C", "-e", module] + [f"{o:#x}" for o in offsets],
                capture_output=True, text=True, timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired):
            return blank
        lines = proc.stdout.splitlines()
        if proc.returncode != 0 or len(lines) != 2 * len(offsets):
            return blank
        res = []
        for i in range(len(offsets)):
            func = lines[2 * i].strip()
            fileline = lines[2 * i + 1].strip().split(" (discriminator")[0]
            file, _, line = fileline.rpartition(":")
            res.append((
                None if func == "??" else func,
                None if file in ("??", "") else file,
                int(line) if line.isdigit() and line != "0" else None,
            ))
        return res


# sizeof each object kind on x86-64 glibc: names elements of arrays.
OBJ_SIZES = {"MUTEX": 40, "COND": 48, "RWLOCK": 56, "BARRIER": 32, "SEM": 32, "SPIN": 4, "ONCE": 4}

# glibc's FILE objects behind stdin, stdout and stderr.
STDIO_NAMES = {"_IO_2_1_stdin_": "stdin", "_IO_2_1_stdout_": "stdout", "_IO_2_1_stderr_": "stderr"}


class DataSymbols:
    """Names of variables in one ELF file, through binutils' nm (no nm: no names)."""

    DATA_TYPES = set("bBdDgGrRsSvV")

    def __init__(self, module: str) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.names: list[str] = []
        nm = shutil.which("nm")
        if not nm or not os.path.exists(module):
            return
        rows: list[tuple[int, int, str]] = []
        for dyn in ([], ["-D"]):
            try:
                p = subprocess.run([nm, "-C", "-S", "--defined-only", *dyn, module],
                                   capture_output=True, text=True, timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                return
            for line in p.stdout.splitlines():
                parts = line.split(None, 3)
                if len(parts) == 4 and parts[2] in self.DATA_TYPES:
                    # Dynamic symbols carry their version (name@@GLIBC_2.2.5).
                    name = parts[3].split("@", 1)[0]
                    try:
                        rows.append((int(parts[0], 16), int(parts[1], 16), STDIO_NAMES.get(name, name)))
                    except ValueError:
                        continue
            if rows:
                break
        rows.sort()
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
