"""What a trace says about ownership: who holds which lock, who waits for
whom, and the cycle of a deadlock.

Rules: standard library only (gdb's Python imports this module). Ownership
comes from the event roles in events.def, never from kind names.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import events as ev
from .symbols import Symbolizer
from .trace import Trace, kind_name, objkind_name

EOWNERDEAD = 130
# Objects a thread holds (semaphores are counted, not owned).
OWNED = {"MUTEX", "RWLOCK", "SPIN", "FILE"}


def _role_lists() -> tuple[list[int], list[int], list[int], list[int]]:
    acq = [e.number for e in ev.EVENTS if e.role == "ACQUIRE" and e.objkind in OWNED]
    rel = [e.number for e in ev.EVENTS if e.role == "RELEASE" and e.objkind in OWNED]
    wait = [e.number for e in ev.EVENTS if e.role == "WAIT" and e.objkind == "COND"]
    wake = [e.number for e in ev.EVENTS if e.role == "WAKE" and e.objkind == "COND"]
    return acq, rel, wait, wake


RACE_REASONS = ("kind", "object", "result", "extra", "stall", "outcome")


def race_hint(mode: str | None, reason: str, what: str) -> str | None:
    """What a divergence of a default (not strict) replay most likely is:
    same program, same inputs, same schedule of events, another path taken
    (another call, object or result, or a thread stuck) - a data race, which
    only a strict recording fixes. None for a strict trace, or when det
    named the cause itself (a changed file, a program that sends other bytes).
    "outcome": every event replayed, yet the output or status differs."""
    if mode == "strict" or reason not in RACE_REASONS or "changed since recording" in what:
        return None
    return ("this is most likely a data race: a thread read memory another wrote without synchronization and "
            "took another path than when recorded, with the same schedule and inputs; record with --strict "
            "(detrec --strict ...), which replays races exactly")


def holders(trace: Trace, upto_seq: int | None = None) -> dict[int, dict[int, int]]:
    """obj -> {thread: times held} after the events before upto_seq."""
    acq, rel, wait, wake = _role_lists()
    lim = "" if upto_seq is None else f"AND seq < {int(upto_seq)}"
    sql = f"""
    SELECT o, tid, sum(d) FROM (
        SELECT obj AS o, tid, CASE WHEN kind IN ({",".join(map(str, acq))})
                                   THEN (result = 0 OR result = {EOWNERDEAD}) ELSE -1 END AS d
          FROM events WHERE kind IN ({",".join(map(str, acq + rel))}) {lim}
        UNION ALL
        SELECT aux, tid, CASE WHEN kind IN ({",".join(map(str, wait))}) THEN -1 ELSE 1 END
          FROM events WHERE kind IN ({",".join(map(str, wait + wake))}) AND aux != 0 {lim}
    ) GROUP BY o, tid HAVING sum(d) > 0
    """
    out: dict[int, dict[int, int]] = {}
    for obj, tid, n in trace.q(sql):
        out.setdefault(obj, {})[tid] = n
    return out


@dataclass
class Waiter:
    tid: int
    kind: int
    obj: int
    ra: int


@dataclass
class BlockReport:
    lines: list[str]      # one per blocked thread
    cycle: list[int]      # threads of a wait-for cycle, [] if none
    summary: str          # one line


def object_label(trace: Trace, obj: int, objects: dict[int, tuple[int, int]] | None = None) -> str:
    objects = objects if objects is not None else trace.objects()
    kind = objects.get(obj, (0, 0))[0]
    return f"{objkind_name(kind)} {obj}" if obj else "no object"


def first_site_of(trace: Trace, obj: int) -> int | None:
    """Return address of the first event on obj: where it first appears."""
    row = trace.q("SELECT s.address FROM events e JOIN sites s ON s.site = e.site WHERE e.obj = ? "
                  "ORDER BY e.seq LIMIT 1", (obj,))
    return row[0][0] if row else None


def block_report(trace: Trace, waiters: list[Waiter], sym: Symbolizer, upto_seq: int | None = None) -> BlockReport:
    """Explain blocked threads: what each holds and waits for, and the cycle."""
    held = holders(trace, upto_seq)
    objects = trace.objects()
    by_thread: dict[int, list[int]] = {}
    for obj, ts in held.items():
        for tid in ts:
            by_thread.setdefault(tid, []).append(obj)
    waits = {w.tid: w for w in waiters}
    # wait-for graph: thread -> holders of the object it waits for
    edges = {w.tid: [t for t in held.get(w.obj, {}) if t != w.tid] for w in waiters}
    cycle = _find_cycle(edges)
    addrs = [w.ra for w in waiters if w.ra]
    locs = sym.lookup(addrs) if addrs else {}
    lines = []
    for w in sorted(waiters, key=lambda w: w.tid):
        holds = ", ".join(object_label(trace, o, objects) for o in sorted(by_thread.get(w.tid, [])))
        where = locs[w.ra].short() if w.ra in locs else "?"
        what = f"{kind_name(w.kind)} on {object_label(trace, w.obj, objects)}"
        owners = held.get(w.obj, {})
        owner = f" (held by {', '.join(f'T{t}' for t in sorted(owners))})" if owners else ""
        lines.append(f"T{w.tid} {'holds ' + holds + ' and ' if holds else ''}waits in {what}{owner} at {where}")
    if cycle:
        parts = []
        for t in cycle:
            w = waits[t]
            mine = [o for o in by_thread.get(t, []) if any(o == waits[u].obj for u in cycle if u != t)]
            held_s = object_label(trace, mine[0], objects) if mine else "?"
            parts.append(f"T{t} holds {held_s} and waits for {object_label(trace, w.obj, objects)}")
        summary = "deadlock: " + "; ".join(parts)
    elif waiters:
        summary = "all threads blocked: " + "; ".join(
            f"T{w.tid} in {kind_name(w.kind)} on {object_label(trace, w.obj, objects)}" for w in waiters
        )
    else:
        summary = "no thread was blocked in a recorded operation"
    return BlockReport(lines, cycle, summary)


def _find_cycle(edges: dict[int, list[int]]) -> list[int]:
    """A cycle in the wait-for graph, smallest thread first, or []."""
    for start in sorted(edges):
        path, seen = [start], {start}
        node = start
        while True:
            nxt = [t for t in edges.get(node, []) if t in edges]
            if not nxt:
                break
            node = min(nxt)
            if node in seen:
                cyc = path[path.index(node):]
                i = cyc.index(min(cyc))
                return cyc[i:] + cyc[:i]
            path.append(node)
            seen.add(node)
    return []
