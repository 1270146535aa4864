"""Finding what det does not see in a program's own code: raw system calls,
rdtsc/rdrand/cpuid, lock-prefixed instructions and xchg with memory, and
calls into libc that det refuses or does not record.

How it stays fast: a regular expression over the executable sections finds
every place one of those instructions could start (a superset of their
encodings: the lock prefix followed by an opcode that takes it, 0f 05...);
a place is kept when capstone (lite mode, skipdata) decodes such an
instruction there, and decoding from 64 bytes before it agrees, which rules
out most; each place kept is then disassembled from its function's start
(symbols and .eh_frame_hdr's table give the starts, so a stripped program
too), or from 512 bytes before it in a long function, so a site is an
instruction where a linear sweep puts it, never a byte pattern.

Rules of this file:
  - capstone is imported when a scan runs (det.check.quick scans without
    it when there is nothing to confirm).
  - What det refuses through syscall() is include/det/rawsys_refused.def's
    list (det.constants.RAWSYS_REFUSED, generated from it).
"""

from __future__ import annotations

import bisect
import re
import struct
from dataclasses import dataclass, field

from det.constants import RAWSYS_REFUSED

from .elf import Elf, eh_frame_starts
from .syscalls import NAMES

# syscall(SYS_x) for these stops the program ("not supported by det").
UNSUPPORTED_SYSCALLS = RAWSYS_REFUSED
# Thread-making calls det sees only as pthread_create (preload/fork.c: a raw
# clone sharing memory stops the program; a plain fork is recorded as one).
CLONE_SYSCALLS = frozenset({"clone", "clone3", "fork", "vfork"})

# libc functions det does not record, or refuses (README "Limits today").
LIBC_CALLS = {
    "clone": "a thread made by clone() with CLONE_VM stops the program (det records pthread_create's threads)",
    "aio_read": "POSIX AIO's worker threads run unrecorded",
    "aio_write": "POSIX AIO's worker threads run unrecorded",
    "aio_fsync": "POSIX AIO's worker threads run unrecorded",
    "lio_listio": "POSIX AIO's worker threads run unrecorded",
    "scandir": "reads a directory inside libc, unseen",
    "scandir64": "reads a directory inside libc, unseen",
    "scandirat": "reads a directory inside libc, unseen",
    "glob": "reads directories inside libc, unseen",
    "glob64": "reads directories inside libc, unseen",
    "nftw": "reads directories inside libc, unseen",
    "nftw64": "reads directories inside libc, unseen",
    "ftw": "reads directories inside libc, unseen",
}

_LOCKABLE = rb"[\x00\x01\x08\x09\x10\x11\x18\x19\x20\x21\x28\x29\x30\x31\x80\x81\x83\x86\x87\xf6\xf7\xfe\xff]"
_LOCKABLE_0F = rb"\x0f[\xb0\xb1\xc0\xc1\xc7\xab\xb3\xbb\xba]"
# Where an instruction of interest may start (the quick check: system calls and atomics only).
QUICK_PATTERN = re.compile(
    rb"\x0f\x05|\x0f\x34|\xcd\x80"  # syscall, sysenter, int $0x80
    rb"|\xf0\x66?[\x40-\x4f]?(?:" + _LOCKABLE + rb"|" + _LOCKABLE_0F + rb")[\x00-\xbf]"  # lock, memory operand
    rb"|[\x86\x87][\x00-\xbf]"  # xchg with memory (locked without a prefix)
    rb"|\x0f\xc7[\xf0-\xff]",  # rdrand, rdseed
    re.S)
FULL_PATTERN = re.compile(
    QUICK_PATTERN.pattern + rb"|\x0f\x31|\x0f\x01\xf9|\x0f\xa2",  # rdtsc(p), cpuid
    re.S)
_CALL_REL = re.compile(rb"\xe8", re.S)  # call rel32
_CALL_GOT = re.compile(rb"\xff\x15", re.S)  # call *disp32(%rip)
_BRANCH = re.compile(r"^(j|call|ret|loop|syscall)")
# A place kept is decoded from its function's start, or from the end of the
# previous site's instruction, when that is at most RESYNC bytes before it,
# else from RESYNC bytes before it: x86 decoding falls into step with the
# instruction boundaries within a few instructions, and a sweep of ~130
# instructions bounds the cost of a site in a long function. (In step with
# a full sweep of every function: tests/unit/test_check_scan.py.)
RESYNC = 512
# Before that sweep, a place far from the last decoded instruction is decoded
# from WINDOW bytes before it: when that puts it inside another instruction it
# is dropped (most places left are bytes of `ja`/`jbe` rel32, 0f 87/0f 86, or
# of displacements); a real site so dropped would need the decoding to be out
# of step over all WINDOW bytes (the unit test checks against a full sweep).
WINDOW = 64
MAX_INSN = 15
LOOKBACK = 8  # instructions searched back for the constant in eax (edi for syscall())


