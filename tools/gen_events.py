#!/usr/bin/env python3
"""Generate the Python copies of det's C definitions: store/det/events.py
from include/det/events.def, and store/det/constants.py from the
constants of include/det/shm.h and include/det/sup.h that Python uses and
the names of include/det/rawsys_refused.def.

Rules: the C headers are the only definitions; this script is a line parser
of events.def's DET_OBJKIND/DET_EVENT/DET_AUX entries and of the headers'
`#define NAME value` lines and `enum NAME {...}` blocks it is told to copy
(CONSTANTS, ENUMS below); a name it is told to copy that the header lacks is
an error. `--check` exits 1 when a Python copy is stale (make check runs it).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEF = ROOT / "include" / "det" / "events.def"
OUT = ROOT / "store" / "det" / "events.py"
CONST_OUT = OUT.with_name("constants.py")
HEADERS = (ROOT / "include" / "det" / "shm.h", ROOT / "include" / "det" / "sup.h", ROOT / "include" / "det" / "cc.h")
REFUSED_DEF = ROOT / "include" / "det" / "rawsys_refused.def"
REFUSED_RE = re.compile(r"^DET_RAWSYS_REFUSED\((\w+)\)$")

# The #defines Python needs: whole names, or prefixes ending in "_".
CONSTANTS = ("DET_F_", "DET_SIG_", "DET_FILE_", "DET_SHM_ENV", "DET_SYSCALL_SITES_ENV", "DET_EXIT_STOPPED",
             "DET_RESULT_PENDING", "DET_MARK_WINDOW", "DET_ATOMIC_TRAPPED", "DET_FILLED_BITS")
# The enums Python needs: enum name -> (the Python name, the prefix its members drop). A state enum
# becomes {value: "name"}; an SQL-order enum becomes the tuple of its names in order (its _COUNT
# left out), so a Python table of statements can be checked against it.
ENUMS = {
    "det_thread_state": ("THREAD_STATES", "DET_TS_"),
    "det_proc_state": ("PROC_STATES", "DET_PS_"),
    "det_convert_sql": ("CONVERT_SQL_ORDER", "DET_SQL_"),
    "det_sched_sql": ("SCHED_SQL_ORDER", "DET_SCHED_SQL_"),
}
SHIFT_RE = re.compile(r"^\(?(\d+)u?l{0,2}\s*<<\s*(\d+)\)?$")
C_VALUES = {"INT64_MIN": str(-(2**63))}  # C spellings a value may use
DEFINE_RE = re.compile(r'^#define\s+(DET_\w+)\s+("[^"]*"|\(?[-\w<> ]+\)?)\s*(/\*.*)?$')
ENUM_RE = re.compile(r"^enum\s+(\w+)\s*\{")
MEMBER_RE = re.compile(r"^(DET_\w+)(?:\s*=\s*(\d+))?\s*,")

OBJ_RE = re.compile(r'^DET_OBJKIND\((\w+),\s*(\d+),\s*"([^"]*)"\)\s*$')
EV_RE = re.compile(r'^DET_EVENT\((\w+),\s*(\d+),\s*(\w+),\s*(\w+),\s*"([^"]*)"\)\s*$')
AUX_RE = re.compile(r'^DET_AUX\((\w+),\s*(\w+),\s*(\d+),\s*"([^"]*)"\)\s*$')


def parse(text: str) -> tuple[list[tuple], list[tuple], list[tuple]]:
    objkinds, events, auxes = [], [], []
    for line in text.splitlines():
        line = line.strip()
        if m := OBJ_RE.match(line):
            objkinds.append((m[1], int(m[2]), m[3]))
        elif m := EV_RE.match(line):
            events.append((m[1], int(m[2]), m[3], m[4], m[5]))
        elif m := AUX_RE.match(line):
            auxes.append((m[1], m[2], int(m[3]), m[4]))
        elif line.startswith(("DET_OBJKIND(", "DET_EVENT(", "DET_AUX(")):
            raise SystemExit(f"gen_events: cannot parse: {line}")
    numbers = [e[1] for e in events]
    if len(set(numbers)) != len(numbers):
        raise SystemExit("gen_events: an event number is used twice")
    names = {e[0] for e in events}
    for kind, name, *_ in auxes:
        if kind not in names:
            raise SystemExit(f"gen_events: DET_AUX({kind}, {name}): no such event kind")
    return objkinds, events, auxes


def render(objkinds: list[tuple], events: list[tuple], auxes: list[tuple]) -> str:
    out = [
        '"""Event and object kinds: GENERATED from include/det/events.def by',
        "tools/gen_events.py. Do not edit; `make check` fails when this copy is stale.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import NamedTuple",
        "",
        "",
        "class ObjKind(NamedTuple):",
        "    name: str",
        "    number: int",
        "    description: str",
        "",
        "",
        "class EventKind(NamedTuple):",
        "    name: str",
        "    number: int",
        "    objkind: str",
        "    role: str",
        "    description: str",
        "",
        "",
        "OBJKINDS: tuple[ObjKind, ...] = (",
    ]
    out += [f"    ObjKind({n!r}, {num}, {d!r})," for n, num, d in objkinds]
    out += [")", "", "EVENTS: tuple[EventKind, ...] = ("]
    out += [f"    EventKind({n!r}, {num}, {o!r}, {r!r}, {d!r})," for n, num, o, r, d in events]
    out += [")", ""]
    out += [f"{n} = {num}" for n, num, *_ in events]
    out += ["", "# Named values of an event's aux field (DET_AUX)."]
    out += [f"AUX_{kind}_{name} = {num}" for kind, name, num, _ in auxes]
    out += [
        "",
        "BY_NUMBER: dict[int, EventKind] = {e.number: e for e in EVENTS}",
        "OBJ_BY_NUMBER: dict[int, ObjKind] = {o.number: o for o in OBJKINDS}",
        "",
    ]
    return "\n".join(out)


