"""The search: candidate pairs of B's events (one object's accesses by two
threads, turns taken from another thread), nearest the failure first, each
replayed as B with only that pair swapped, within a budget of 10 replays;
a pair only when its swap passed, else one line saying why none does.

Rules: every verdict comes from a real replay (det.compare.bisect.runner); the
object model (det.compare.bisect.model) only proposes orders.
"""

from __future__ import annotations

import os
import tempfile
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from det import events as ev
from det.constants import DET_EXIT_STOPPED
from det.outpath import check_output_dir
from det.trace import Trace
from det.trust import check_owner

from ..diff import Comparison, DiffError, EventRef, thread_first_diff
from ..difftext import plural
from .hybrid import Borrowed, Scheduler, borrow, inversions, load_fail, trim
from .model import JOINS, MUTEX_ACQ, MUTEX_REL, OBJKIND, RD_ACQ, SCHEDULING, Ev, Model, State
from .result import FAILS, IMPOSSIBLE, PASSES, STALLED, STOPPED, BisectError, BisectResult, Move, Step
from .runner import ReplaySettings, Runner, Verdict

# Events of a thread shown as its "stack" (recorded call sites).
STACK_DEPTH = 6

# Called with each schedule judged, as it is judged (dettui's progress).
Progress = Callable[[Step], None]

def _exit_status(o: dict[str, Any] | None) -> int | None:
    """What detrec and detreplay exit with for this outcome."""
    if o is None:
        return None
    if o["status"] == "timeout":
        return 124
    if o["signal"] is not None:
        return 128 + int(o["signal"])
    if o["exit_code"] is not None:
        return int(o["exit_code"])
    return DET_EXIT_STOPPED


def _check(pass_tr: Trace, fail_tr: Trace) -> int:
    """Refuse what cannot be bisected; FAIL's exit status."""
    for tr in (pass_tr, fail_tr):
        mode = tr.meta.get("mode")
        if mode != "strict":
            raise BisectError(f"{tr.path}: --bisect needs strict recordings (detrec --strict), this one was "
                              f"recorded in {mode or 'an unknown'} mode")
        if not tr.complete:
            raise BisectError(f"{tr.path}: the recording did not finish; --bisect needs complete traces")
    ps, fs = _exit_status(pass_tr.outcome()), _exit_status(fail_tr.outcome())
    if fs == 0:
        raise BisectError(f"{fail_tr.path} did not fail (exit 0): --bisect takes a passing and a failing trace, "
                          "in that order (detdiff --bisect PASS FAIL)")
    if ps != 0:
        raise BisectError(f"{pass_tr.path} did not pass (exit {ps}): --bisect takes a passing and a failing trace, "
                          "in that order (detdiff --bisect PASS FAIL)")
    assert fs is not None
    return fs