@dataclass
class Site:
    kind: str  # "syscall", "atomic", "rdtsc", "rdtscp", "rdrand", "rdseed", "cpuid", "call"
    address: int
    text: str  # the instruction, as capstone prints it
    detail: str = ""  # the system call's name, the called function...
    number: int | None = None  # a system call's number, when constant
    function: str | None = None
    offset: int = 0
    file: str | None = None
    line: int | None = None

    def where(self) -> str:
        src = f"{self.file}:{self.line}" if self.file and self.line else None
        fn = f"{self.function}+{self.offset:#x}" if self.function else f"{self.address:#x}"
        return f"{src} ({fn})" if src else fn


@dataclass
class Scan:
    sites: list[Site] = field(default_factory=list)
    functions: int = 0  # functions with a place to look at
    code_bytes: int = 0  # bytes of executable sections searched
    cpu_seconds: float = 0.0  # the whole check's (capstone's import included), set by det.check.cli


def syscall_name(number: int | None) -> str:
    if number is None:
        return "a number computed at run time"
    return NAMES.get(number, f"#{number}")


def _boundaries(elf: Elf) -> list[int]:
    starts = {f[0] for f in elf.funcs}
    starts.update(eh_frame_starts(elf))
    for sec in elf.code():
        starts.add(sec.addr)
        starts.add(sec.addr + sec.size)
    return sorted(starts)


def candidates(elf: Elf, pattern: re.Pattern[bytes], call_targets: set[int] | None = None,
               call_slots: set[int] | None = None) -> dict[tuple[int, int], list[int]]:
    """Per function (start, end): the sorted places in it where pattern
    matches, or a direct call to call_targets / an indirect one through
    call_slots is."""
    bounds = _boundaries(elf)
    picked: dict[tuple[int, int], list[int]] = {}
    for sec in elf.code():
        code = elf.bytes_of(sec)
        sec_end = sec.addr + sec.size
        places = [sec.addr + m.start() for m in pattern.finditer(code)]
        if call_targets:
            unpack = struct.Struct("<i").unpack_from
            limit = len(code) - 5
            places += [sec.addr + p for p in (m.start() for m in _CALL_REL.finditer(code))
                       if p <= limit and sec.addr + p + 5 + unpack(code, p + 1)[0] in call_targets]
        if call_slots:
            unpack = struct.Struct("<i").unpack_from
            limit = len(code) - 6
            places += [sec.addr + p for p in (m.start() for m in _CALL_GOT.finditer(code))
                       if p <= limit and sec.addr + p + 6 + unpack(code, p + 2)[0] in call_slots]
        for addr in places:
            i = bisect.bisect_right(bounds, addr) - 1
            key = (bounds[i], min(bounds[i + 1] if i + 1 < len(bounds) else sec_end, sec_end))
            picked.setdefault(key, []).append(addr)
    for v in picked.values():
        v.sort()
    return picked


def _constant_in(insns: list[tuple[int, int, str, str]], i: int, regs: tuple[str, str]) -> int | None:
    """The constant the instructions before insns[i] leave in regs (eax/rax,
    edi/rdi), when it is one: `mov eax, 0xe7`, `xor eax, eax`."""
    for j in range(i - 1, max(-1, i - 1 - LOOKBACK), -1):
        _a, _s, mnem, ops = insns[j]
        if _BRANCH.match(mnem):
            return None
        dest, _, src = ops.partition(", ")
        if dest not in regs:
            continue
        if mnem == "mov":
            try:
                return int(src, 0)
            except ValueError:
                return None
        if mnem == "xor" and src == dest:
            return 0
        return None
    return None


def _call_target(addr: int, size: int, ops: str) -> tuple[int | None, int | None]:
    """(direct target, GOT slot of an indirect call through rip) of a call's operand."""
    if ops.startswith("0x"):
        try:
            return int(ops, 16), None
        except ValueError:
            return None, None
    m = re.fullmatch(r"qword ptr \[rip ([+-]) (0x[0-9a-f]+)\]", ops)
    if m:
        disp = int(m.group(2), 16)
        return None, addr + size + (disp if m.group(1) == "+" else -disp)
    return None, None


