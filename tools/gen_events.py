#!/usr/bin/env python3
"""Generate recorder/det/events.py from include/det/events.def.

Rules: events.def is the only definition; this script is a line parser of
its DET_OBJKIND/DET_EVENT entries. `--check` exits 1 when the Python copy is
stale (make check runs it).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEF = ROOT / "include" / "det" / "events.def"
OUT = ROOT / "recorder" / "det" / "events.py"

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


def main() -> int:
    text = render(*parse(DEF.read_text()))
    if "--check" in sys.argv:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT.relative_to(ROOT)} is stale: run tools/gen_events.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
