"""Going back by re-execution, for `det last-write`, `det reverse-continue`
and `det reverse-step` (det_gdb/commands/).

gdb's own reverse execution needs `record full`, which does not work with
threads (nor on CPUs with AMX state). A det replay is deterministic, so the
past can be visited again: restart the replay (or resume the nearest
snapshot before the window: det_gdb.snapshots, through Session.resume; the
first run takes one at the window's start for the second), run
it without stopping to an event shortly before where the user is, and from there on to where the
user is with silent logging breakpoints (a hardware watchpoint for
last-write, copies of the user's breakpoints and watchpoints for
reverse-continue, the line starts of the current function for
reverse-step). The last logged hit is the answer; one more run stops there
(with only that hit's logger).

Rules of this file:
  - As every det_gdb module: no inferior function calls, standard library only, every
    user error one gdb.GdbError line.
  - Where the user is (the "mark") is found again exactly when det stopped
    the program at an event or at the end. A stop in the program's code is
    found again as the first time its thread, with as many events done, is
    at the same pc with the same registers and top of stack; a signal stop
    as the same signal in the same thread. When no such stop comes (a
    register or stack word differs: a heap pointer glibc placed elsewhere,
    a value another thread wrote between events), the mark is the stop of
    that thread at that pc, with as many events done, that differs in the
    fewest words (the first of those), found by one more run.
  - Logging starts at an event WINDOW events before the mark, then WINDOW
    times GROWTH more, ..., until a hit is logged or the window reaches the
    program's start: a run costs a restart and a replay without stops to
    the window, plus one breakpoint stop (a Python call, not a gdb stop)
    per logged hit.
  - A hit is named by (its thread, that thread's events done, k-th such hit
    of that thread): in a replay the code a thread runs between two of its
    events is the same every time, so the name finds the same write again
    (race-free code; strict recordings replay data races in order too).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import gdb

from det_gdb.args import Args
from det_gdb.frames import on_thread, user_frame, where
from det_gdb.session import Goal, Session, running
from det_gdb.snapshots import WINDOW

GROWTH = 32
REGS = ("rip", "rsp", "rbp", "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13",
        "r14", "r15")
TOP = 64          # bytes of stack compared at a code mark


def stop_state() -> tuple[tuple[int, ...], bytes]:
    """The selected thread's registers (REGS) and the TOP bytes at its stack pointer."""
    regs = tuple(int(gdb.newest_frame().read_register(r)) for r in REGS)
    return regs, bytes(gdb.selected_inferior().read_memory(regs[1], TOP))


@dataclass
class Mark:
    """Where the user is, so that a re-execution can stop there again."""

    seq: int                       # the position: the next event (model.end: the end)
    at_event: bool                 # det stopped the program before event seq (or at the end)
    thread: int | None = None      # a stop in the code: its det thread ...
    done: int = 0                  # ... that thread's events done
    pc: int = 0
    regs: tuple[int, ...] = ()
    top: bytes = b""
    signal: str | None = None      # a signal stop: its signal
    what: str = ""

    def near(self, num: int | None, done: int) -> bool:
        """Is the selected thread, stopped here, the mark's thread at its pc
        with as many events done?"""
        return (not self.at_event and num == self.thread and done == self.done
                and gdb.newest_frame().pc() == self.pc)

    def differs(self, regs: tuple[int, ...], top: bytes) -> int:
        """In how many register and stack words a near stop differs (0: it is the mark)."""
        return (sum(a != b for a, b in zip(regs, self.regs, strict=True))
                + sum(top[i:i + 8] != self.top[i:i + 8] for i in range(0, TOP, 8)))


@dataclass
class Hit:
    """One logged hit of a logging breakpoint."""

    order: int                # global order of logging in this run
    logger: int               # which logger
    thread: int
    done: int
    k: int                    # the k-th hit of this logger by this thread with `done` events done
    pc: int
    detail: dict = field(default_factory=dict)


