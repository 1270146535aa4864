"""What a trace says about ownership: who holds which lock, who waits for
whom, and the cycle of a deadlock; and how a divergence is said (detreplay
and det's gdb commands say it with this one function).

Rules: standard library only (gdb's Python imports this module). Ownership
comes from the event roles in events.def, never from kind names.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass

from . import events as ev
from . import schema
from .constants import DET_SIG_NUMBER, DET_SIG_UNANCHORED
from .launch import signal_name
from .names import ObjectNames
from .symbols import Symbolizer
from .trace import OutOfTime, Trace, kind_name

EOWNERDEAD = 130
# Objects a thread holds (semaphores are counted, not owned).
OWNED = {"MUTEX", "RWLOCK", "SPIN", "FILE", "OMP_LOCK"}


def _of_calls(where: str) -> str:
    """The events whose call matches where (a condition on calls' kind, obj,
    aux, site), as a table expression of seq, tid, aux: the few calls are
    found first, then one pass over event_rows (the events view's window
    functions would sort every event, seconds on a million)."""
    return (f"(SELECT e.seq AS seq, e.tid AS tid, c.aux AS aux FROM event_rows e CROSS JOIN calls c "
            f"ON c.call = e.call WHERE e.call IN (SELECT call FROM calls WHERE {where}))")


def _role_lists() -> tuple[list[int], list[int], list[int], list[int]]:
    acq = [e.number for e in ev.EVENTS if e.role == "ACQUIRE" and e.objkind in OWNED]
    rel = [e.number for e in ev.EVENTS if e.role == "RELEASE" and e.objkind in OWNED]
    wait = [e.number for e in ev.EVENTS if e.role == "WAIT" and e.objkind == "COND"]
    wake = [e.number for e in ev.EVENTS if e.role == "WAKE" and e.objkind == "COND"]
    return acq, rel, wait, wake


# What is said after a divergence (race_hint) scans the trace: the
# divergence is said first, and the scan gives up after this many seconds.
HINT_SECONDS = 3.0
RACE_REASONS = ("kind", "object", "result", "extra", "stall", "outcome")


def holders(trace: Trace, upto_seq: int | None = None) -> dict[int, dict[int, int]]:
    """obj -> {thread: times held} after the events before upto_seq."""
    acq, rel, wait, wake = _role_lists()
    lim = "" if upto_seq is None else f"AND seq < {int(upto_seq)}"
    sql = f"""
    SELECT o, tid, sum(d) FROM (
        SELECT obj AS o, tid, CASE WHEN kind IN ({",".join(map(str, acq))})
                                   THEN (result = 0 OR result = {EOWNERDEAD}) ELSE -1 END AS d
          FROM {schema.EVENTS_PLAIN} WHERE kind IN ({",".join(map(str, acq + rel))}) {lim}
        UNION ALL
        SELECT aux, tid, CASE WHEN kind IN ({",".join(map(str, wait))}) THEN -1 ELSE 1 END
          FROM {schema.EVENTS_PLAIN} WHERE kind IN ({",".join(map(str, wait + wake))}) AND aux != 0 {lim}
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


def block_report(trace: Trace, waiters: list[Waiter], sym: Symbolizer, upto_seq: int | None = None,
                 names: ObjectNames | None = None) -> BlockReport:
    """Explain blocked threads: what each holds and waits for, and the cycle."""
    held = holders(trace, upto_seq)
    names = names if names is not None else ObjectNames(trace, sym)

    def label(obj: int) -> str:
        return names.label(obj) or "no object"

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
        holds = ", ".join(label(o) for o in sorted(by_thread.get(w.tid, [])))
        where = locs[w.ra].short() if w.ra in locs else "?"
        what = kind_name(w.kind) + (f" on {label(w.obj)}" if w.obj else "")
        owners = held.get(w.obj, {})
        owner = f" (held by {', '.join(f'T{t}' for t in sorted(owners))})" if owners else ""
        lines.append(f"T{w.tid} {'holds ' + holds + ' and ' if holds else ''}waits in {what}{owner} at {where}")
    if cycle:
        parts = []
        for t in cycle:
            w = waits[t]
            mine = [o for o in by_thread.get(t, []) if any(o == waits[u].obj for u in cycle if u != t)]
            held_s = label(mine[0]) if mine else "?"
            parts.append(f"T{t} holds {held_s} and waits for {label(w.obj)}")
        summary = "deadlock: " + "; ".join(parts)
    elif waiters:
        summary = "all threads blocked: " + "; ".join(
            f"T{w.tid} in {kind_name(w.kind)}" + (f" on {label(w.obj)}" if w.obj else "") for w in waiters
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


DIVERGENCE_REASONS = {1: "kind", 2: "object", 3: "result", 4: "extra", 5: "thread"}


def describe_divergence(names: ObjectNames, div: dict[str, int], what: str) -> str:
    """One line for a replay's divergence record (det_divergence in shm.h, as a
    dict of its fields) and the runtime's text about it."""

    def obj(o: int, addr: int = 0) -> str:
        return names.label(o) if o else names.at(addr)

    loc = names.sym.one(div["ra"]).short() if div["ra"] else "?"
    t = div["thread"]
    if div["seq"] == 2**64 - 1:
        at = f"after T{t}'s last recorded event"
    else:
        at = f"divergence at event {div['seq']} (T{t})"
    reason = DIVERGENCE_REASONS.get(div["reason"], "?")
    want = f"{kind_name(div['want_kind'])}({obj(div['want_obj'])})"
    got = f"{kind_name(div['got_kind'])}({obj(div['got_obj'], div['got_addr'])})"
    if reason == "object" and not div["want_obj"] and not div["got_obj"] and not div["got_addr"] and what:
        # an input: the objects are its file descriptor or clock, which only the text names
        return f"{at}: {kind_name(div['got_kind'])} at {loc}: {what}"
    if reason in ("kind", "object"):
        return f"{at}: recorded {want}, got {got} at {loc}"
    if reason == "result":
        return f"{at}: {want} at {loc}: {what}"
    return f"{at}: {what} ({got} at {loc})"


def held_at_end(trace: Trace, names: ObjectNames, label: Callable[[int], str] | None = None) -> list[str]:
    """`T1 holds mutex 4 (lock_b), taken at x.c:20 (withdraw)` for every lock
    a thread held when the recording ended (where the program failed: two
    threads inside critical sections of one variable under two locks is a
    race that a default-mode recording does not replay). label: how to name
    an object (detdiff's numbering), else names.label."""
    label = label or names.label
    out = []
    for obj, ts in sorted(holders(trace).items()):
        for tid in sorted(ts):
            ra = trace.q1(f"SELECT s.address FROM {schema.EVENTS_PLAIN} e JOIN sites s ON s.site = e.site "
                          "WHERE e.tid = ? AND e.obj = ? ORDER BY e.seq DESC LIMIT 1", (tid, obj))
            at = f", taken at {names.sym.one(ra).long()}" if ra else ""
            out.append((tid, obj, f"T{tid} holds {label(obj)}{at}"))
    return [text for _, _, text in sorted(out)]


def preemption_hint(trace: Trace) -> list[str]:
    """A strict recording's watchdog preemptions: a thread ran without any
    event for the watchdog's time (a busy-wait det does not see) and lost
    its turn there, a point its replay cannot make exact."""
    seqs = [seq for (seq,) in trace.q(f"SELECT seq FROM {_of_calls('kind = ?')} ORDER BY seq", (ev.PREEMPT,))]
    if not seqs:
        return []
    at = ", ".join(str(s) for s in seqs[:5]) + (", ..." if len(seqs) > 5 else "")
    return [f"the recording has {len(seqs)} watchdog preemption(s) (event {at}): a thread ran without any event "
            "until the watchdog took its turn (a busy-wait det does not see), and strict replay is not exact from "
            "there; build the program with det-cc (docs/det-cc.md) to make such points exact"]


def cancel_hint(trace: Trace) -> list[str]:
    """Threads a pthread_cancel ended where det does not see (asynchronously,
    or at a cancellation point inside libc): replay cannot end them at the
    same point."""
    rows = trace.q(f"SELECT tid, seq FROM {_of_calls('kind = ? AND aux = ?')} ORDER BY seq",
                   (ev.THREAD_CANCELED, ev.AUX_THREAD_CANCELED_ELSEWHERE))
    if not rows:
        return []
    who = ", ".join(f"T{tid} (event {seq})" for tid, seq in rows[:5]) + (", ..." if len(rows) > 5 else "")
    return [f"pthread_cancel ended {who} where det does not see (asynchronously, or at a cancellation point "
            "inside a libc call det does not wrap): replay sends that request for real once the thread has done "
            "its events before it, and where it acts then is timing, so the replay is not exact from there"]


def race_hint(trace: Trace, names: ObjectNames, reason: str, what: str = "", seq: int | None = None,
              seconds: float | None = None, atomics: int = 0) -> list[str]:
    """What detreplay says when a default-mode recording does not replay in
    a way that has the shape of a data race: same program, same inputs, same
    schedule of events, another path taken (another call, object or result,
    a thread stuck, or every event replayed and another outcome). Nothing for
    a strict or logical trace (they replay races), or when det named the
    cause itself (a changed file, a program that sends other bytes).
    reason: one of RACE_REASONS, else nothing is said. A strict recording
    with watchdog preemptions gets the one line that says they are where
    its replay is not exact; so does a thread canceled where det does not
    see it. The data-race line needs two threads of one process by the
    divergence (seq; None: the end): one thread alone has no race. seconds
    bounds the scan: past it, one line says the hint was not looked for.
    atomics: the program's own atomic instructions the recording did not
    see (det.check.quick.atomics_unseen): the race line names them."""
    if seconds is None:
        return _race_hint(trace, names, reason, what, seq, atomics)
    try:
        with trace.deadline(seconds):
            return _race_hint(trace, names, reason, what, seq, atomics)
    except OutOfTime:
        return [f"(det stopped looking for the cause in the trace after {seconds:g} s; "
                "`detrec --strict` replays data races exactly)"]


def threads_together(trace: Trace, seq: int | None = None) -> bool:
    """Whether some process had two threads by event seq (None: ever)."""
    lim = "" if seq is None else f"WHERE tid = 0 OR create_seq < {int(seq)}"
    return bool(trace.q1(f"SELECT count(*) FROM (SELECT process FROM threads {lim} GROUP BY process "
                         "HAVING count(*) > 1)"))


def _race_hint(trace: Trace, names: ObjectNames, reason: str, what: str, seq: int | None,
               atomics: int = 0) -> list[str]:
    if reason not in RACE_REASONS or "changed since recording" in what:
        return []
    if canceled := cancel_hint(trace):
        return canceled
    if trace.meta.get("mode") == "strict":
        return preemption_hint(trace)
    if trace.meta.get("mode") != "record":
        return []
    unanchored = trace.q(f"SELECT aux & ?, count(*) FROM {_of_calls('kind = ? AND aux & ?')} GROUP BY 1 ORDER BY 1",
                         (DET_SIG_NUMBER, ev.SIGNAL, DET_SIG_UNANCHORED))
    if unanchored:
        sigs = ", ".join(signal_name(n) + (f" x{c}" if c > 1 else "") for n, c in unanchored)
        return [f"a signal came while its thread made no event ({sigs}: a loop waiting for a handler's flag, "
                "like one that computes until alarm(1) fires): replay delivers it near that point, not at it, so "
                "what the thread had done by then (a count, a partial result) can differ from the recording"]
    if not threads_together(trace, seq):
        return []
    argv = shlex.join(trace.meta.get("argv") or ["PROGRAM"])
    lines = ["the recording was made in the default mode, which replays the order of det's events but not what "
             "threads do between them: this is most likely a data race (memory written under two different locks, "
             "or none) that took the replay another way with the same schedule and inputs. To replay the failure "
             f"exactly, record it in strict mode: detrec --strict --until-fail 500 -o {trace.path.name} -- {argv}"]
    if atomics:
        # (nginx's thread pool: tasks handed over on a list under an atomic
        # spinlock; with its compare-exchange an event, default replay holds)
        lines[0] += (f"; its code has {atomics} atomic instruction{'s' if atomics > 1 else ''} det did not see "
                     "(a spinlock or a lock-free hand-off between threads races the same way; it was recorded "
                     "with --no-patch-atomics): recorded without it they are events that default and relaxed "
                     f"replay order: detrec -o {trace.path.name} -- {argv}")
    try:
        held = held_at_end(trace, names)
    except OutOfTime:  # the longest scan: the hint stands without it
        return lines
    if held:
        lines.append("when the recording ended: " + "; ".join(held))
    return lines
