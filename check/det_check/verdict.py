"""What the sites and the linking of a program mean for each of det's modes:
findings, each with its effect per mode, and a verdict per mode.

Rules of this file:
  - Pure functions of an Elf and a Scan; the words are det's documented
    limits (README "Limits today"), one place for detcheck and detrec.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .elf import Elf
from .scan import CLONE_SYSCALLS, LIBC_CALLS, UNSUPPORTED_SYSCALLS, Scan, Site

MODES = ("default", "relaxed", "strict", "logical")
# How bad an effect is, worst last; a mode's verdict is its worst effect.
LEVELS = ("ok", "note", "partly", "no")
VERDICT_WORDS = {"ok": "reproducible", "note": "reproducible", "partly": "partly reproducible",
                 "no": "not reproducible"}


@dataclass
class Finding:
    key: str  # "static", "raw-syscall", "atomic", "rdrand", ...
    summary: str
    effects: dict[str, tuple[str, str]]  # mode -> (level, what it means there)
    sites: list[Site] = field(default_factory=list)


def _all(level: str, words: str) -> dict[str, tuple[str, str]]:
    return {m: (level, words) for m in MODES}


def _names(sites: list[Site]) -> str:
    c = Counter(s.detail for s in sites)
    return ", ".join(f"{n} x{k}" if k > 1 else n for n, k in sorted(c.items()))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def findings(elf: Elf, scan: Scan) -> list[Finding]:
    out: list[Finding] = []
    by_kind: dict[str, list[Site]] = {}
    for s in scan.sites:
        by_kind.setdefault(s.kind, []).append(s)
    raw = by_kind.get("syscall", [])
    if elf.static:
        out.append(Finding("static", "statically linked (no PT_INTERP, no DT_NEEDED)" + (
            f", with {_plural(len(raw), 'raw syscall instruction')} of its libc" if raw else ""),
            _all("no", "statically linked: det preloads libdet.so through the dynamic loader, which it never runs; "
                 "detrec records it with --ptrace instead (its system calls and thread order only)"),
            raw))
        raw = []
    elif not elf.library and not any(n.startswith("libc.so") for n in elf.needed):
        out.append(Finding("no-libc", f"dynamically linked ({elf.interp}) but without libc.so.6",
                           _all("no", "does not use libc: det's wrappers never run, nothing of it is recorded")))
    if raw:
        clone = [s for s in raw if s.detail in CLONE_SYSCALLS]
        words = (f"{_plural(len(raw), 'raw syscall instruction')} det does not see ({_names(raw)}): "
                 "their results are not recorded, replay makes the calls again")
        if clone:
            words += "; threads or processes a raw clone makes are not det's"
        out.append(Finding("raw-syscall", f"{_plural(len(raw), 'raw syscall instruction')} in its own code "
                           f"({_names(raw)})", _all("partly", words), raw))
    atomics = by_kind.get("atomic", [])
    if atomics:
        n = _plural(len(atomics), "atomic instruction")
        if elf.det_cc is not None:
            built = "det-cc --sched-points=memory" if elf.det_cc == "memory" else "det-cc"
            out.append(Finding("atomic", f"{n} (lock-prefixed, xchg with memory); built with {built}",
                               _all("ok", f"{n}: det-cc made them events"), atomics))
        else:
            unordered = (f"{n} outside det-cc: which thread gets there first is not recorded, so a replay can "
                         "take another order or stall in a spin loop (rebuild with det-cc, or record with "
                         "`detrec --patch-atomics`, which traps those of the executable)")
            out.append(Finding("atomic", f"{n} (lock-prefixed, xchg with memory), not built with det-cc", {
                "default": ("partly", unordered),
                "relaxed": ("partly", unordered),
                "strict": ("note", f"{n}: one thread runs at a time, so they replay in order; a spin loop with no "
                                   "events is preempted by the watchdog and marked not exact"),
                "logical": ("partly", f"{n} outside det-cc: not events, logical time does not order them"),
            }, atomics))
    for kind, level, words in (
            ("rdtsc", "note", "det traps rdtsc (PR_SET_TSC) and records its values"),
            ("rdtscp", "note", "det traps rdtscp (PR_SET_TSC) and records its values"),
            ("rdrand", "partly", "rdrand's values are not recorded: replay gets new ones"),
            ("rdseed", "partly", "rdseed's values are not recorded: replay gets new ones"),
            ("cpuid", "note", "cpuid answers the same on this machine; replayed on another CPU it may not")):
        sites = by_kind.get(kind, [])
        if sites:
            out.append(Finding(kind, _plural(len(sites), kind), _all(level, f"{_plural(len(sites), kind)}: {words}"),
                               sites))
    calls = by_kind.get("call", [])
    refused = [s for s in calls if s.detail.startswith("syscall(") and s.detail[8:-1] in UNSUPPORTED_SYSCALLS]
    if refused:
        out.append(Finding("unsupported-syscall", f"syscall() with numbers det refuses ({_names(refused)})",
                           _all("no", f"det stops the program at {_names(refused)}: its result would not replay"),
                           refused))
    cloned = [s for s in calls if s.detail.startswith("syscall(") and s.detail[8:-1] in CLONE_SYSCALLS]
    if cloned:
        out.append(Finding("syscall-clone", f"syscall() making processes or threads ({_names(cloned)})",
                           _all("partly", "a plain fork is recorded as one; a clone sharing memory stops the program"),
                           cloned))
    for name in sorted({s.detail for s in calls if s.detail in LIBC_CALLS}):
        sites = [s for s in calls if s.detail == name]
        out.append(Finding(f"call-{name}", f"calls {name}() ({_plural(len(sites), 'site')})",
                           _all("partly", f"{name}(): {LIBC_CALLS[name]}"), sites))
    if any(n.startswith("libomp.so") for n in elf.needed):
        out.append(Finding("libomp", "uses Clang's OpenMP runtime (libomp)",
                           _all("no", "Clang's OpenMP runtime (libomp) is not supported")))
    if any(n.startswith("libgomp.so") for n in elf.needed):
        eff = _all("note", "OpenMP (libgomp): locks, critical sections and loop chunks are recorded; tasks and "
                           "inline atomics are not ordered")
        eff["strict"] = ("partly", "strict mode cannot see libgomp's barriers and thread pool: not exact "
                                   "(use the default mode)")
        out.append(Finding("libgomp", "uses GCC's OpenMP runtime (libgomp)", eff))
    return out


def verdicts(found: list[Finding]) -> dict[str, tuple[str, list[str]]]:
    """mode -> (worst level, what makes it so: the reasons at that level first)."""
    out = {}
    for m in MODES:
        effects = [f.effects[m] for f in found]
        worst = max((LEVELS.index(lv) for lv, _ in effects), default=0)
        reasons = [w for lv, w in sorted(effects, key=lambda e: -LEVELS.index(e[0])) if lv != "ok"]
        out[m] = (LEVELS[worst], reasons)
    return out
