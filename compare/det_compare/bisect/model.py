"""The events of a hybrid schedule and a model of the pthread objects that
says whether an event could happen next, as recorded.

Rules: the model only chooses orders (det.compare.bisect.hybrid); replays decide.
Ownership and waits come from the kinds in events.def, never from names.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from det import events as ev

# Scheduling points of strict mode: they end a thread's code segment, but
# are not calls of the program.
SCHEDULING = {ev.BLOCK, ev.PREEMPT}

MUTEX_ACQ = {ev.MUTEX_LOCK, ev.MUTEX_TRYLOCK, ev.MUTEX_TIMEDLOCK, ev.MUTEX_CLOCKLOCK, ev.SPIN_LOCK,
             ev.SPIN_TRYLOCK, ev.FILE_LOCK, ev.OMP_LOCK, ev.OMP_TESTLOCK}
MUTEX_REL = {ev.MUTEX_UNLOCK, ev.SPIN_UNLOCK, ev.FILE_UNLOCK, ev.OMP_UNLOCK}
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
SYNC_OBJECTS = {"THREAD", "MUTEX", "COND", "RWLOCK", "BARRIER", "SEM", "SPIN", "ONCE", "OMP_LOCK"}


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

    def copy(self) -> State:
        c = State.__new__(State)
        c.m = self.m
        c.owner = {o: list(h) for o, h in self.owner.items()}
        c.writer = dict(self.writer)
        c.readers = {o: Counter(r) for o, r in self.readers.items()}
        c.sem = dict(self.sem)
        c.arrived = Counter(self.arrived)
        c.round = dict(self.round)
        c.signals = Counter(self.signals)
        c.waiting = dict(self.waiting)
        c.created = set(self.created)
        c.creates = self.creates
        c.exited = set(self.exited)
        c.once_started = dict(self.once_started)
        c.once_done = set(self.once_done)
        return c

    def _free_for(self, obj: int, tid: int) -> bool:
        o = self.owner.get(obj)
        return o is None or o[0] == tid

    def enabled(self, e: Ev) -> bool:
        k, o, t = e.kind, e.obj, e.tid
        ok = e.result == 0
        if k in MUTEX_ACQ:
            return self._free_for(o, t) if ok else not self._free_for(o, t)
        if k in (ev.STDIO_WRITE, ev.STDIO_READ):
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