def bisect_traces(pass_path: str | os.PathLike[str], fail_path: str | os.PathLike[str], *, force: bool = False,
                  keep: str | os.PathLike[str] | None = None, stall: float | None = None,
                  command: list[str] | None = None, progress: Progress | None = None,
                  cancel: threading.Event | None = None, trust: bool = False) -> BisectResult:
    """Bisect between a passing and a failing strict trace of one program.

    force: traces whose arguments differ (as detdiff --force). keep: a
    directory to keep every replayed trace in (else a private temporary
    directory, removed). stall: seconds without an event before a replay
    counts as stalled (default: 3, or twice FAIL's run time). command: how to
    run detreplay (default: the installed one). progress: called with each
    schedule judged. cancel: when set, the replay under way is stopped and
    the bisection ends with a BisectError. Every refusal is a DetError.
    """
    if keep is not None:
        check_output_dir(keep, "hybrid traces")
    if not Path(pass_path).exists() and Path(fail_path).exists():
        # detrec --until-fail keeps a passing run only if one passed before the failure.
        raise BisectError(f"{pass_path}: no such trace; record a passing run with "
                          f"`detrec --strict -o {pass_path} -- PROGRAM ARGS...`")
    with Trace(pass_path) as pt, Trace(fail_path) as ft:
        for tr in (pt, ft):  # the hybrids are copies (ours): their source decides whom they run as
            check_owner(tr.path, tr.meta, trust)
        fail_status = _check(pt, ft)
        try:
            c = Comparison(pt, ft, force=force)
        except DiffError as e:
            raise BisectError(str(e)) from None
        notes = list(c.notes)
        if ft.meta.get("preemptions"):
            notes.append(f"{ft.path} has {ft.meta['preemptions']} watchdog preemption(s): replay is not exact "
                         "around them")
        duration = (ft.outcome() or {}).get("duration_ns", 0) / 1e9
        stall = stall if stall is not None else max(3.0, 2 * duration)
        if keep is not None:
            workdir = Path(keep)
            try:
                workdir.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as e:
                raise BisectError(f"{workdir}: {e.strerror}") from None
            return _bisect(c, pt, ft, fail_status, ReplaySettings(workdir, True, stall, command, cancel), notes,
                           progress)
        with tempfile.TemporaryDirectory(prefix="det-bisect-") as tmp:   # mode 0700
            return _bisect(c, pt, ft, fail_status, ReplaySettings(Path(tmp), False, stall, command, cancel), notes,
                           progress)


class _Search:
    """One bisection's state: the events, the model, the replays, the record of steps."""

    def __init__(self, c: Comparison, ft: Trace, fail: list[Ev], borrowed: Borrowed, fail_status: int,
                 settings: ReplaySettings, notes: list[str], progress: Progress | None) -> None:
        self.c = c
        self.fail = fail
        self.borrowed = borrowed
        self.evs = fail + borrowed.events
        self.thread_objs = {t: row["obj"] for t, row in c.b.threads.items()}
        self.model = Model(self.evs, self.thread_objs)
        self.sched = Scheduler(self.evs, self.model)
        self.run = Runner(ft, self.evs, borrowed, fail_status, settings.workdir, settings.keep, settings.stall,
                          settings.command, settings.cancel)
        self.steps: list[Step] = []
        self.notes = notes
        self.fail_status = fail_status
        self.progress = progress
        # What a moved event needs: a thread's creation, a joined thread's exit.
        self.created_at = {e.aux: e.pos for e in self.evs if e.kind == ev.THREAD_CREATE}
        exits = {e.tid: e.pos for e in self.evs if e.kind == ev.THREAD_EXIT}
        self.exit_of_obj = {o: exits[t] for t, o in self.thread_objs.items() if t in exits}

    def judge(self, order: list[int], label: str, name: str, stage: str) -> Verdict:
        v, number, repeated = self.run.judge(order, name)
        step = Step(label, stage, number, repeated, v.verdict, v.detail, v.exit_status)
        self.steps.append(step)
        if self.progress is not None:
            self.progress(step)
        return v

    def name(self, p: int) -> str:
        e = self.evs[p]
        return f"T{e.tid} #{e.idx}"

    def refs(self, positions: list[int]) -> list[EventRef]:
        """EventRefs of base positions: B's events from B, borrowed ones from A."""
        c, n = self.c, len(self.fail)
        out: list[EventRef] = []
        for p in positions:
            if p < n:
                out.append(c.refs(c.b, [p])[0])
            else:
                a_pos = self.evs[p].a_pos
                assert a_pos is not None
                out.append(c.refs(c.a, [a_pos])[0])
        return out

    def result(self, **kw: Any) -> BisectResult:
        if self.sched.forced:
            self.notes.append(f"in {self.sched.forced} schedule(s) det's object model saw no event that could run "
                              "and took the next one anyway (the replay judged it)")
        base: dict[str, Any] = dict(
            a=self.c.a.summary(), b=self.c.b.summary(), events=len(self.evs),
            borrowed={f"T{t}": k for t, k in sorted(self.borrowed.per_thread.items())},
            fail_status=self.fail_status, replays=self.run.replays, steps=self.steps, found=False, confirmed=False,
            answer="inconclusive", first=None, second=None, move=None, pass_order=None, stacks={}, notes=self.notes)
        base.update(kw)
        self.c.finish()
        if callable(base.get("message")):
            base["message"] = base["message"]()
        return BisectResult(**base)


