"""detdiff --bisect PASS FAIL: the smallest reordering of a failing run that
makes it pass, found by replaying hybrid schedules for real.

Rules:
 - Standard library and det modules only. Events and objects are matched
   across the two traces by det.diff (thread + index in the thread; objects
   by what they are); this module never matches on its own.
 - Both traces must be complete strict recordings (detrec --strict) of one
   program, PASS passed (exit 0) and FAIL failed. In strict mode a thread's
   code between two of its events runs in the turn of the later one, so a
   total order of the events describes a whole run, data races included,
   and replay enforces it.
 - The events of a hybrid are FAIL's, plus, for a thread the failure cut
   short (FAIL's events of it are the beginning of PASS's), its next events
   from PASS, up to its first output, join, thread creation, input or
   signal, as far as they could run after FAIL's end. In FAIL's own order
   they come last, where FAIL's end cuts them off.
 - Every verdict comes from a real replay: a hybrid is a copy of FAIL (an
   SQLite file, mode 0600, in a private temporary directory) with its events
   renumbered (and PASS's extra events added), replayed by the real
   detreplay. It "fails" when detreplay says the outcome matches FAIL's;
   anything else does not fail, and the report says what happened (another
   path, a call that could not return what was recorded, another outcome, a
   stall). The same order is never replayed twice.
 - Hybrids are built to be possible: a model of the pthread objects (mutex
   owners, rwlocks, barrier rounds, semaphore counts, thread creation order,
   joins, once, condition signals) lets an event run only when the call
   could return what was recorded. The model only chooses orders; replays
   decide.
 - Narrowing, each step a binary search over replays:
   1. H_k = the first k events in FAIL's order, the rest in PASS's order
      (PASS's rank of the same thread's same index). H_N is FAIL; the
      boundary k (H_k fails, H_{k-1} does not) fixes the beginning.
   2. G_m = H_{k-1}'s first k-1+m events, the rest in FAIL's order: G_0 is
      FAIL, the boundary m fixes the end. G_m and G_{m-1} differ in one
      choice: X (G_m) or Z (G_{m-1}) runs at that position.
   3. FAIL with only X (and its thread's events it needs) moved up to just
      before FAIL[j], for the latest j that still makes the run pass: the
      critical pair is FAIL[j] and X, confirmed against FAIL as the control.
 - "Stacks" are the recorded call sites (return addresses of the interposed
   calls) of each thread's last events, not unwound stacks.
"""

from __future__ import annotations

import heapq
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import events as ev
from .diff import Comparison, DiffError, EventRef, TraceSummary, _thread_first_diff
from .errors import DetError
from .outpath import check_output_dir
from .trace import Trace

# Events of a thread shown as its "stack" (recorded call sites).
STACK_DEPTH = 6
# Scheduling points of strict mode: they end a thread's code segment, but
# are not calls of the program.
SCHEDULING = {ev.BLOCK, ev.PREEMPT}

MUTEX_ACQ = {ev.MUTEX_LOCK, ev.MUTEX_TRYLOCK, ev.MUTEX_TIMEDLOCK, ev.MUTEX_CLOCKLOCK, ev.SPIN_LOCK,
             ev.SPIN_TRYLOCK, ev.FILE_LOCK}
MUTEX_REL = {ev.MUTEX_UNLOCK, ev.SPIN_UNLOCK, ev.FILE_UNLOCK}
COND_WAITS = {ev.COND_WAIT, ev.COND_TIMEDWAIT, ev.COND_CLOCKWAIT}
RD_ACQ = {ev.RWLOCK_RDLOCK, ev.RWLOCK_TRYRDLOCK, ev.RWLOCK_TIMEDRDLOCK, ev.RWLOCK_CLOCKRDLOCK}
WR_ACQ = {ev.RWLOCK_WRLOCK, ev.RWLOCK_TRYWRLOCK, ev.RWLOCK_TIMEDWRLOCK, ev.RWLOCK_CLOCKWRLOCK}
SEM_ACQ = {ev.SEM_WAIT, ev.SEM_TRYWAIT, ev.SEM_TIMEDWAIT, ev.SEM_CLOCKWAIT}
JOINS = {ev.THREAD_JOIN, ev.THREAD_TRYJOIN, ev.THREAD_TIMEDJOIN}
ROLE = {e.number: e.role for e in ev.EVENTS}
OBJKIND = {e.number: e.objkind for e in ev.EVENTS}
KIND_BY_NAME = {e.name.lower(): e.number for e in ev.EVENTS}
# A cut-short thread's next events from PASS stop before these: their
# effects (output, other threads, outside data) are not FAIL's to borrow.
EXTENSION_STOP = {"OUTPUT", "JOIN", "CREATE", "INPUT"}
SYNC_OBJECTS = {"THREAD", "MUTEX", "COND", "RWLOCK", "BARRIER", "SEM", "SPIN", "ONCE"}