def wanted(name: str) -> bool:
    return any(name == c or (c.endswith("_") and name.startswith(c)) for c in CONSTANTS)


def py_value(c: str) -> str:
    """A #define's value as Python: a string, an integer (hex kept), a shift (1u << 30), or INT64_MIN."""
    c = c.strip()
    if c.startswith('"'):
        return c
    if m := SHIFT_RE.match(c):
        return f"{m[1]} << {m[2]}"
    c = C_VALUES.get(c, c)
    try:
        int(c, 0)
    except ValueError:
        raise SystemExit(f"gen_events: cannot copy the value {c!r} to Python") from None
    return c


def parse_headers(texts: list[tuple[str, str]]) -> tuple[list[tuple], dict[str, tuple]]:
    """The wanted #defines (name, value, header) and enums {enum: (header, [(member, value)])}."""
    defines, enums = [], {}
    for header, text in texts:
        lines = iter(text.splitlines())
        for line in lines:
            if (m := DEFINE_RE.match(line.strip())) and wanted(m[1]):
                defines.append((m[1], py_value(m[2]), header))
            elif (m := ENUM_RE.match(line)) and m[1] in ENUMS:
                members, value = [], 0
                for inner in lines:
                    if inner.startswith("}"):
                        break
                    if mm := MEMBER_RE.match(inner.strip()):
                        value = int(mm[2]) if mm[2] else value
                        members.append((mm[1], value))
                        value += 1
                enums[m[1]] = (header, members)
    missing = [e for e in ENUMS if e not in enums] + [
        c for c in CONSTANTS if not c.endswith("_") and c not in {d[0] for d in defines}]
    if missing:
        raise SystemExit(f"gen_events: not found in {', '.join(h for h, _ in texts)}: {', '.join(missing)}")
    return defines, enums


def parse_refused(text: str) -> list[str]:
    """The syscall names of rawsys_refused.def, in order."""
    names = [m[1] for line in text.splitlines() if (m := REFUSED_RE.match(line.strip()))]
    if not names:
        raise SystemExit(f"gen_events: no DET_RAWSYS_REFUSED(name) line in {REFUSED_DEF.name}")
    return names


def render_constants(defines: list[tuple], enums: dict[str, tuple], refused: list[str]) -> str:
    out = [
        '"""Constants Python shares with det\'s C code: GENERATED from include/det/shm.h,',
        "include/det/sup.h, include/det/cc.h and include/det/rawsys_refused.def by",
        'tools/gen_events.py. Do not edit; `make check` fails when this copy is stale."""',
        "",
        "from __future__ import annotations",
        "",
    ]
    for header in sorted({h for *_, h in defines}):
        out += [f"# #defines of include/det/{header}"]
        out += [f"{name} = {value}" for name, value, h in defines if h == header]
        out += [""]
    for enum, (py_name, prefix) in ENUMS.items():
        header, members = enums[enum]
        out += [f"# enum {enum} (include/det/{header})"]
        named = [(m.removeprefix(prefix), v) for m, v in members if not m.endswith("_COUNT")]
        if py_name.endswith("_ORDER"):
            out += [f"{py_name}: tuple[str, ...] = ("] + [f"    {n!r}," for n, _ in named] + [")", ""]
        else:
            out += [f"{py_name}: dict[int, str] = {{"] + [f"    {v}: {n.lower()!r}," for n, v in named] + ["}", ""]
    out += ["# syscall(SYS_x) that stops the program (include/det/rawsys_refused.def)",
            "RAWSYS_REFUSED: frozenset[str] = frozenset({"] + [f"    {n!r}," for n in refused] + ["})", ""]
    return "\n".join(out)


def main() -> int:
    outputs = {
        OUT: render(*parse(DEF.read_text())),
        CONST_OUT: render_constants(*parse_headers([(h.name, h.read_text()) for h in HEADERS]),
                                    parse_refused(REFUSED_DEF.read_text())),
    }
    if "--check" in sys.argv:
        stale = [out for out, text in outputs.items() if not out.exists() or out.read_text() != text]
        for out in stale:
            print(f"{out.relative_to(ROOT)} is stale: run tools/gen_events.py", file=sys.stderr)
        return 1 if stale else 0
    for out, text in outputs.items():
        out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
