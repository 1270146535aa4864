"""Building hybrids: FAIL's events (and PASS's next events for the threads
FAIL cut short), ordered by a fixed beginning and a priority for the rest,
each event as soon as the model lets it happen.

Rules: events and objects are matched across the traces by det.compare.diff's
Comparison; this module never matches on its own.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from det import events as ev
from det.trace import Trace

from ..diff import Comparison, thread_first_diff
from .model import COND_WAITS, EXTENSION_STOP, ROLE, Ev, Model, State
from .result import BisectError


def load_fail(tr: Trace) -> list[Ev]:
    rows = [(e.seq, e.tid, e.idx, e.kind, e.obj, e.aux, e.result) for e in tr.events()]
    evs = [Ev(i, *r) for i, r in enumerate(rows)]
    seen: Counter[int] = Counter()
    for e in evs:
        if e.idx != seen[e.tid]:
            raise BisectError(f"{tr.path}: T{e.tid}'s events are out of order at seq {e.seq}: the trace is damaged")
        seen[e.tid] += 1
    return evs


class Scheduler:
    """Orders of the hybrid's events: a fixed beginning, then the rest by a
    priority, each event as soon as the model says it can happen."""

    def __init__(self, evs: list[Ev], model: Model) -> None:
        self.evs = evs
        self.model = model
        self.by_thread: dict[int, list[int]] = {}
        for e in evs:
            self.by_thread.setdefault(e.tid, []).append(e.pos)
        self.forced = 0   # orders in which the model saw nothing possible and took the next event anyway

    def state(self, start: list[int]) -> State | None:
        """The state after `start`, or None if the model says it cannot happen."""
        st = State(self.model)
        for p in start:
            if not st.enabled(self.evs[p]):
                return None
            st.apply(self.evs[p])
        return st

    def complete(self, start: list[int], key: Callable[[int], Any]) -> list[int]:
        """`start` (each thread's events in its own order), then every other
        event: of the threads' next events that can happen, the one with the
        smallest key."""
        evs = self.evs
        st = State(self.model)
        placed = set(start)
        for p in start:
            st.apply(evs[p])
        order = list(start)
        rest = {t: [p for p in ps if p not in placed] for t, ps in self.by_thread.items()}
        nxt = dict.fromkeys(rest, 0)
        heap = [(key(ps[0]), ps[0], t) for t, ps in rest.items() if ps]
        heapq.heapify(heap)
        waiting: list[tuple[Any, int, int]] = []
        forced = False
        while heap or waiting:
            if not heap:
                # Nothing can happen by the model (it is approximate): take
                # the first by priority; the replay judges.
                forced = True
                heap, waiting = waiting, []
                heapq.heapify(heap)
                item = heapq.heappop(heap)
            else:
                item = heapq.heappop(heap)
                if not st.enabled(evs[item[1]]):
                    waiting.append(item)
                    continue
            _, p, t = item
            st.apply(evs[p])
            order.append(p)
            nxt[t] += 1
            if nxt[t] < len(rest[t]):
                q = rest[t][nxt[t]]
                heapq.heappush(heap, (key(q), q, t))
            for w in waiting:   # the state changed: they may be possible now
                heapq.heappush(heap, w)
            waiting.clear()
        if forced:
            self.forced += 1
        return order


def inversions(order: list[int]) -> int:
    """Pairs of events ordered differently from the base order (positions are ranks in it)."""
    lo = 0
    while lo < len(order) and order[lo] == lo:
        lo += 1
    # Fenwick tree over the differing part: orders are at most a few million events.
    xs = order[lo:]
    if not xs:
        return 0
    base = min(xs)
    size = max(xs) - base + 2
    tree = [0] * size
    count = 0
    for seen, x in enumerate(xs):
        i = x - base + 1
        below = 0
        while i > 0:
            below += tree[i]
            i -= i & -i
        count += seen - below
        i = x - base + 1
        while i < size:
            tree[i] += 1
            i += i & -i
    return count


@dataclass
class Borrowed:
    """PASS's next events for threads FAIL cut short, as rows of FAIL's numbering."""

    events: list[Ev]
    rows: list[tuple[int, int, int, int, int, int, int, int]]   # per event: tid, idx, kind, obj, result, aux, site, ts
    new_objects: list[tuple[int, int, int]]   # obj, kind, address
    new_sites: list[tuple[int, int]]          # site, address
    per_thread: dict[int, int]


def borrow(c: Comparison, pt: Trace, ft: Trace, fail: list[Ev]) -> Borrowed:
    a, b = c.a, c.b
    pa, pb = a.positions(), b.positions()
    a_to_b = {oa: ob for ob, oa in c.b_obj_to_a.items()}
    fail_threads = set(b.threads)
    cand: dict[int, list[int]] = {}     # tid -> A positions to borrow
    for t in sorted(fail_threads):
        la, lb = pa.get(chr(t), []), pb.get(chr(t), [])
        if not lb or len(la) <= len(lb) or thread_first_diff(a, b, la[:len(lb)], lb) is not None:
            continue   # not cut short: B's events of it are not the beginning of A's
        take = []
        for p in la[len(lb):]:
            kind = ord(a.kinds[p])
            if ROLE.get(kind) in EXTENSION_STOP or kind in (ev.SIGNAL, ev.PREEMPT, ev.THREAD_CREATE):
                break
            take.append(p)
        if take:
            cand[t] = take
    if not cand:
        return Borrowed([], [], [], [], {})
    seqs = a.seq_at([p for ps in cand.values() for p in ps])
    sites = pt.sites()
    rows = {e.seq: (e.seq, e.tid, e.idx, e.kind, e.obj, e.result, e.aux, sites.get(e.site, 0), e.ts)
            for e in pt.events_at(seqs)}
    a_objects = {o: (k, addr) for o, (k, addr, _f) in a.objects.items()}
    next_obj = max(b.objects, default=0) + 1
    new_objects: list[tuple[int, int, int]] = []
    fail_sites = {addr: s for s, addr in b.sites.items()}
    next_site = max(b.sites, default=0) + 1
    new_sites: list[tuple[int, int]] = []

    def obj(o: int) -> int:
        nonlocal next_obj
        if o == 0:
            return 0
        if o not in a_to_b:
            kind, addr = a_objects.get(o, (0, 0))
            a_to_b[o] = next_obj
            new_objects.append((next_obj, kind, addr))
            next_obj += 1
        return a_to_b[o]

    def site(addr: int) -> int:
        nonlocal next_site
        if not addr:
            return 0
        if addr not in fail_sites:
            fail_sites[addr] = next_site
            new_sites.append((next_site, addr))
            next_site += 1
        return fail_sites[addr]

    evs: list[Ev] = []
    out_rows = []
    per_thread: dict[int, int] = {}
    pos = len(fail)
    seq_iter = iter(seqs)
    for t, ps in cand.items():
        for p in ps:
            seq = next(seq_iter)
            _, tid, idx, kind, o, result, aux, addr, ts = rows[seq]
            o2 = obj(o)
            aux2 = obj(aux) if kind in COND_WAITS or kind == ev.COND_WAKE else aux
            evs.append(Ev(pos, seq, tid, idx, kind, o2, aux2, result, a_pos=p))
            out_rows.append((tid, idx, kind, o2, result, aux2, site(addr), ts))
            per_thread[t] = per_thread.get(t, 0) + 1
            pos += 1
    return Borrowed(evs, out_rows, new_objects, new_sites, per_thread)


def trim(borrowed: Borrowed, fail: list[Ev], thread_objs: dict[int, int]) -> Borrowed:
    """Keep of each thread's borrowed events those that can run, in turn,
    after all of FAIL's (the model judges): FAIL's order, with them last,
    must stay a possible run."""
    if not borrowed.events:
        return borrowed
    st = State(Model(fail + borrowed.events, thread_objs))
    for e in fail:
        st.apply(e)
    keep: list[int] = []
    stopped: set[int] = set()
    for i, e in enumerate(borrowed.events):
        if e.tid in stopped:
            continue
        if not st.enabled(e):
            stopped.add(e.tid)
            continue
        st.apply(e)
        keep.append(i)
    n = len(fail)
    evs = []
    for new, i in enumerate(keep):
        e = borrowed.events[i]
        evs.append(Ev(n + new, e.seq, e.tid, e.idx, e.kind, e.obj, e.aux, e.result, e.a_pos))
    per: Counter[int] = Counter(e.tid for e in evs)
    used_objs = {e.obj for e in evs} | {e.aux for e in evs if e.kind in COND_WAITS or e.kind == ev.COND_WAKE}
    rows = [borrowed.rows[i] for i in keep]
    used_sites = {r[6] for r in rows}
    return Borrowed(evs, rows, [o for o in borrowed.new_objects if o[0] in used_objs],
                    [s for s in borrowed.new_sites if s[0] in used_sites], dict(per))