# Verdicts of one replay.
FAILS = "fails"                   # the outcome matches FAIL's: the bug happened
ANOTHER_PATH = "another path"     # a thread did something else than its next recorded event
IMPOSSIBLE = "impossible"         # a synchronization call could not return what FAIL recorded
OTHER_OUTCOME = "other outcome"   # the recorded events, but another exit status or output
STALLED = "stalled"               # no event for too long
STOPPED = "stopped"               # det stopped the program
VERDICTS = (FAILS, ANOTHER_PATH, IMPOSSIBLE, OTHER_OUTCOME, STALLED, STOPPED)


class BisectError(DetError):
    """The traces cannot be bisected."""


# ---------------------------------------------------------------- results


@dataclass
class Step:
    """One schedule judged."""

    label: str               # what the schedule is
    stage: str               # control | H | G | move
    replay: int              # the replay that judged it (numbered from 1, as the kept files)
    repeated: bool           # the same order as that earlier replay: not replayed again
    verdict: str             # one of VERDICTS
    detail: str              # what detreplay said
    exit_status: int


@dataclass
class Move:
    """B with a few events moved: the confirmation of the pair.

    The schedule is B[:j], then X's thread's events from B[j] on up to X,
    then the rest in B's order as far as the objects allow. It is told from
    its smaller side: X's block moved before B[j], or the other events
    between B[j] and X moved after X."""

    label: str
    moved: list[EventRef]    # the events that move
    direction: str           # "before" or "after" ...
    anchor: EventRef         # ... this event
    jumped: int              # events they move over
    pairs_reordered: int     # pairs of events ordered differently from B (1: one adjacent swap)
    verdict: str
    detail: str


@dataclass
class BisectResult:
    a: TraceSummary          # PASS
    b: TraceSummary          # FAIL
    events: int              # events in the hybrids: B's, plus A's borrowed ones
    borrowed: dict[str, int]  # "T0" -> events borrowed from A for a thread B cut short
    fail_status: int         # B's exit status: what detreplay exits with when a hybrid fails
    replays: int             # real detreplay runs
    steps: list[Step]
    found: bool              # a pair was isolated
    confirmed: bool          # B with the pair swapped passes, B as recorded fails (both replayed)
    boundary: int | None     # k: H_k fails, H_{k-1} does not
    first: EventRef | None   # the critical pair in B's order: this runs first in B ...
    second: EventRef | None  # ... and running this before it makes the run pass
    move: Move | None
    pass_order: str | None   # how A orders the same two operations
    stacks: dict[str, list[EventRef]]   # "T1" -> its last events up to its critical one (recorded call sites)
    message: str
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------- events


@dataclass(frozen=True)
class Ev:
    """An event of a hybrid, in FAIL's numbering of objects."""

    pos: int                 # rank in the base order: FAIL's events, then the borrowed ones
    seq: int                 # its seq in its own trace
    tid: int
    idx: int
    kind: int
    obj: int
    aux: int
    result: int
    a_pos: int | None = None   # borrowed from PASS: its position there


def _load_fail(tr: Trace) -> list[Ev]:
    rows = tr.q("SELECT seq, tid, idx, kind, obj, aux, result FROM events ORDER BY seq")
    evs = [Ev(i, *r) for i, r in enumerate(rows)]
    seen: Counter[int] = Counter()
    for e in evs:
        if e.idx != seen[e.tid]:
            raise BisectError(f"{tr.path}: T{e.tid}'s events are out of order at seq {e.seq}: the trace is damaged")
        seen[e.tid] += 1
    return evs


class Model:
    """What the events say about their objects, for judging whether an order is possible."""

    def __init__(self, evs: list[Ev], thread_objs: dict[int, int]) -> None:
        self.thread_of_obj = {o: t for t, o in thread_objs.items()}
        self.barrier_size: dict[int, int] = {}
        self.once_inits: set[int] = set()
        self.has_exit: set[int] = set()
        self.create_order: list[int] = []
        arrivals: Counter[int] = Counter()
        sem: Counter[int] = Counter()
        sem_low: Counter[int] = Counter()
        for e in evs:
            k = e.kind
            if k == ev.BARRIER_ARRIVE:
                arrivals[e.obj] += 1
            elif k == ev.BARRIER_DEPART and e.obj not in self.barrier_size:
                # No thread arrives again before its round departs: the
                # arrivals before the first departure are one round.
                self.barrier_size[e.obj] = arrivals[e.obj]
            elif k == ev.SEM_POST:
                sem[e.obj] += 1
            elif k in SEM_ACQ and e.result == 0:
                sem[e.obj] -= 1
                sem_low[e.obj] = min(sem_low[e.obj], sem[e.obj])
            elif k == ev.ONCE_INIT:
                self.once_inits.add(e.obj)
            elif k == ev.THREAD_EXIT:
                self.has_exit.add(e.tid)
            elif k == ev.THREAD_CREATE:
                self.create_order.append(e.aux)
        # A semaphore's initial value: enough for the recorded waits.
        self.sem_init = {o: -low for o, low in sem_low.items()}