def scan(elf: Elf, quick: bool = False) -> Scan:
    """The sites of interest in elf's own code. quick: raw system calls and
    lock-prefixed instructions only (what detrec warns about)."""
    import capstone

    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    md.skipdata = True
    calls = {} if quick else {n: why for n, why in LIBC_CALLS.items() if n in elf.imports}
    if not quick and "syscall" in elf.imports:
        calls["syscall"] = ""
    targets = {a for a, n in elf.plt_names.items() if n in calls}
    slots = {a for a, n in elf.got_names.items() if n in calls}
    funcs = candidates(elf, QUICK_PATTERN if quick else FULL_PATTERN, targets, slots)
    out = Scan(functions=len(funcs), code_bytes=sum(s.size for s in elf.code()))
    by_addr = {s.addr: s for s in elf.code()}
    sec_starts = sorted(by_addr)
    for (start, end), places in funcs.items():
        sec = by_addr[sec_starts[bisect.bisect_right(sec_starts, start) - 1]]
        delta = sec.offset - sec.addr  # address -> file offset
        pos = start
        for c in places:
            if c < pos:
                continue  # inside the instruction an earlier place was
            first = next(md.disasm_lite(elf.data[c + delta:min(c + MAX_INSN, end) + delta], c, 1), None)
            if first is None or not _of_interest(first[2], first[3]):
                continue  # what starts there is not one (most places: a byte inside another instruction)
            stop = min(c + MAX_INSN, end)
            if c - pos > WINDOW and not _starts_one(md, elf.data, delta, c - WINDOW, stop, c):
                continue  # decoded from a little before, it is inside another instruction
            if c - pos > RESYNC:
                pos = c - RESYNC
            insns = list(md.disasm_lite(elf.data[pos + delta:stop + delta], pos))
            k = next((k for k, x in enumerate(insns) if x[0] <= c < x[0] + x[1]), None)
            if k is None:
                continue
            addr, size, mnem, ops = insns[k]
            pos = addr + size
            site = _site(elf, insns, k, addr, size, mnem, ops, quick, calls, targets, slots)
            if site is not None:
                fn = elf.function_at(addr)
                if fn:
                    site.function, site.offset = fn
                out.sites.append(site)
    out.sites.sort(key=lambda s: s.address)
    return out


def _starts_one(md, data: bytes, delta: int, start: int, stop: int, c: int) -> bool:
    """Whether decoding from start puts an instruction of interest over c."""
    for addr, size, mnem, ops in md.disasm_lite(data[start + delta:stop + delta], start):
        if addr <= c < addr + size:
            return _of_interest(mnem, ops)
    return False


_KINDS = frozenset({"syscall", "sysenter", "int", "rdtsc", "rdtscp", "rdrand", "rdseed", "cpuid", "call"})


def _of_interest(mnem: str, ops: str) -> bool:
    """Whether an instruction decoded at a place could be a site (a prefix
    before the place changes its operands, not this)."""
    return mnem in _KINDS or mnem.startswith("lock ") or (mnem == "xchg" and "[" in ops)


def _site(elf: Elf, insns: list, i: int, addr: int, size: int, mnem: str, ops: str, quick: bool,
          calls: dict[str, str], targets: set[int], slots: set[int]) -> Site | None:
    text = f"{mnem} {ops}".strip()
    if mnem in ("syscall", "sysenter") or (mnem == "int" and ops == "0x80"):
        num = _constant_in(insns, i, ("eax", "rax"))
        return Site("syscall", addr, text, syscall_name(num), num)
    if mnem.startswith("lock ") or (mnem == "xchg" and "[" in ops):
        return Site("atomic", addr, text)
    if mnem in ("rdrand", "rdseed"):
        return Site(mnem, addr, text)
    if quick:
        return None
    if mnem in ("rdtsc", "rdtscp", "cpuid"):
        return Site(mnem, addr, text)
    if mnem == "call" and calls:
        direct, slot = _call_target(addr, size, ops)
        name = elf.plt_names.get(direct) if direct in targets else elf.got_names.get(slot) if slot in slots else None
        if name == "syscall":
            num = _constant_in(insns, i, ("edi", "rdi"))
            return Site("call", addr, "call syscall@plt", f"syscall({syscall_name(num)})", num)
        if name:
            return Site("call", addr, f"call {name}@plt", name)
    return None