def _bisect(c: Comparison, pt: Trace, ft: Trace, fail_status: int, settings: ReplaySettings, notes: list[str],
            progress: Progress | None) -> BisectResult:
    fail = load_fail(ft)
    thread_objs = {t: row["obj"] for t, row in c.b.threads.items()}
    borrowed = trim(borrow(c, pt, ft, fail), fail, thread_objs)
    s = _Search(c, ft, fail, borrowed, fail_status, settings, notes, progress)
    if borrowed.events:
        control = s.judge(list(range(len(s.evs))), "B as recorded, with the events borrowed from A last (control)",
                          "control", "control")
        if control.verdict != FAILS:
            # Borrowing changed B's own ending: do without.
            notes.append("with A's next events for the threads B cut short, B's order did not fail "
                         f"({control.verdict}); the bisection uses B's events alone")
            first = s
            borrowed = Borrowed([], [], [], [], {})
            s = _Search(c, ft, fail, borrowed, fail_status, settings, notes, progress)
            s.steps, s.run.replays, s.run.kept = first.steps, first.run.replays, first.run.kept
    if not borrowed.events:
        control = s.judge(list(range(len(s.evs))), "B as recorded (control)", "control", "control")
        if control.verdict != FAILS:
            raise BisectError(f"{ft.path} does not fail when replayed ({control.verdict}: {control.detail}); "
                              "nothing to bisect")
    if s.borrowed.events:
        per = sorted(s.borrowed.per_thread.items())
        whose = "its" if len(per) == 1 else "their"
        s.notes.append("B's end cut " + ", ".join(f"T{t}" for t, _ in per) + f" short: {whose} next events come "
                       "from A (" + ", ".join(f"T{t}: {k}" for t, k in per) + "), last in B's order, where B's "
                       "end cuts them off again")
    return _search(s, list(range(len(s.evs))))


# Replays one bisection may use: the control, the pairs tried, the last check.
BUDGET = 10

# Releases end an access to an object; the pair is told by the accesses
# (a lock, a wait, an arrival), never by the release after it.
RELEASES = MUTEX_REL | {ev.RWLOCK_UNLOCK}
# Not accesses: releases, and where a thread stopped (a BLOCK before a lock
# is not the lock: replay enforces the whole order after it, so moving the
# attempt alone lets nothing through).
NOT_ACCESSES = RELEASES | SCHEDULING
# Pairs whose two orders give the same state: swapping them changes nothing.
COMMUTING = (frozenset({ev.BARRIER_ARRIVE}), frozenset({ev.BARRIER_DEPART}), frozenset({ev.SEM_POST}),
             frozenset(RD_ACQ))
# Candidates the object model judges at most (one walk over B, a copy of
# the objects' state per candidate).
MODEL_CHECKS = 5000
# How far before X a turn's partners are looked for (events).
TURN_WINDOW = 64
# Other threads' accesses of the object before an event that are tried as
# its pair partner (the nearest ones).
PARTNERS = 4


@dataclass
class _Candidate:
    z: int          # runs first in B ...
    x: int          # ... and X's thread's events from Z's position up to X move before it
    kind: str       # "object": Z and X use one object; "turn": X's thread took the turn from Z's
    a_same: bool    # A has both and runs them in B's order too
    a_reversed: bool = False   # A has both and runs X first: A's order is the swap
    nearer: list[int] = field(default_factory=list)   # Z's thread's accesses between Z and X, nearest first
    order: list[int] = field(default_factory=list)