class State:
    """The objects after some events; enabled(e): could e happen next, as recorded?"""

    def __init__(self, model: Model) -> None:
        self.m = model
        self.owner: dict[int, list[int]] = {}          # mutex, spinlock, FILE -> [tid, depth]
        self.writer: dict[int, int] = {}                # rwlock -> tid
        self.readers: dict[int, Counter[int]] = {}      # rwlock -> tid -> holds
        self.sem: dict[int, int] = dict(model.sem_init)
        self.arrived: Counter[int] = Counter()
        self.round: dict[tuple[int, int], int] = {}    # (barrier, tid) -> the round it arrived in
        self.signals: Counter[int] = Counter()           # cond -> signals and broadcasts so far
        self.waiting: dict[tuple[int, int], int] = {}  # (cond, tid) -> signals when it began to wait
        self.created: set[int] = set()
        self.creates = 0
        self.exited: set[int] = set()
        self.once_started: dict[int, int] = {}
        self.once_done: set[int] = set()

    def _free_for(self, obj: int, tid: int) -> bool:
        o = self.owner.get(obj)
        return o is None or o[0] == tid

    def enabled(self, e: Ev) -> bool:
        k, o, t = e.kind, e.obj, e.tid
        ok = e.result == 0
        if k in MUTEX_ACQ:
            return self._free_for(o, t) if ok else not self._free_for(o, t)
        if k == ev.STDIO_WRITE:
            return self._free_for(o, t)
        if k == ev.COND_WAKE:
            if not self._free_for(e.aux, t):
                return False
            began = self.waiting.get((o, t))
            # A wait that returned 0 was woken by a signal after it began
            # (POSIX allows spurious wake-ups; programs rarely expect one).
            return not ok or began is None or self.signals[o] > began
        if k in RD_ACQ:
            free = self.writer.get(o, t) == t
            return free if ok else not free
        if k in WR_ACQ:
            free = self.writer.get(o, t) == t and not any(n for r, n in self.readers.get(o, {}).items() if r != t)
            return free if ok else not free
        if k in SEM_ACQ:
            return self.sem.get(o, 0) > 0 if ok else self.sem.get(o, 0) <= 0
        if k == ev.BARRIER_DEPART:
            size = self.m.barrier_size.get(o)
            return size is None or self.arrived[o] >= size * (self.round.get((o, t), 0) + 1)
        if k == ev.THREAD_CREATE:
            # Thread numbers follow creation order, in replay too.
            order = self.m.create_order
            return self.creates >= len(order) or order[self.creates] == e.aux
        if k == ev.THREAD_START:
            return t == 0 or t in self.created
        if k in JOINS:
            target = self.m.thread_of_obj.get(o)
            # A thread that never exits in these events cannot be joined.
            done = target is None or target in self.exited
            return done if ok else not done
        if k == ev.ONCE_INIT:
            return self.once_started.get(o, t) == t
        if k == ev.ONCE and e.result != 1:
            return o not in self.m.once_inits or o in self.once_done
        return True

    def apply(self, e: Ev) -> None:
        k, o, t = e.kind, e.obj, e.tid
        ok = e.result == 0
        if k in MUTEX_ACQ:
            if ok:
                h = self.owner.setdefault(o, [t, 0])
                h[0] = t
                h[1] += 1
        elif k in MUTEX_REL:
            h = self.owner.get(o)
            if h is not None:
                h[1] -= 1
                if h[1] <= 0 or h[0] != t:
                    del self.owner[o]
        elif k in COND_WAITS:
            self.owner.pop(e.aux, None)
            self.waiting[(o, t)] = self.signals[o]
        elif k == ev.COND_WAKE:
            self.owner[e.aux] = [t, 1]
            self.waiting.pop((o, t), None)
        elif k in (ev.COND_SIGNAL, ev.COND_BROADCAST):
            self.signals[o] += 1
        elif k in RD_ACQ:
            if ok:
                self.readers.setdefault(o, Counter())[t] += 1
        elif k in WR_ACQ:
            if ok:
                self.writer[o] = t
        elif k == ev.RWLOCK_UNLOCK:
            if self.writer.get(o) == t:
                del self.writer[o]
            elif self.readers.get(o, Counter())[t] > 0:
                self.readers[o][t] -= 1
        elif k in SEM_ACQ:
            if ok:
                self.sem[o] = self.sem.get(o, 0) - 1
        elif k == ev.SEM_POST:
            self.sem[o] = self.sem.get(o, 0) + 1
        elif k == ev.BARRIER_ARRIVE:
            size = self.m.barrier_size.get(o)
            self.round[(o, t)] = self.arrived[o] // size if size else 0
            self.arrived[o] += 1
        elif k == ev.THREAD_CREATE:
            self.created.add(e.aux)
            self.creates += 1
        elif k == ev.THREAD_EXIT:
            self.exited.add(t)
        elif k == ev.ONCE_INIT:
            self.once_started[o] = t
        elif k == ev.ONCE and e.result == 1:
            self.once_done.add(o)


