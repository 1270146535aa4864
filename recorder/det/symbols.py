"""Source locations for recorded addresses, through binutils' addr2line.

Rules: standard library only (gdb's Python imports this module). A missing
addr2line or debug info degrades to "module+offset", never to an error.
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