def _matched_a(s: _Search) -> tuple[dict[int, int], set[int]]:
    """Base position -> A's position of the same operation (det.compare.diff's
    matching: same thread, same index, up to the thread's first difference);
    and where each thread first does something else than in A (that event
    and the one before it: the segment whose code took the other way)."""
    c = s.c
    pa, pb = c.a.positions(), c.b.positions()
    out: dict[int, int] = {}
    diverged: set[int] = set()
    for t, lb in pb.items():
        la = pa.get(t, [])
        d = thread_first_diff(c.a, c.b, la, lb)
        n = min(len(la), len(lb)) if d is None else d
        for i in range(n):
            out[lb[i]] = la[i]
        if d is not None and d < len(lb):
            diverged.update(lb[max(0, d - 1):d + 1])
    for e in s.evs:
        if e.a_pos is not None:
            out[e.pos] = e.a_pos
    return out, diverged


def _candidates(s: _Search) -> list[_Candidate]:
    """The pairs to try, in order: accesses of one object by two threads
    (each event with the last few other threads' accesses before it) and
    turns (a code segment against the next one of each other thread), ranked
    below. A pair whose two events commute is not a candidate."""
    evs = s.evs
    a_of, diverged = _matched_a(s)
    per_obj: dict[int, list[int]] = {}
    found: dict[tuple[int, int], _Candidate] = {}

    def add(z: int, x: int, kind: str) -> None:
        if (z, x) in found:
            return
        if any(evs[z].kind in group and evs[x].kind in group for group in COMMUTING):
            return
        az, ax = a_of.get(z), a_of.get(x)
        both = az is not None and ax is not None
        found[(z, x)] = _Candidate(z, x, kind, both and az < ax, both and ax < az)

    for e in evs:
        # A barrier orders every thread against every other one at once: an
        # arrival and a departure of two rounds are not a race.
        if e.obj and e.kind not in NOT_ACCESSES and OBJKIND.get(e.kind) != "BARRIER":
            per_obj.setdefault(e.obj, []).append(e.pos)
    # X is its thread's first access of the object after Z (a later one
    # would move that first access over Z too), and Z is the farthest of the
    # last few accesses of one other thread before X: one replay tries X
    # before all of them; when it passes, the search narrows Z down to the
    # nearest one that still does (_narrow_z).
    for ps in per_obj.values():
        for i, x in enumerate(ps):
            if i == 0 or evs[ps[i - 1]].tid == evs[x].tid:
                continue
            other = evs[ps[i - 1]].tid
            zs: list[int] = []
            for z in reversed(ps[max(0, i - 64):i]):
                if evs[z].tid != other or len(zs) == PARTNERS:
                    break
                zs.append(z)
            add(zs[-1], x, "object")
            if (zs[-1], x) in found:
                found[(zs[-1], x)].nearer = zs[:-1]
    # Turns: X's code segment (it runs in X's turn, up to X) against the
    # latest segment of each other thread before it (a thread's start
    # excepted: no code of the thread runs before it), the nearest first.
    # A thread's exit, a stop or a preemption ends a segment too.
    # Only adjacent segments: X is also its thread's first segment after Z.
    for x in range(len(evs)):
        if evs[x].kind == ev.THREAD_START:
            continue
        seen = {evs[x].tid}
        mine_between = False   # an event of X's thread (a start excepted) between Z and X
        for z in range(x - 1, max(-1, x - TURN_WINDOW), -1):
            t = evs[z].tid
            if t == evs[x].tid:
                mine_between = mine_between or evs[z].kind != ev.THREAD_START
                continue
            if t in seen:
                continue
            seen.add(t)
            if evs[z].kind != ev.THREAD_START and not mine_between:
                add(z, x, "turn")
            if len(seen) > PARTNERS:
                break
    by_thread = s.sched.by_thread

    def rank(k: _Candidate) -> tuple[int, int, int]:
        mine = by_thread[evs[k.x].tid]
        block = bisect_right(mine, k.x) - bisect_left(mine, k.z)
        cost = block * max(1, k.x - k.z + 1 - block)
        return (-k.x, cost, -k.z)

    # Queues taken in turn, so that no clue starves the others: object pairs
    # A runs the other way round (A passed: its order is the swap); pairs
    # whose Z is where its thread first went another way than in A; the
    # other object pairs; the other turns. (A pair A runs as B does is no
    # less likely: A may pass by another difference.)
    queues: list[list[_Candidate]] = [[], [], [], []]
    for k in found.values():
        if k.kind == "object" and k.a_reversed:
            queues[0].append(k)
        elif k.z in diverged:
            queues[1].append(k)
        else:
            queues[2 if k.kind == "object" else 3].append(k)
    for q in queues:
        q.sort(key=rank, reverse=True)   # popped from the end: nearest first
    out: list[_Candidate] = []
    while any(queues):
        for q in (queues[2], queues[0], queues[2], queues[1], queues[3]):   # plain object pairs twice a round
            if q:
                out.append(q.pop())
    return out