# ---------------------------------------------------------------- schedules


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


# ---------------------------------------------------------------- borrowed events


@dataclass
class Borrowed:
    """PASS's next events for threads FAIL cut short, as rows of FAIL's numbering."""

    events: list[Ev]
    rows: list[tuple[int, int, int, int, int, int, int, int]]   # per event: tid, idx, kind, obj, result, aux, site, ts
    new_objects: list[tuple[int, int, int]]   # obj, kind, address
    new_sites: list[tuple[int, int]]          # site, address
    per_thread: dict[int, int]


def _borrow(c: Comparison, pt: Trace, ft: Trace, fail: list[Ev]) -> Borrowed:
    a, b = c.a, c.b
    pa, pb = a.positions(), b.positions()
    a_to_b = {oa: ob for ob, oa in c.b_obj_to_a.items()}
    fail_threads = set(b.threads)
    cand: dict[int, list[int]] = {}     # tid -> A positions to borrow
    for t in sorted(fail_threads):
        la, lb = pa.get(chr(t), []), pb.get(chr(t), [])
        if not lb or len(la) <= len(lb) or _thread_first_diff(a, b, la[:len(lb)], lb) is not None:
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
    rows = {r[0]: r for r in pt.q(
        "SELECT e.seq, e.tid, e.idx, e.kind, e.obj, e.result, e.aux, coalesce(s.address, 0), e.ts FROM events e "
        f"LEFT JOIN sites s ON s.site = e.site WHERE e.seq IN ({','.join('?' * len(seqs))})", tuple(seqs))}
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


def _trim(borrowed: Borrowed, fail: list[Ev], thread_objs: dict[int, int]) -> Borrowed:
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


# ---------------------------------------------------------------- replays


def detreplay_command() -> list[str]:
    """The real detreplay: the one installed beside this Python, else on PATH, else its module."""
    here = Path(sys.executable).parent / "detreplay"
    if here.exists():
        return [str(here)]
    found = shutil.which("detreplay")
    if found:
        return [found]
    return [sys.executable, "-m", "det.replay.cli"]


@dataclass
class Verdict:
    verdict: str
    detail: str
    exit_status: int


_RESULT_DIVERGENCE = re.compile(r": (\w+)\([^)]*\) at .*: the operation returned something else")


def classify(returncode: int, lines: list[str], fail_status: int) -> Verdict | None:
    """What detreplay's lines (without the `detreplay: ` prefix) say about a
    replay; None when detreplay did not replay at all."""
    text = " ".join(lines)
    key = next((ln for ln in reversed(lines) if "divergence" in ln or "outcome" in ln or "diverge" in ln
                or "det stopped" in ln or "recorded event" in ln), None)
    last = key or (lines[-1] if lines else f"detreplay exited {returncode}")
    if "outcome matches the recording" in text:
        return Verdict(FAILS if returncode == fail_status else OTHER_OUTCOME, last, returncode)
    if "replay stalled" in text:
        return Verdict(STALLED, last, returncode)
    if "the outcome differs" in text:
        return Verdict(OTHER_OUTCOME, last, returncode)
    if "det stopped the program" in text:
        return Verdict(STOPPED, last, returncode)
    m = _RESULT_DIVERGENCE.search(last)
    if m:
        # A lock, wait or join that cannot return what was recorded: the
        # order is impossible. Output or input that returns something else:
        # the program went another way.
        kind = KIND_BY_NAME.get(m.group(1))
        sync = kind is not None and OBJKIND.get(kind) in SYNC_OBJECTS
        return Verdict(IMPOSSIBLE if sync else ANOTHER_PATH, last, returncode)
    if returncode == 125 and key is not None:
        return Verdict(ANOTHER_PATH, last, returncode)
    return None