class Run:
    """The state shared by the logging breakpoints of one re-execution."""

    def __init__(self, s: Session, mark: Mark, target: tuple[int, int, int, int] | None,
                 mark_k: int | None = None) -> None:
        self.s = s
        self.mark = mark
        self.target = target          # (logger, thread, done, k) to stop at, or None: log only
        self.mark_k = mark_k          # the mark is its k-th near stop (None: the exact one)
        self.hits: list[Hit] = []
        self.counts: dict[tuple[int, int, int], int] = {}
        self.reached_target: Hit | None = None
        self.reached_mark = False
        self.near: list[int] = []     # the words each stop at the mark's thread, done and pc differed in
        self.last_stop: tuple | None = None
        self.last_at_mark = False
        self.stops = 0

    def here(self) -> tuple[int | None, int]:
        num = self.s.det_num()
        if num is None:
            return None, 0
        return num, int(self.s._slots()[num]["done"])

    def at_mark(self, num: int | None, done: int) -> bool:
        """Is this stop the mark? Counted once per stop: a logger and the
        mark's breakpoint at one pc both ask."""
        if not self.mark.near(num, done):
            return False
        stop = stop_state()
        if stop == self.last_stop:
            return self.last_at_mark
        self.near.append(self.mark.differs(*stop))
        at = self.near[-1] == 0 if self.mark_k is None else len(self.near) - 1 == self.mark_k
        self.last_stop, self.last_at_mark = stop, at
        return at

    def closest(self) -> int | None:
        """Which near stop to take for the mark (the first of the fewest words)."""
        return min(range(len(self.near)), key=lambda k: (self.near[k], k)) if self.near else None

    def log(self, logger: int, num: int, done: int, detail: dict) -> bool:
        """Record a hit; True: stop here (the target)."""
        self.stops += 1
        key = (logger, num, done)
        k = self.counts[key] = self.counts.get(key, 0) + 1
        h = Hit(len(self.hits), logger, num, done, k, gdb.newest_frame().pc(), detail)
        if self.target == (logger, num, done, k):
            self.reached_target = h
            return True
        if len(self.hits) > 100000:
            del self.hits[:50000]  # only the last ones matter
        self.hits.append(h)
        return False


class Logger(gdb.Breakpoint):
    """A silent internal breakpoint or watchpoint that logs its hits in a Run."""

    def __init__(self, run: Run, number: int, spec: str, accept: Callable[[int, int], dict | None],
                 **kw) -> None:
        super().__init__(spec, internal=True, **kw)
        self.silent = True
        self.run = run
        self.number_in_run = number
        self.accept = accept

    def stop(self) -> bool:
        try:
            num, done = self.run.here()
            if num is None:
                return False
            if self.run.at_mark(num, done):
                return False  # the mark's own hit is not before the mark
            detail = self.accept(num, done)
            if detail is None:
                return False
            return self.run.log(self.number_in_run, num, done, detail)
        except gdb.error as e:
            print(f"det: cannot read the replay state at a logging breakpoint: {e}")
            return True


class MarkBreakpoint(gdb.Breakpoint):
    """Stops a re-execution where the user was, in the program's code."""

    def __init__(self, run: Run) -> None:
        super().__init__(f"*{run.mark.pc:#x}", internal=True)
        self.silent = True
        self.run = run

    def stop(self) -> bool:
        try:
            num, done = self.run.here()
            if self.run.at_mark(num, done):
                self.run.reached_mark = True
                return True
            return False
        except gdb.error:
            return False


# --- the mark ---------------------------------------------------------------------
def mark_here(s: Session, cmd: str) -> Mark:
    if not s.alive() or s.pos is None:
        raise gdb.GdbError(f"det: {cmd}: the program is not running; `det goto N` starts the replay")
    m = s.model
    pos = s.pos
    if pos.det_stop:
        return Mark(pos.seq, True, thread=pos.thread, what=m.label(pos.seq))
    num = s.stop_thread if s.stop_thread is not None else s.det_num()
    if num is None:
        raise gdb.GdbError(f"det: {cmd}: the thread gdb stopped in is not one of det's")
    th = s.gdb_thread(num)
    if th is None:
        raise gdb.GdbError(f"det: {cmd}: T{num} is not running")
    with on_thread(th):
        f = gdb.newest_frame()
        regs, top = stop_state()
        uf = user_frame()
        here = where(uf) if uf is not None else f"{f.pc():#x}"
    done = int(s._slots()[num]["done"])
    sig = s.signalled[1] if s.signalled is not None and s.signalled[0] == num else None
    return Mark(pos.seq, False, thread=num, done=done, pc=regs[0], regs=regs, top=top, signal=sig,
                what=f"T{num} in {here}" + (f" ({sig})" if sig else ""))


def begin(cmd: str, arg: str, takes_arg: bool = False) -> tuple[Session, Mark]:
    """The session and where the user is, for a reverse command."""
    s = running()
    a = Args(cmd, arg, s)
    if s.relaxed:
        # its windows and marks are positions in the recorded total order
        raise a.error("going back needs an ordered replay (start gdb without --relaxed)")
    if a and not takes_arg:
        raise a.error("takes no arguments")
    if not a and takes_arg:
        raise a.error(f"which expression? ({cmd} EXPR)")
    return s, mark_here(s, cmd)