def _block(s: _Search, z: int, x: int) -> list[int]:
    """What moves before Z: X and, from Z's position on, the events X needs
    (its thread's earlier ones; for a thread's start, its creation; for a
    join, the joined thread's exit; each with what it needs in turn), in B's
    order. Empty when X needs an event of Z's thread after Z."""
    evs, by_thread = s.evs, s.sched.by_thread
    need: set[int] = set()
    todo = [x]
    while todo:
        p = todo.pop()
        if p < z or p in need:
            continue
        e = evs[p]
        if e.tid == evs[z].tid:
            return []
        need.add(p)
        mine = by_thread[e.tid]
        i = bisect_left(mine, p)
        if i > 0:
            todo.append(mine[i - 1])
        if e.kind == ev.THREAD_START and e.tid in s.created_at:
            todo.append(s.created_at[e.tid])
        elif e.kind in JOINS and e.result == 0 and e.obj in s.exit_of_obj:
            todo.append(s.exit_of_obj[e.obj])
    return sorted(need)


def _search(s: _Search, base: list[int]) -> BisectResult:
    """Try the candidate pairs nearest-first, each as B with only that pair
    swapped (X's block moved before Z, the rest in B's order as far as the
    objects allow), until one passes or the budget is spent; then, with the
    last replay, whether any order of B's events passes (A's order laid over
    them) tells why no single pair does."""
    if s.fail_status == 124:
        cycle = _deadlock(s)
        if cycle:
            return _deadlocked(s, cycle)
    cands = _candidates(s)
    possible = _possible(s, cands[:MODEL_CHECKS])
    tried: list[tuple[_Candidate, Verdict]] = []
    examined = 0
    for i, k in enumerate(cands[:MODEL_CHECKS]):
        if s.run.replays >= BUDGET - 1:
            break
        examined += 1
        if i not in possible:
            continue   # the objects rule this swap out: no replay spent on it
        k.order = s.sched.complete(base[:k.z] + _block(s, k.z, k.x), lambda p: p)
        v = s.judge(k.order, _move_label(s, k), f"pair-{k.z}-{k.x}", "move")
        tried.append((k, v))
        if v.verdict in PASSES:
            return _answer(s, *_shrink(s, base, *_narrow_z(s, base, k, v)))
    return _no_pair(s, len(cands), examined, tried)


def _other_pairs(s: _Search, k: _Candidate, moved: list[int]) -> bool:
    """Whether moving X's block before Z also reorders a third thread's
    access of an object the block uses: then the swap is more than one pair."""
    evs = s.evs
    objs = {evs[p].obj for p in moved if evs[p].obj and evs[p].kind not in SCHEDULING}
    inside = set(moved)
    zt = evs[k.z].tid
    return any(evs[p].obj in objs and evs[p].tid != zt and evs[p].kind not in SCHEDULING
               for p in range(k.z, k.x) if p not in inside)