class Runner:
    """Writes orders as trace files and replays them."""

    def __init__(self, fail: Trace, evs: list[Ev], borrowed: Borrowed, fail_status: int, workdir: Path,
                 keep: bool, stall: float, command: list[str] | None = None) -> None:
        self.fail = fail
        self.evs = evs
        self.borrowed = borrowed
        self.fail_status = fail_status
        self.workdir = workdir
        self.keep = keep
        self.stall = stall
        self.command = command or detreplay_command()
        self.replays = 0
        self.seen: dict[tuple[int, ...], tuple[Verdict, int]] = {}
        self.kept: list[Path] = []

    def judge(self, order: list[int], name: str) -> tuple[Verdict, int, bool]:
        """The verdict on an order, the number of the replay that gave it, and
        whether that was an earlier replay of the same order."""
        key = tuple(order)
        if key in self.seen:
            return (*self.seen[key], True)
        self.replays += 1
        path = self.workdir / f"{self.replays:03d}-{name}.db"
        self.write(order, path)
        v = self.replay(path)
        self.seen[key] = (v, self.replays)
        if self.keep:
            self.kept.append(path)
        else:
            path.unlink(missing_ok=True)
        return v, self.replays, False

    def write(self, order: list[int], path: Path) -> None:
        """A copy of FAIL whose events run in `order` (base positions)."""
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with open(self.fail.path, "rb") as src, os.fdopen(fd, "wb") as dst:
                    fd = -1
                    shutil.copyfileobj(src, dst, 1 << 20)
            finally:
                if fd >= 0:
                    os.close(fd)
        except OSError as e:
            raise BisectError(f"cannot write {path}: {e.strerror}") from None
        n = len(self.evs) - len(self.borrowed.events)
        new_seq = [0] * len(order)
        for new, p in enumerate(order):
            new_seq[p] = new
        # FAIL's rows: old seq -> new seq, through negative values, so that no
        # two rows ever share a key while they move.
        remap = [(-1 - self.evs[p].seq, new_seq[p]) for p in range(n)]
        b = self.borrowed
        try:
            db = sqlite3.connect(path)
            with db:
                db.execute("CREATE TEMP TABLE remap(old INTEGER PRIMARY KEY, new INTEGER NOT NULL)")
                db.executemany("INSERT INTO remap(old, new) VALUES (?, ?)", remap)
                for table in ("events", "data"):
                    db.execute(f"UPDATE {table} SET seq = -1 - seq")
                    db.execute(f"UPDATE {table} SET seq = (SELECT new FROM remap WHERE old = {table}.seq)")
                db.execute("UPDATE objects SET first_seq = coalesce("
                           "(SELECT new FROM remap WHERE old = -1 - objects.first_seq), first_seq)")
                db.execute("UPDATE threads SET create_seq = coalesce("
                           "(SELECT new FROM remap WHERE old = -1 - threads.create_seq), create_seq)")
                if b.events:
                    db.executemany("INSERT INTO events(seq, tid, idx, kind, obj, result, aux, site, ts) "
                                   "VALUES (?,?,?,?,?,?,?,?,?)",
                                   [(new_seq[e.pos], *row) for e, row in zip(b.events, b.rows, strict=True)])
                    db.executemany("INSERT INTO objects(obj, kind, address, first_seq) VALUES (?,?,?,?)",
                                   [(o, k, addr, 0) for o, k, addr in b.new_objects])
                    db.execute("UPDATE objects SET first_seq = (SELECT min(seq) FROM events WHERE obj = objects.obj) "
                               f"WHERE obj IN ({','.join(str(o) for o, _, _ in b.new_objects) or '0'})")
                    db.executemany("INSERT INTO sites(site, address) VALUES (?,?)", b.new_sites)
                    db.executemany("UPDATE threads SET events = events + ? WHERE tid = ?",
                                   [(k, t) for t, k in b.per_thread.items()])
                    db.execute("UPDATE outcome SET events = (SELECT count(*) FROM events)")
            db.close()
        except sqlite3.Error as e:
            raise BisectError(f"cannot write a hybrid trace in {path.parent}: {e}") from None

    def replay(self, path: Path) -> Verdict:
        cmd = [*self.command, "--stall", f"{self.stall:g}", str(path)]
        limit = 60 + 4 * self.stall
        try:
            # Its own session: if it has to be stopped, so is the program it runs.
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 start_new_session=True)
        except OSError as e:
            raise BisectError(f"cannot run detreplay ({cmd[0]}): {e.strerror}") from None
        try:
            _, err = p.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            return Verdict(STALLED, f"detreplay did not finish in {limit:g} s", 124)
        except BaseException:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            raise
        lines = [ln.removeprefix("detreplay: ") for ln in err.decode(errors="replace").splitlines()
                 if ln.startswith("detreplay: ")]
        v = classify(p.returncode, lines, self.fail_status)
        if v is None:
            why = (f"detreplay was killed by signal {-p.returncode}" if p.returncode < 0
                   else lines[-1] if lines else f"detreplay exited {p.returncode}")
            raise BisectError(f"detreplay could not replay a hybrid trace ({path.name}): {why}")
        return v


