"""detcheck PROGRAM: what det can reproduce in this binary, and in which mode.

    detcheck [--json] [--all] PROGRAM

Rules of this file:
  - Output: text for people (findings with their sites, then one verdict
    line per mode), or --json for tools (the same, whole); bad input is one
    line on stderr and exit status 2, no traceback.
  - Exit status 0 whatever the verdicts (it is a report, not a test).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import sys
import time

from det.errors import DetError
from det.symbols import demangle

from .elf import Elf, read_elf
from .scan import Scan, scan
from .verdict import MODES, VERDICT_WORDS, Finding, findings, verdicts

SHOWN = 8  # sites listed per finding without --all


def resolve(program: str) -> str:
    if os.path.exists(program) or "/" in program:
        if not os.path.exists(program):
            raise DetError(f"{program}: no such file")
        return program
    found = shutil.which(program)
    if not found:
        raise DetError(f"{program}: not found (no such file, and not a command on PATH)")
    return found


def add_lines(elf: Elf, result: Scan) -> bool:
    """Source lines for the sites, from the debug info; whether there was some."""
    from .lines import Lines

    try:
        lines = Lines(elf.path)
    except Exception:  # noqa: BLE001 (pyelftools on a damaged file: no lines, function+offset as without debug info)
        return False
    try:
        for s in result.sites:
            at = lines.at(s.address)
            if at:
                s.file, s.line = at
        return lines.has_dwarf
    finally:
        lines.close()


def check(path: str) -> tuple[Elf, Scan, list[Finding], float]:
    """The program's findings, and the seconds (wall) it took; the CPU
    seconds go into the Scan (a loaded machine stretches the wall time)."""
    t0 = time.perf_counter()
    c0 = time.process_time()
    elf = read_elf(path)
    try:
        result = scan(elf)
    except (struct.error, IndexError, ValueError, OverflowError) as e:
        raise DetError(f"{path}: damaged ELF file ({e})") from None
    except ImportError as e:
        raise DetError(f"needs the Python packages capstone and pyelftools ({e}): `pip install capstone pyelftools` "
                       "(det's `make` installs them into .venv)") from None
    add_lines(elf, result)
    mangled = sorted({s.function for s in result.sites if s.function and s.function.startswith("_Z")})
    plain = demangle(mangled) if mangled else {}
    for s in result.sites:
        s.function = plain.get(s.function, s.function)
    found = findings(elf, result)
    result.cpu_seconds = time.process_time() - c0
    return elf, result, found, time.perf_counter() - t0


def describe(elf: Elf) -> str:
    linking = (f"dynamically linked ({elf.interp})" if elf.interp else
               f"a shared library (needs {', '.join(elf.needed)})" if elf.library else "statically linked")
    cc = {None: "not built with det-cc", "": "built with det-cc",
          "memory": "built with det-cc --sched-points=memory"}[elf.det_cc]
    return f"{linking}, {cc}"


def as_json(path: str, elf: Elf, result: Scan, found: list[Finding], seconds: float) -> dict:
    def site(s):
        return {"kind": s.kind, "address": s.address, "function": s.function, "offset": s.offset,
                "file": s.file, "line": s.line, "instruction": s.text, "detail": s.detail or None,
                "number": s.number}

    return {
        "program": path,
        "static": elf.static,
        "shared_library": elf.library,
        "interpreter": elf.interp,
        "needed": elf.needed,
        "det_cc": elf.det_cc is not None,
        "det_cc_memory_points": elf.det_cc == "memory",
        "findings": [{"key": f.key, "summary": f.summary, "sites": [site(s) for s in f.sites],
                      "modes": {m: {"level": lv, "effect": w} for m, (lv, w) in f.effects.items()}}
                     for f in found],
        "verdicts": {m: {"level": lv, "verdict": VERDICT_WORDS[lv], "reasons": rs}
                     for m, (lv, rs) in verdicts(found).items()},
        "scan": {"code_bytes": result.code_bytes, "functions": result.functions, "seconds": round(seconds, 3),
                 "cpu_seconds": round(result.cpu_seconds, 3)},
    }


def as_text(path: str, elf: Elf, result: Scan, found: list[Finding], seconds: float, show_all: bool) -> str:
    out = [f"{path}: {describe(elf)}",
           f"  scanned {result.code_bytes} bytes of code ({result.functions} function(s) looked into) "
           f"in {seconds:.2f} s ({result.cpu_seconds:.2f} s of CPU)"]
    if found:
        out.append("findings:")
    for f in found:
        out.append(f"  {f.summary}")
        shown = f.sites if show_all else f.sites[:SHOWN]
        for s in shown:
            extra = f"  [{s.detail}]" if s.detail and s.kind != "atomic" else ""
            out.append(f"    {s.where()}: {s.text}{extra}")
        if len(f.sites) > len(shown):
            out.append(f"    ... and {len(f.sites) - len(shown)} more (--all lists them)")
    if not found:
        out.append("findings: none (nothing det does not see in the program's own code)")
    out.append("verdicts:")
    for m, (lv, reasons) in verdicts(found).items():
        words = VERDICT_WORDS[lv]
        worst = [w for f in found for flv, w in [f.effects[m]] if flv == lv and lv != "ok"]
        if lv == "note":
            words += " (" + "; ".join(worst) + ")"
        elif worst:
            words += ": " + "; ".join(worst)
            if len(reasons) > len(worst):
                words += f" (and {len(reasons) - len(worst)} note(s) above)"
        out.append(f"  {m:<8} {words}")
    return "\n".join(out)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="detcheck",
        description="What det can reproduce in a program, and in which mode (" + ", ".join(MODES) + "): how it is "
                    "linked, raw system calls, rdtsc/rdrand/cpuid, atomics outside det-cc, calls det refuses; "
                    "read from the file, with source lines where it has debug info.")
    p.add_argument("--json", action="store_true", help="one JSON object, for tools")
    p.add_argument("--all", action="store_true", help=f"list every site (default: the first {SHOWN} of each finding)")
    p.add_argument("program", help="the program (a path, or a command on PATH)").complete = "command"
    return p


def main(argv: list[str] | None = None) -> int:
    ns = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        path = resolve(ns.program)
        elf, result, found, seconds = check(path)
    except DetError as e:
        print(f"detcheck: {e}", file=sys.stderr)
        return 2
    text = json.dumps(as_json(path, elf, result, found, seconds), indent=1) if ns.json else \
        as_text(path, elf, result, found, seconds, ns.all)
    try:
        print(text, flush=True)
    except BrokenPipeError:  # `detcheck PROG | head`
        sys.stdout = None
    return 0


if __name__ == "__main__":
    sys.exit(main())