def value_log(spec: str) -> Callable[[int, int], dict]:
    """A watchpoint logger's accept(): the old and the new value at each hit."""
    state = {"value": str(gdb.parse_and_eval(spec))}

    def accept(num: int, done: int) -> dict:
        new = str(gdb.parse_and_eval(spec))
        old, state["value"] = state["value"], new
        return {"old": old, "new": new}

    return accept


def mark_base_index(s: Session, mark: Mark) -> int:
    """Index in the global order of the last event before which logging must start."""
    m = s.model
    if mark.at_event:
        return m.index_of(mark.seq)
    if mark.done == 0:
        return 0
    last = m.thread_seq(mark.thread, mark.done - 1)
    return m.index_of(last) if last is not None else 0


def windows(s: Session, mark: Mark) -> Iterator[int | None]:
    """Event seqs at which to start logging, nearest first; None: the program's start."""
    base = mark_base_index(s, mark)
    w = WINDOW  # (det_gdb.snapshots took a snapshot there when det stopped at the mark's event)
    while True:
        i = base - w
        if i <= 0:
            yield None
            return
        yield s.model.seq_at(i)
        w *= GROWTH


# --- one re-execution ---------------------------------------------------------------------
def replay(s: Session, start: int | None, mark: Mark, make_loggers: Callable[[Run], list[gdb.Breakpoint]],
           target: tuple[int, int, int, int] | None = None, mark_k: int | None = None) -> Run:
    """Restart, run without stops to event `start` (None: the program's start),
    then to the mark (or the target hit) with the loggers; the loggers are
    deleted again."""
    run = Run(s, mark, target, mark_k)
    m = s.model
    if start is None:
        s.resume(Goal("the start", ready=True, honor=False), restart=True, silent=True)
    else:
        # a snapshot right at the window's start: the next run over this window resumes it
        s.snapshots.also_at = start
        try:
            s.resume(Goal(f"event {start}", seq=start, honor=False), restart=True, silent=True)
        finally:
            s.snapshots.also_at = None
    if not s.alive() or s.pos is None or (start is not None and not (s.pos.det_stop and s.pos.seq == start)):
        raise gdb.GdbError(f"det: the replay did not reach {m.label(start) if start is not None else 'its start'} "
                           "again")
    bps: list[gdb.Breakpoint] = []
    try:
        bps += make_loggers(run)
        if target is not None:
            # only the target's logger counts toward its name: the others
            # would stop the program for nothing
            for b in bps:
                if b.number_in_run != target[0]:
                    b.delete()
            bps = [b for b in bps if b.is_valid()]
        if not mark.at_event and mark.signal is None:
            bps.append(MarkBreakpoint(run))
        if mark.at_event and mark.seq < m.end:
            goal = Goal(mark.what, seq=mark.seq, honor=False)
        else:
            goal = Goal(mark.what, end=True, honor=False)
        s.last_event = None
        s.resume(goal, silent=True)
        ev = s.last_event
        if mark.at_event:
            run.reached_mark = bool(s.pos is not None and s.pos.det_stop and s.pos.seq == mark.seq)
        elif mark.signal is not None:
            run.reached_mark = (isinstance(ev, gdb.SignalEvent) and ev.stop_signal == mark.signal
                                and s.stop_thread == mark.thread)
    finally:
        for b in bps:
            if b.is_valid():
                b.delete()
    return run


def search(s: Session, cmd: str, mark: Mark, make_loggers: Callable[[Run], list[gdb.Breakpoint]],
           pick: Callable[[list[Hit]], Hit | None] = lambda hits: hits[-1] if hits else None
           ) -> tuple[Hit | None, int | None, dict]:
    """Log from the nearest window on until a hit is picked; then stop at it.
    Returns (the hit, the window's start, figures)."""
    t0 = time.monotonic()
    with s.snapshots.held():
        return search_windows(s, cmd, mark, make_loggers, pick, t0)