def _possible(s: _Search, cands: list[_Candidate]) -> set[int]:
    """The candidates whose swap the object model allows: B's events up to Z,
    then X's block. One walk over B, with a copy of the state at each Z."""
    at: dict[int, list[int]] = {}
    for i, k in enumerate(cands):
        at.setdefault(k.z, []).append(i)
    out: set[int] = set()
    st = State(s.model)
    for p in range(max(at, default=-1) + 1):
        for i in at.get(p, ()):
            moved = _block(s, cands[i].z, cands[i].x)
            if not moved or _other_pairs(s, cands[i], moved):
                continue
            trial = st.copy()
            for q in moved:
                if not trial.enabled(s.evs[q]):
                    break
                trial.apply(s.evs[q])
            else:
                out.add(i)
        e = s.evs[p]
        if not st.enabled(e):
            # The model cannot follow B itself from here on (it is
            # approximate): the replays judge the rest.
            out.update(i for i, k in enumerate(cands)
                       if k.z > p and (moved := _block(s, k.z, k.x)) and not _other_pairs(s, k, moved))
            break
        st.apply(e)
    return out


def _deadlock(s: _Search) -> list[tuple[int, int, int]]:
    """B's end as a wait-for cycle: (blocked thread's last event, the object it
    waits for, the holder's acquisition of it) per thread of the cycle; empty
    when B's end is no such cycle."""
    st = s.sched.state([e.pos for e in s.fail])
    if st is None:
        return []
    last = {t: ps[-1] for t, ps in s.sched.by_thread.items() if ps[-1] < len(s.fail)}
    waits: dict[int, tuple[int, int]] = {}    # tid -> (its BLOCK, holder)
    for t, p in last.items():
        e = s.evs[p]
        holder = st.owner.get(e.obj)
        if e.kind == ev.BLOCK and holder is not None and holder[0] != t:
            waits[t] = (p, holder[0])
    for start in waits:
        seen, t = [], start
        while t in waits and t not in seen:
            seen.append(t)
            t = waits[t][1]
        if t == start:
            out = []
            for u in seen:
                block, holder = waits[u]
                o = s.evs[block].obj
                took = max(p for p in s.sched.by_thread[holder] if s.evs[p].obj == o and s.evs[p].kind in MUTEX_ACQ)
                out.append((block, o, took))
            return out
    return []


def _deadlocked(s: _Search, cycle: list[tuple[int, int, int]]) -> BisectResult:
    """B ends in a deadlock: no swap of B's own events avoids it (the order
    that does needs a lock B never took, and replay enforces the rest)."""
    block, _o, took = cycle[0]
    refs = s.refs([took, block])
    waits = s.refs([b for b, _, _ in cycle])

    def message() -> str:
        who = ", ".join(f"T{w.tid} waits for {w.object}" + (f" ({w.name})" if w.name else "") for w in waits)
        z, x = refs
        return (f"no single pair flips it: B ends in a deadlock ({who}, each held by the next); the order that "
                f"avoids it needs a lock B never took, which no swap of B's events replays; closest candidate: "
                f"T{x.tid}'s attempt at {x.location} before T{z.tid} #{z.idx} ({z.kind} at {z.location})")

    return s.result(answer="none", closest=refs, message=message)


def _narrow_z(s: _Search, base: list[int], k: _Candidate, v: Verdict) -> tuple[_Candidate, Verdict]:
    """X moved before the farthest of Z's thread's accesses passed: the
    nearest of them before which it still passes (binary search, within the
    budget) is the pair's first event."""
    zs = [*k.nearer, k.z]          # nearest first; moving before zs[-1] passes
    lo, hi = -1, len(zs) - 1       # before zs[lo] (lo = -1: nowhere, B) fails; before zs[hi] passes
    best = (k, v)
    while hi - lo > 1 and s.run.replays < BUDGET:
        mid = (lo + hi) // 2
        c = _Candidate(zs[mid], k.x, k.kind, k.a_same, k.a_reversed)
        moved = _block(s, c.z, c.x)
        if not moved or s.sched.state(base[:c.z] + moved) is None:
            lo = mid
            continue
        c.order = s.sched.complete(base[:c.z] + moved, lambda p: p)
        w = s.judge(c.order, _move_label(s, c), f"pair-{c.z}-{c.x}", "move")
        if w.verdict in PASSES:
            hi, best = mid, (c, w)
        else:
            lo = mid
    return best