# ---------------------------------------------------------------- the bisection


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
    return 125


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
                  command: list[str] | None = None) -> BisectResult:
    """Bisect between a passing and a failing strict trace of one program.

    force: traces whose arguments differ (as detdiff --force). keep: a
    directory to keep every replayed trace in (else a private temporary
    directory, removed). stall: seconds without an event before a replay
    counts as stalled (default: 3, or twice FAIL's run time). command: how to
    run detreplay (default: the installed one). Every refusal is a DetError.
    """
    if keep is not None:
        check_output_dir(keep, "hybrid traces")
    if not Path(pass_path).exists() and Path(fail_path).exists():
        # detrec --until-fail keeps a passing run only if one passed before the failure.
        raise BisectError(f"{pass_path}: no such trace; record a passing run with "
                          f"`detrec --strict -o {pass_path} -- PROGRAM ARGS...`")
    with Trace(pass_path) as pt, Trace(fail_path) as ft:
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
            return _bisect(c, pt, ft, fail_status, workdir, True, stall, command, notes)
        with tempfile.TemporaryDirectory(prefix="det-bisect-") as tmp:   # mode 0700
            return _bisect(c, pt, ft, fail_status, Path(tmp), False, stall, command, notes)


class _Search:
    """One bisection's state: the events, the model, the replays, the record of steps."""

    def __init__(self, c: Comparison, ft: Trace, fail: list[Ev], borrowed: Borrowed, fail_status: int,
                 workdir: Path, keep: bool, stall: float, command: list[str] | None, notes: list[str]) -> None:
        self.c = c
        self.fail = fail
        self.borrowed = borrowed
        self.evs = fail + borrowed.events
        self.thread_objs = {t: row["obj"] for t, row in c.b.threads.items()}
        self.model = Model(self.evs, self.thread_objs)
        self.sched = Scheduler(self.evs, self.model)
        self.run = Runner(ft, self.evs, borrowed, fail_status, workdir, keep, stall, command)
        self.steps: list[Step] = []
        self.notes = notes
        self.fail_status = fail_status

    def judge(self, order: list[int], label: str, name: str, stage: str) -> Verdict:
        v, number, repeated = self.run.judge(order, name)
        self.steps.append(Step(label, stage, number, repeated, v.verdict, v.detail, v.exit_status))
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
            boundary=None, first=None, second=None, move=None, pass_order=None, stacks={}, notes=self.notes)
        base.update(kw)
        self.c.finish()
        if callable(base.get("message")):
            base["message"] = base["message"]()
        return BisectResult(**base)


def _bisect(c: Comparison, pt: Trace, ft: Trace, fail_status: int, workdir: Path, keep: bool, stall: float,
            command: list[str] | None, notes: list[str]) -> BisectResult:
    fail = _load_fail(ft)
    thread_objs = {t: row["obj"] for t, row in c.b.threads.items()}
    borrowed = _trim(_borrow(c, pt, ft, fail), fail, thread_objs)
    s = _Search(c, ft, fail, borrowed, fail_status, workdir, keep, stall, command, notes)
    if borrowed.events:
        control = s.judge(list(range(len(s.evs))), "B as recorded, with the events borrowed from A last (control)",
                          "control", "control")
        if control.verdict != FAILS:
            # Borrowing changed B's own ending: do without.
            notes.append("with A's next events for the threads B cut short, B's order did not fail "
                         f"({control.verdict}); the bisection uses B's events alone")
            first = s
            borrowed = Borrowed([], [], [], [], {})
            s = _Search(c, ft, fail, borrowed, fail_status, workdir, keep, stall, command, notes)
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
    return _narrow(s, list(range(len(s.evs))))


