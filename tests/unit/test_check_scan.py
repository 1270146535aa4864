"""det.check's tables and its shortcut, checked against what they copy or
stand for: the refused syscall() names, the
kernel's x86-64 numbers, and a sweep of every instruction of each function
(what the regular expression and the 96-byte resync must agree with)."""

from __future__ import annotations

import re
from pathlib import Path

from det.check import scan as S
from det.check.elf import read_elf
from det.check.syscalls import NAMES

ROOT = Path(__file__).resolve().parent.parent.parent
UNISTD = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")


def test_unsupported_syscalls_are_kernel_names():
    # the list is include/det/rawsys_refused.def's (its Python copy is checked by make check);
    # each entry must name a system call the scan can find by number
    assert S.UNSUPPORTED_SYSCALLS and S.UNSUPPORTED_SYSCALLS <= set(NAMES.values())


def test_syscall_names_are_the_kernels():
    assert UNISTD.exists(), f"{UNISTD} is missing (Debian package linux-libc-dev)"
    header = {int(n): name for name, n in re.findall(r"#define __NR_(\w+) (\d+)", UNISTD.read_text())}
    assert header == {n: NAMES[n] for n in header}


def _sweep(elf, quick: bool) -> list[tuple[int, str]]:
    """Every site, from a linear sweep of each function from its start."""
    import capstone

    md = capstone.Cs(capstone.CS_ARCH_X86, capstone.CS_MODE_64)
    md.skipdata = True
    bounds = S._boundaries(elf)
    out = []
    for sec in elf.code():
        starts = [b for b in bounds if sec.addr <= b < sec.addr + sec.size] + [sec.addr + sec.size]
        for start, end in zip(starts, starts[1:], strict=False):
            off = sec.offset + start - sec.addr
            insns = list(md.disasm_lite(elf.data[off:off + end - start], start))
            for i, (addr, size, mnem, ops) in enumerate(insns):
                site = S._site(elf, insns, i, addr, size, mnem, ops, quick, {}, set(), set())
                if site:
                    out.append((site.address, site.kind))
    return sorted(out)


def test_shortcut_finds_what_a_full_sweep_finds():
    """On libstdc++ (1 MB of code, hundreds of atomics, rdrand, rdseed, cpuid)."""
    path = Path("/usr/lib/x86_64-linux-gnu/libstdc++.so.6")
    assert path.exists(), f"{path} is missing (det builds C++ programs)"
    elf = read_elf(str(path))
    for quick in (True, False):
        got = sorted((s.address, s.kind) for s in S.scan(elf, quick=quick).sites if s.kind != "call")
        want = _sweep(elf, quick)
        assert len(want) > 100
        assert got == want, (quick, sorted(set(got) ^ set(want))[:10])


def test_damaged_files_are_one_line_errors(tmp_path: Path):
    """Bytes flipped and files cut short, in the header and anywhere:
    detcheck's check says DetError (one line) or reports, never raises
    anything else (pyelftools' own errors on damaged debug info included)."""
    import random

    from det.check.cli import check
    from det.errors import DetError

    prog = ROOT / "tests" / "bin" / "detcheck_spin"
    assert prog.exists(), f"{prog} is missing: run `make` first"
    base = prog.read_bytes()
    rng = random.Random(26)
    path = tmp_path / "damaged"
    for _ in range(150):
        data = bytearray(base)
        for _ in range(rng.choice([1, 4, 16, 64])):
            at = rng.randrange(len(data)) if rng.random() < 0.5 else rng.randrange(0x400)
            data[at] = rng.randrange(256)
        if rng.random() < 0.2:
            data = data[:rng.randrange(64, len(data))]
        path.write_bytes(bytes(data))
        try:
            check(str(path))
        except DetError as e:
            assert "\n" not in str(e)