def _shrink(s: _Search, base: list[int], k: _Candidate, v: Verdict) -> tuple[_Candidate, Verdict]:
    """A swap that passes, with X's block cut to the shortest beginning that
    still passes (binary search, within the budget): the pair's second event
    is the earliest access of the object (Z's, for an object pair) by X's
    thread that must run before Z."""
    z = s.evs[k.z]

    def access(p: int) -> bool:
        e = s.evs[p]
        return e.kind not in NOT_ACCESSES and (k.kind != "object" or e.obj == z.obj)

    block = [p for p in _block(s, k.z, k.x) if access(p)]
    lo, hi = -1, len(block) - 1       # moving block[:lo+1] fails (nothing moved: B), block[:hi+1] passes
    best = (k, v)
    while hi - lo > 1 and s.run.replays < BUDGET:
        mid = (lo + hi) // 2
        c = _Candidate(k.z, block[mid], k.kind, k.a_same)
        moved = _block(s, c.z, c.x)
        start = base[:c.z] + moved
        if not moved or s.sched.state(start) is None:
            lo = mid      # cannot happen: take it for the side that does not pass
            continue
        c.order = s.sched.complete(start, lambda p: p)
        w = s.judge(c.order, _move_label(s, c), f"pair-{c.z}-{c.x}", "move")
        if w.verdict in PASSES:
            hi, best = mid, (c, w)
        else:
            lo = mid
    return best


def _move_label(s: _Search, k: _Candidate) -> str:
    moved = _block(s, k.z, k.x)
    runs: dict[int, list[int]] = {}
    for p in moved:
        runs.setdefault(s.evs[p].tid, []).append(s.evs[p].idx)
    what = " and ".join(f"T{t} #{ix[0]}" + (f"..#{ix[-1]}" if len(ix) > 1 else "") for t, ix in runs.items())
    return f"B with {what} moved before {s.name(k.z)}"


def _stacks(s: _Search, refs: list[tuple[int, EventRef]]) -> dict[str, list[EventRef]]:
    out = {}
    for e_pos, ref in refs:
        upto = [p for p in s.sched.by_thread[ref.tid]
                if p <= e_pos and (s.evs[p].kind not in SCHEDULING or p == e_pos)]
        out[f"T{ref.tid}"] = s.refs(upto[-STACK_DEPTH:])
    return out


def _answer(s: _Search, k: _Candidate, v: Verdict) -> BisectResult:
    moved = _block(s, k.z, k.x)
    refs = s.refs(moved + [k.z])
    first, second = s.refs([k.z, k.x])
    over = [p for p in range(k.z, k.x) if s.evs[p].tid != s.evs[k.x].tid]
    move = Move(label=_move_label(s, k), moved=refs[:-1], direction="before", anchor=refs[-1], jumped=len(over),
                pairs_reordered=inversions(k.order), verdict=v.verdict, detail=v.detail)
    return s.result(found=True, confirmed=True, answer="pair", first=first, second=second, move=move,
                    pass_order=_pass_order(s, k.z, k.x), stacks=_stacks(s, [(k.z, first), (k.x, second)]),
                    message=lambda: (f"B passes when T{second.tid} #{second.idx} ({second.kind} at "
                                     f"{second.location}) runs before T{first.tid} #{first.idx} ({first.kind} at "
                                     f"{first.location}); as recorded, it fails"))