def _narrow(s: _Search, base: list[int]) -> BisectResult:
    total = len(base)
    keys = _pass_keys(s)

    # ---- 1: how much of B's beginning does the failure need?
    def hybrid(k: int) -> list[int]:
        return s.sched.complete(base[:k], keys.__getitem__)

    h0 = hybrid(0)
    if s.judge(h0, "H_0: B's events in A's order", "H_0", "H").verdict == FAILS:
        hang = " (a deadlock: each thread's last events already hold what the others wait for)" \
            if s.fail_status == 124 else ""
        return s.result(message="B's events in A's order fail too, so A gives no boundary to find: what makes B "
                                f"fail may be which events it ran rather than their order{hang}, or A's order, laid "
                                "over B's events, races the same way (another passing recording may do)")
    lo, hi = 0, total            # H_lo does not fail, H_hi (= B) does
    orders = {0: h0, total: base}
    verdicts = {0: s.steps[-1].verdict}
    while hi - lo > 1:
        mid = (lo + hi) // 2
        orders[mid] = hybrid(mid)
        v = s.judge(orders[mid], f"H_{mid}: B's first {mid} events, the rest in A's order", f"H_{mid}", "H")
        if v.verdict == FAILS:
            hi = mid
        else:
            lo, verdicts[mid] = mid, v.verdict
    k = hi
    passing = orders[lo]
    if verdicts[lo] == IMPOSSIBLE:
        s.notes.append(f"H_{lo} does not fail because a call could not return what B recorded: det's object "
                       "model let an impossible order through, so this boundary may say little about the program")

    # ---- 2: how much of the passing hybrid's middle, with B's order after it?
    start, ys = base[:k - 1], passing[k - 1:]

    def mixed(m: int) -> list[int]:
        return s.sched.complete(start + ys[:m], lambda p: p)

    g0 = mixed(0)
    if s.judge(g0, "G_0: B's order, rebuilt by the object model", "G_0", "G").verdict != FAILS:
        s.notes.append("B's order rebuilt by det's object model does not fail; the pair is the first step's")
        return _confirm(s, base, k, k - 1, passing[k - 1])
    mlo, mhi = 0, len(ys)        # G_mlo fails, G_mhi (= the passing hybrid) does not
    gorders = {0: g0, len(ys): passing}
    while mhi - mlo > 1:
        mid = (mlo + mhi) // 2
        gorders[mid] = mixed(mid)
        v = s.judge(gorders[mid], f"G_{mid}: H_{k - 1}'s first {k - 1 + mid} events, the rest in B's order",
                    f"G_{mid}", "G")
        if v.verdict == FAILS:
            mlo = mid
        else:
            mhi = mid
    at = k - 1 + mhi - 1          # G_mhi runs X here, G_{mhi-1} runs Z
    x_pos, z_pos = gorders[mhi][at], gorders[mhi - 1][at]
    assert x_pos != z_pos and s.evs[x_pos].tid != s.evs[z_pos].tid
    return _confirm(s, base, k, z_pos, x_pos)