def search_windows(s: Session, cmd: str, mark: Mark, make_loggers: Callable[[Run], list[gdb.Breakpoint]],
                   pick: Callable[[list[Hit]], Hit | None], t0: float) -> tuple[Hit | None, int | None, dict]:
    runs = logged = 0
    mark_k = words = None
    for start in windows(s, mark):
        run = replay(s, start, mark, make_loggers, mark_k=mark_k)
        runs += 1
        logged += run.stops
        if not run.reached_mark and mark_k is None and run.closest() is not None:
            mark_k = run.closest()   # (the same in every later window: the mark's thread is past `start`)
            words = run.near[mark_k]
            run = replay(s, start, mark, make_loggers, mark_k=mark_k)
            runs += 1
            logged += run.stops
        if not run.reached_mark:
            now = s.model.label(s.pos.seq) if s.pos else "its end"
            raise gdb.GdbError(f"det: {cmd}: the re-execution did not come back to where you were "
                               f"({mark.what}); the program is now at {now}")
        hit = pick(run.hits)
        if hit is not None:
            run2 = replay(s, start, mark, make_loggers, target=(hit.logger, hit.thread, hit.done, hit.k),
                          mark_k=mark_k)
            runs += 1
            if run2.reached_target is None:
                raise gdb.GdbError(f"det: {cmd}: the re-execution did not come back to the hit it found "
                                   f"(T{hit.thread} after {hit.done} events); the program's code between events "
                                   "is not deterministic here (a data race in an ordered replay?)")
            hit = run2.reached_target
            return hit, start, {"runs": runs, "logged": logged, "seconds": time.monotonic() - t0, "near": words}
    return None, None, {"runs": runs, "logged": logged, "seconds": time.monotonic() - t0, "near": words}


def between(s: Session, num: int, done: int) -> str:
    """`after its event 490 (mutex_lock mutex 5 (account)), before its event 495`"""
    m = s.model
    prev = m.thread_seq(num, done - 1) if done > 0 else None
    nxt = m.thread_seq(num, done)
    parts = []
    if prev is not None:
        parts.append(f"after its event {prev} ({m.what(m.event(prev))})")
    else:
        parts.append("before its first event")
    if nxt is not None and prev is not None:
        parts.append(f"before its event {nxt}")
    elif nxt is None:
        parts.append("past its last recorded event")
    return ", ".join(parts)


def arrive(s: Session, hit: Hit) -> list[str]:
    """Select the hit's thread and its frame in the program's code; the lines to show."""
    th = s.gdb_thread(hit.thread)
    if th is not None:
        th.switch()
    f = user_frame()
    if f is not None:
        f.select()
    s.stop_thread = hit.thread
    return s.frame_lines()


def figures(fig: dict, start: int | None, s: Session) -> str:
    frm = "the program's start" if start is None else f"event {start}"
    n = fig.get("near")
    near = "" if n is None else \
        f"; where you were: the closest stop there, {n} register or stack word{'s' if n != 1 else ''} apart"
    return (f"({fig['runs']} re-executions from {frm}, {fig['logged']} hits logged, "
            f"{fig['seconds']:.1f} s{near})")


# --- watching memory ---------------------------------------------------------------------
def watch_spec(expr: str, cmd: str) -> tuple[str, gdb.Value]:
    try:
        v = gdb.parse_and_eval(expr)
    except gdb.error as e:
        raise gdb.GdbError(f"det: {cmd}: {e}") from None
    if v.address is None:
        raise gdb.GdbError(f"det: {cmd}: '{expr}' is not in memory (not an lvalue)")
    if v.type.sizeof == 0 or v.type.sizeof > 32:
        raise gdb.GdbError(f"det: {cmd}: '{expr}' is {v.type.sizeof} bytes; a hardware watchpoint covers "
                           "1 to 32 bytes (watch one field)")
    return f"*({v.type.pointer()}) {int(v.address):#x}", v


def hardware_watch(cls: type, run: Run, number: int, spec: str, accept: Callable, wp_class: int, cmd: str,
                   expr: str) -> gdb.Breakpoint:
    """A logging watchpoint, in the debug registers: a software one would
    single-step every thread through the whole re-execution."""
    try:
        b = cls(run, number, spec, accept, type=gdb.BP_WATCHPOINT, wp_class=wp_class)
    except (gdb.error, RuntimeError) as e:
        raise gdb.GdbError(f"det: {cmd}: cannot watch '{expr}': {e}") from None
    if b.type == gdb.BP_WATCHPOINT:  # gdb fell back to a software watchpoint
        b.delete()
        raise gdb.GdbError(f"det: {cmd}: '{expr}' cannot be watched in hardware (gdb would single-step the "
                           "program); watch a smaller part of it")
    return b


def where_now() -> str:
    f = user_frame()
    return where(f) if f is not None else "?"