def _no_pair(s: _Search, candidates: int, examined: int, tried: list[tuple[_Candidate, Verdict]]) -> BisectResult:
    """No pair tried flips it: one line saying why, with the closest candidate."""
    # The closest: the nearest object pair tried, else the nearest turn.
    closest = next((t for t in tried if t[0].kind == "object"), tried[0] if tried else None)
    refs = s.refs([closest[0].z, closest[0].x]) if closest else []
    ruled_out = examined - len(tried)

    def near() -> str:
        if closest is None:
            return ""
        (_k, v), (z, x) = closest, refs
        return (f"; closest candidate: T{x.tid} #{x.idx} ({x.kind} at {x.location}) before T{z.tid} #{z.idx} "
                f"({z.kind} at {z.location}), which {_short_verdict(v.verdict)}")

    def none(why: str) -> BisectResult:
        return s.result(answer="none", closest=refs, message=lambda: f"no single pair flips it: {why}{near()}")

    if not candidates:
        return none("no two threads' events are ordered in a way that another order could change (the outcome is "
                    "decided within one thread, by input or by timing)")
    a_order = None
    if s.run.replays < BUDGET:
        keys = _pass_keys(s)
        a_order = s.judge(s.sched.complete([], keys.__getitem__), "B's events in A's order", "A-order", "A-order")
        if a_order.verdict == FAILS:
            hang = " (a deadlock: each thread's last events already hold what the others wait for)" \
                if s.fail_status == 124 else ""
            return none(f"B's events fail in A's order too{hang}, so which events ran decides the outcome, not "
                        "their order")
    if examined == candidates:
        swaps = (f"the {plural(len(tried), 'swap')} that could happen did not pass" if tried
                 else "none could happen by the objects as one swap")
        cannot = (f", {ruled_out} other(s) cannot happen by the objects or move more than one pair"
                  if ruled_out and tried else "")
        several = (": the flip takes several reorderings together (B's events in A's order pass)"
                   if a_order is not None and a_order.verdict in PASSES else "")
        hang = " (a deadlock: the lock that would flip it was never taken in B)" if s.fail_status == 124 else ""
        return none(f"of {plural(candidates, 'candidate pair')}, {swaps}{cannot}{several}{hang}")
    return s.result(answer="inconclusive", closest=refs, message=lambda: (
        f"the budget of {BUDGET} replays ran out with {candidates - examined} of "
        f"{plural(candidates, 'candidate pair')} untried ({len(tried)} tried, {ruled_out} ruled out){near()}"))


def _pass_keys(s: _Search) -> list[tuple[int, int]]:
    """Each event ranked by where A has the same thread's event with the same
    index (det.compare.diff's matching); borrowed events are A's own. Events A lacks
    inherit the rank of the event before them in B, or of their thread's
    previous one if later: they keep B's relative order and their thread's."""
    pass_pos = s.c.a.positions()
    keys: list[tuple[int, int]] = []
    last_of: dict[int, tuple[int, int]] = {}
    prev = (-1, -1)
    for e in s.evs:
        lst = pass_pos.get(chr(e.tid))
        if e.a_pos is not None:
            key = (e.a_pos, e.pos)
        elif lst is not None and e.idx < len(lst):
            key = (lst[e.idx], e.pos)
        else:
            key = (max(prev[0], last_of.get(e.tid, (-1, -1))[0]), e.pos)
        keys.append(key)
        prev = last_of[e.tid] = key
    return keys



def _short_verdict(verdict: str) -> str:
    if verdict == FAILS:
        return "still fails"
    if verdict in PASSES:
        return f"does not fail ({verdict})"
    return {IMPOSSIBLE: "cannot happen", STALLED: "stalls", STOPPED: "was stopped by det"}.get(
        verdict, verdict)


def _pass_order(s: _Search, p: int, q: int) -> str:
    """How A orders the same two operations, if it has them."""
    c = s.c
    pa, pb = c.a.positions(), c.b.positions()
    where: list[int] = []
    for pos in (p, q):
        e = s.evs[pos]
        if e.a_pos is not None:
            where.append(e.a_pos)
            continue
        la = pa.get(chr(e.tid), [])
        if e.idx >= len(la):
            return f"A has no event T{e.tid} #{e.idx}"
        qa, rb = la[e.idx], pb[chr(e.tid)][e.idx]
        if any(getattr(c.a, f)[qa] != getattr(c.b, f)[rb] for f in ("kinds", "objs", "sites_s")):
            return f"A's T{e.tid} #{e.idx} is another operation"
        where.append(qa)
    first = s.name(q) if where[1] < where[0] else s.name(p)
    return f"A has the same two operations and runs {first} first"