def _pass_keys(s: _Search) -> list[tuple[int, int]]:
    """Each event ranked by where A has the same thread's event with the same
    index (det.diff's matching); borrowed events are A's own. Events A lacks
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


def _confirm(s: _Search, base: list[int], k: int, z_pos: int, x_pos: int) -> BisectResult:
    """The pair (Z, X): B runs Z before X. Confirm it on B itself: B with X
    (and its thread's events between) moved up to just before B[j], for the
    latest j that still makes the run pass, against B as the control."""
    evs = s.evs
    x = evs[x_pos]
    mine = s.sched.by_thread[x.tid]

    def block(j: int) -> list[int]:
        return [p for p in mine if j <= p <= x_pos]

    def moved(j: int) -> list[int]:
        return s.sched.complete(base[:j] + block(j), lambda p: p)

    def sides(j: int) -> tuple[list[int], str, int, list[int]]:
        """(moved events, before/after, anchor, the events they move over)."""
        bl = block(j)
        others = [p for p in range(j, x_pos) if evs[p].tid != x.tid]
        if len(others) < len(bl) and len({evs[p].tid for p in others}) == 1:
            return others, "after", x_pos, bl
        return bl, "before", j, others

    def label(j: int) -> str:
        moved, direction, anchor, _ = sides(j)
        first, last = evs[moved[0]], evs[moved[-1]]
        what = s.name(moved[0]) if len(moved) == 1 else f"T{first.tid} #{first.idx}..#{last.idx}"
        if len({evs[p].tid for p in moved}) > 1:
            what = f"{len(moved)} events from {s.name(moved[0])} to {s.name(moved[-1])}"
        return f"B with {what} moved {direction} {s.name(anchor)}"

    move: Move | None = None
    first_pos = z_pos
    if z_pos < x_pos:
        cands = [j for j in range(z_pos, x_pos) if evs[j].tid != x.tid and s.sched.state(base[:j] + block(j))]
        if cands:
            order = moved(cands[0])
            v = s.judge(order, label(cands[0]), "move", "move")
            if v.verdict != FAILS:
                best = (cands[0], order, v)
                # Slide the block back towards its place: the latest position
                # that still makes B pass names the closest event it must pass.
                lo, hi = 0, len(cands)          # cands[lo] passes; position len(cands) stands for B, which fails
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    order = moved(cands[mid])
                    v = s.judge(order, label(cands[mid]), f"move-{cands[mid]}", "move")
                    if v.verdict == FAILS:
                        hi = mid
                    else:
                        lo = mid
                        best = (cands[mid], order, v)
                first_pos, order, v = best
                moved, direction, anchor, over = sides(first_pos)
                refs = s.refs(moved + [anchor])
                move = Move(label=label(first_pos), moved=refs[:-1], direction=direction, anchor=refs[-1],
                            jumped=len(over), pairs_reordered=inversions(order), verdict=v.verdict,
                            detail=v.detail)
    first, second = s.refs([first_pos, x_pos])
    stacks = {}
    for e_pos, ref in ((first_pos, first), (x_pos, second)):
        upto = [p for p in s.sched.by_thread[ref.tid] if p <= e_pos and (evs[p].kind not in SCHEDULING or p == e_pos)]
        stacks[f"T{ref.tid}"] = s.refs(upto[-STACK_DEPTH:])
    confirmed = move is not None

    def message() -> str:
        if confirmed:
            return (f"B passes when T{second.tid} #{second.idx} ({second.kind} at {second.location}) runs before "
                    f"T{first.tid} #{first.idx} ({first.kind} at {first.location}); as recorded, it fails")
        if z_pos > x_pos:
            return (f"the hybrids that pass and fail differ in the order of T{second.tid} #{second.idx} and "
                    f"T{first.tid} #{first.idx}, but B already runs them in the passing order: the flip needs "
                    "the other events the hybrids reorder")
        return (f"the hybrids that pass and fail differ in the order of T{second.tid} #{second.idx} and "
                f"T{first.tid} #{first.idx}, but moving that alone in B does not make it pass")

    return s.result(found=True, confirmed=confirmed, boundary=k, first=first, second=second, move=move,
                    pass_order=_pass_order(s, first_pos, x_pos), stacks=stacks, message=message)


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


# ---------------------------------------------------------------- text


def _verdict_text(verdict: str, detail: str) -> str:
    if verdict == FAILS:
        return f"fails ({detail.rsplit('outcome matches the recording: ', 1)[-1]}, as recorded)"
    return f"does not fail: {verdict} ({detail})"


def render(r: BisectResult, st: Any) -> list[str]:
    """The result as text; st is det.detdiff.Style."""
    from .detdiff import event_line, outcome_text, plural

    out: list[str] = []
    w = out.append
    width = max(len(r.a.path), len(r.b.path))
    for side, s, what in (("a", r.a, "passing"), ("b", r.b, "failing")):
        w(st.side(side, f"{side.upper()}  {s.path:<{width}}") +
          f"  {outcome_text(s):<8} ({what}) {plural(s.events, 'event')}, {plural(s.threads, 'thread')}")
    w(st.dim(f"   {' '.join(r.a.argv) or r.a.binary}"))
    w("")
    if not r.found or r.first is None or r.second is None:
        w(st.head(f"No critical pair ({plural(r.replays, 'replay')}): {r.message}."))
    else:
        w(st.head(f"The critical pair ({plural(r.replays, 'replay')}):"))
        for head, e in (("B runs first", r.first), ("then", r.second)):
            src = "" if e.side == "b" else "  (A's event: B never got there)"
            w(f"  {head:<12}  {event_line(e)}{src}")
        w(st.head(r.message[0].upper() + r.message[1:] + "."))
        if r.move is not None:
            m = r.move
            moved = (f"{plural(len(m.moved), 'event')} moved over {plural(m.jumped, 'event')}"
                     f"; {plural(m.pairs_reordered, 'pair')} of events in another order than B's")
            w(f"  {m.label} ({moved}):")
            w("      " + st.b(_verdict_text(m.verdict, m.detail)))
        control = next((s for s in r.steps if s.stage == "control" and s.verdict == FAILS), None)
        if control is not None:
            w(f"  {control.label}:")
            w("      " + st.a(_verdict_text(control.verdict, control.detail)))
        if r.pass_order:
            w(f"  {r.pass_order}.")
        if r.boundary is not None:
            w(st.dim(f"  first step's boundary: H_{r.boundary} fails, H_{r.boundary - 1} does not"))
        for tid, evs in r.stacks.items():
            w("")
            w(st.head(f"{tid}'s recent call sites") + st.dim(" (return addresses recorded with its last events, "
                                                            "not an unwound stack):"))
            for i, e in enumerate(evs):
                mark = ">" if i == len(evs) - 1 else " "
                src = "" if e.side == "b" else "  (A's event: B never got there)"
                w(f"  {mark} {event_line(e)}{src}")
    w("")
    w(st.head(f"Schedules judged ({plural(r.replays, 'replay')} of hybrid traces with the real detreplay; "
              f"{r.events} events each):"))
    for s in r.steps:
        num = f"={s.replay:<3}" if s.repeated else f"{s.replay:>3} "
        verdict = "fails" if s.verdict == FAILS else f"does not fail: {s.verdict}"
        line = f"  {num} {s.label:<62} {verdict}"
        w(st.dim(line) if s.repeated else line)
    if any(s.repeated for s in r.steps):
        w(st.dim("  (=N: the same order as replay N, not replayed again)"))
    for note in r.notes:
        w(f"note: {note}")
    return out
