"""det's gdb extension: step threads through a recorded interleaving.

Loaded by `detreplay --gdb` (replayer/det_replay/gdb.py), which starts gdb
with an init script that calls `start(CONFIG.json)`. It defines the `det`
commands (`help det`), stops the replaying program at recorded events and
keeps gdb's own commands (breakpoints, watchpoints, continue, next, bt,
info threads) working inside the enforced schedule.

How it moves the program: libdet.so (replayer/enforce.c, include/det/gdb.h)
checks `det_gdb_control` before every recorded event and calls
det_gdb_stop() when an armed condition matches, with every other thread
settled at its turnstile. The extension arms the control block with memory
writes and keeps silent internal breakpoints on det_gdb_ready (re-arm after
each (re)start), det_gdb_stop (decide, in Python, whether this is the stop
wanted), det_gdb_diverged, and, to find the end of a recording that hung,
on libdet's `park` and libc's `_exit`.

Rules of this file:
  - No inferior function calls, ever: they fail under gdb 13 on CPUs with
    AMX ("Couldn't write extended state status") and would perturb the
    replay. Only memory reads and writes through gdb expressions.
  - det's structures are read through gdb's expression evaluator with their
    real debug types (libdet.so is built with -g): no offsets in Python.
  - Standard library and det's stdlib-only modules only (gdb's Python is the
    system python3); capstone and pyelftools are optional, for `det disas`.
  - Every user error is a gdb.GdbError with one line; no traceback reaches
    the user.
  - Going back restarts the program (`run`) and replays forward to the
    target with the user's breakpoints disabled meanwhile; their
    breakpoints, watchpoints and displays are kept.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import gdb

UINT64_MAX = 2**64 - 1
LIBDET = "libdet.so"
# Frames of the thread library below which a det frame is not "user code".
THREAD_ENTRY = {"start_thread", "clone", "clone3", "__clone", "__clone3"}

SESSION: Session | None = None


@dataclass
class Goal:
    """Where a resume of the program should stop."""

    what: str                     # for messages: "event 500", "the end of the recording"
    seq: int | None = None        # before this event
    end: bool = False             # where the recording ended (every thread done and waiting)
    thread: int | None = None     # relaxed step-thread: before this thread's event idx > after_idx
    after_idx: int = -1
    kind: int | None = None       # before the next event of this kind ...
    obj: int | None = None        # ... on this object (alone: any event on it)
    honor: bool = True            # the user's breakpoints and break-events may stop it first
    select: int | None = None     # det thread to select on arrival
    first: bool = False           # the start: with no events at all, stop at det_gdb_ready
    ready: bool = False           # stop at det_gdb_ready, before any event (the re-executions of det_gdb_reverse)

    def clause(self) -> tuple[int | None, int | None, int | None, int | None] | None:
        """(seq, thread, kind, obj) for det_gdb_control, or None."""
        if self.seq is not None:
            return (self.seq, None, None, None)
        if self.thread is not None:
            return (None, self.thread, None, None)
        if self.kind is not None or self.obj is not None:
            return (None, None, self.kind, self.obj)
        return None


@dataclass
class BreakEvent:
    """`det break-event`: stop before events of a kind, on an object, by a thread."""

    number: int
    kind: int | None
    obj: int | None
    thread: int | None
    enabled: bool = True
    hits: int = 0

    def matches(self, tid: int, kind: int, obj: int) -> bool:
        return ((self.kind is None or self.kind == kind) and (self.obj is None or self.obj == obj)
                and (self.thread is None or self.thread == tid))

    def clause(self) -> tuple[int | None, int | None, int | None, int | None]:
        return (None, self.thread, self.kind, self.obj)


@dataclass
class Hit:
    """What a det breakpoint's stop() decided: the stop the handler reports."""

    why: str                      # goal | break | end | exit | diverged | ready
    seq: int = 0
    thread: int | None = None
    brk: BreakEvent | None = None
    code: int | None = None       # _exit's status


@dataclass
class Position:
    seq: int                      # the next event (Schedule.end: after the last)
    thread: int | None            # the thread stopped about to do it (None: between events)
    det_stop: bool                # stopped by det at an event boundary


class DetBreakpoint(gdb.Breakpoint):
    """A silent internal breakpoint whose stop() is a Session method."""

    def __init__(self, spec: str, decide) -> None:
        super().__init__(spec, internal=True)
        self.silent = True
        self.decide = decide

    def stop(self) -> bool:
        try:
            return bool(self.decide())
        except gdb.error as e:
            print(f"det: cannot read the replay state at {self.location}: {e}")
            return True
        except Exception as e:  # noqa: BLE001 - a bug must stop the program, not crash gdb's event loop
            print(f"det: internal error at {self.location}: {type(e).__name__}: {e}")
            return True


def _model():
    # Imported late: sys.path gets det's package directory from the config.
    import det_gdb_model

    return det_gdb_model


class Session:
    """One replay under gdb: the trace, the control block, the goals."""

    def __init__(self, cfg: dict) -> None:
        m = _model()
        self.cfg = cfg
        self.model = m.Schedule(cfg["trace"])
        self.relaxed = bool(cfg.get("relaxed"))
        self.goal: Goal | None = None
        self.hit: Hit | None = None
        self.pos: Position | None = None
        self.breaks: list[BreakEvent] = []
        self.next_break = 1
        self.bps: dict[str, DetBreakpoint] = {}
        self.lwp_to_num: dict[int, int] = {}
        self.slot_base: gdb.Value | None = None
        self.states: dict[int, str] = {}
        self.divergence: str | None = None
        self.deferred: list[str] | None = None  # report lines held while a det command runs the program
        self.quiet_exit = False                 # a restart kills the program: say nothing
        self.last_event: object = None
        self.signalled: tuple[int | None, str] | None = None  # (det thread, SIGABRT) of the last stop
        self.stop_thread: int | None = None     # the det thread gdb reported the last stop in
        self.finish_bp: gdb.Breakpoint | None = None

    # --- the program's memory ------------------------------------------------
    def alive(self) -> bool:
        inf = gdb.selected_inferior()
        return inf is not None and inf.pid != 0

    def _slots(self) -> gdb.Value:
        if self.slot_base is None:
            self.slot_base = gdb.parse_and_eval("(struct det_slot *)((char *)det_hdr + det_hdr->slots_off)")
        return self.slot_base

    def _state_names(self) -> dict[int, str]:
        if not self.states:
            t = gdb.lookup_type("enum det_thread_state")
            self.states = {int(f.enumval): f.name.lower().removeprefix("det_ts_") for f in t.fields()}
        return self.states

    def live(self) -> list:
        """Every recorded thread's slot, as det_gdb_model.LiveThread."""
        m = _model()
        if not self.alive():
            return []
        if int(gdb.parse_and_eval("(unsigned long)det_hdr")) == 0:
            return []
        n = int(gdb.parse_and_eval("det_hdr->threads_recorded"))
        base = self._slots()
        names = self._state_names()
        gdb_threads = {t.ptid[1]: t for t in gdb.selected_inferior().threads()}
        out = []
        self.lwp_to_num = {}
        for i in range(n):
            s = base[i]
            state = names.get(int(s["state"]), "?")
            lwp = int(s["ktid"])
            blocked_obj = int(s["blocked_obj"])
            if not blocked_obj and int(s["blocked_kind"]) and int(s["blocked_addr"]):
                # parked before another thread bound the object (libdet
                # looks again only every 20 ms): the trace knows it
                found = self.model.objects_at(int(s["blocked_addr"]))
                blocked_obj = found[-1][0] if found else 0
            t = m.LiveThread(num=i, state=state, done=int(s["done"]), count=int(s["sched_count"]),
                             at_turnstile=bool(int(s["at_turnstile"])), blocked_kind=int(s["blocked_kind"]),
                             blocked_obj=blocked_obj, blocked_ra=int(s["blocked_ra"]))
            if state != "free" and lwp in gdb_threads:
                self.lwp_to_num[lwp] = i
                t.lwp = lwp
                t.gdb_num = gdb_threads[lwp].num
            out.append(t)
        return out

    def det_num(self, thread: gdb.InferiorThread | None = None) -> int | None:
        """det's number of a gdb thread (the selected one by default)."""
        thread = thread or gdb.selected_thread()
        if thread is None:
            return None
        lwp = thread.ptid[1]
        if lwp not in self.lwp_to_num:
            self.live()
        return self.lwp_to_num.get(lwp)

    def gdb_thread(self, num: int) -> gdb.InferiorThread | None:
        self.live()
        for lwp, n in self.lwp_to_num.items():
            if n == num:
                for t in gdb.selected_inferior().threads():
                    if t.ptid[1] == lwp:
                        return t
        return None

    def set_control(self, seq: int, thread: int, kind: int, obj: int) -> None:
        for name, value in (("stop_seq", seq), ("stop_thread", thread), ("stop_kind", kind), ("stop_obj", obj),
                            ("attached", 1)):
            gdb.parse_and_eval(f"det_gdb_control.{name} = {value}")

    def arm(self) -> None:
        """Write det_gdb_control for the current goal and break-events."""
        clauses = []
        g = self.goal
        if g is not None and g.clause() is not None:
            clauses.append(g.clause())
        if g is None or g.honor:
            clauses += [b.clause() for b in self.breaks if b.enabled]
        self.set_control(*prefilter(clauses))

    # --- breakpoints -----------------------------------------------------------
    def make_breakpoints(self) -> None:
        if self.bps:
            return
        # Pending until libdet.so loads; gdb's "not defined" chatter is swallowed.
        gdb.execute("python det_gdb.SESSION._make_breakpoints()", to_string=True)

    def _make_breakpoints(self) -> None:
        self.bps = {
            "ready": DetBreakpoint("det_gdb_ready", self.on_ready),
            "thread": DetBreakpoint("det_gdb_thread", self.on_thread),
            "stop": DetBreakpoint("det_gdb_stop", self.on_det_stop),
            "diverged": DetBreakpoint("det_gdb_diverged", self.on_diverged),
            "park": DetBreakpoint("-source enforce.c -function park", self.on_park),
            "exit": DetBreakpoint("_exit", self.on_exit_call),
        }
        self.bps["exit"].enabled = False

    def on_ready(self) -> bool:
        # A (re)start: the region was reset, det_gdb_control is fresh.
        self.slot_base = None
        self.lwp_to_num = {}
        self.divergence = None
        self.signalled = None
        self.arm()
        self.name_thread(gdb.selected_thread(), 0)
        if self.goal is not None and (self.goal.ready or (self.goal.first and self.model.total == 0)):
            self.hit = Hit("ready", seq=self.model.first if self.model.total else self.model.end, thread=0)
            return True
        return False

    def on_thread(self) -> bool:
        # A thread starts (libdet.so passes its number): gdb's name for it is
        # its T-name before gdb reports anything about it (a signal, a
        # watchpoint hit).
        self.name_thread(gdb.selected_thread(), int(gdb.parse_and_eval("(unsigned int)$rdi")))
        return False

    def on_det_stop(self) -> bool:
        num = self.det_num()
        if num is None:
            return False
        idx = int(self._slots()[num]["done"])
        seq = self.model.thread_seq(num, idx)
        if seq is None:
            return False
        g = self.goal
        if g is not None:
            reached = False
            if g.seq is not None:
                # Ordered replay reaches events in seq order; relaxed replay
                # may run other threads past it, so there only the event
                # itself counts.
                if self.relaxed:
                    reached = seq == g.seq
                else:
                    reached = seq >= g.seq
            elif g.thread is not None:
                reached = num == g.thread and idx > g.after_idx
            elif g.kind is not None or g.obj is not None:
                e = self.model.event(seq)
                reached = (g.kind is None or e.kind == g.kind) and (g.obj is None or e.obj == g.obj)
            if reached:
                self.hit = Hit("goal", seq, num)
                return True
        if g is None or g.honor:
            live = [b for b in self.breaks if b.enabled]
            if live:
                e = self.model.event(seq)
                for b in live:
                    if b.matches(num, e.kind, e.obj):
                        b.hits += 1
                        self.hit = Hit("break", seq, num, brk=b)
                        return True
        return False

    def on_park(self) -> bool:
        # A thread past its last recorded event parks. When the last one
        # does, the replay has reached where the recording ended: stop there
        # (a `continue` into a replayed deadlock would otherwise hang), except
        # while going to an event before it.
        g = self.goal
        if g is not None and not g.end and not g.honor:
            return False
        me = self.det_num()
        threads = self.live()
        if sum(t.done for t in threads) < sum(t.count for t in threads):
            return False
        for t in threads:
            # A thread that said what it waits for is committed to park,
            # even if it has not stored its new state yet.
            if t.num != me and t.state in ("running", "starting") and not t.ended_blocked:
                return False  # still on its way to park or exit
        self.hit = Hit("end", self.model.end, me)
        return True

    def on_exit_call(self) -> bool:
        if self.goal is None or not self.goal.end:
            return False
        code = int(gdb.parse_and_eval("(int)$rdi"))
        self.hit = Hit("exit", self.model.end, self.det_num(), code=code)
        return True

    def on_diverged(self) -> bool:
        d = gdb.parse_and_eval("det_hdr->div")
        div = {k: int(d[k]) for k in ("thread", "idx", "seq", "reason", "want_kind", "want_obj", "got_kind",
                                      "got_obj", "got_addr", "ra")}
        what = d["what"].string(length=-1).split("\0", 1)[0]
        self.divergence = self.model.divergence_text(div, what)
        self.hit = Hit("diverged", div["seq"] if div["seq"] != UINT64_MAX else self.model.end, div["thread"])
        return True

    # --- stops -------------------------------------------------------------------
    def on_stop(self, event: gdb.StopEvent) -> None:
        self.last_event = event
        if not self.alive():
            return
        hit, self.hit = self.hit, None
        goal, self.goal = self.goal, None
        try:
            self._on_stop(event, hit, goal)
        except gdb.error as e:
            self.say(f"det: cannot read the replay state: {e}")

    def _on_stop(self, event: gdb.StopEvent, hit: Hit | None, goal: Goal | None) -> None:
        self.signalled = None
        live = self.live()
        if hit is not None and hit.why in ("goal", "break"):
            self.pos = Position(hit.seq, hit.thread, True)
        elif hit is not None and hit.why in ("end", "exit"):
            self.pos = Position(self.model.end, None, True)
        else:
            self.pos = self.position_from(live)
        self.name_threads()
        gdb.set_convenience_variable("det_event", self.pos.seq)
        here = self.det_num()
        self.stop_thread = here
        gdb.set_convenience_variable("det_thread", self.pos.thread if self.pos.thread is not None else here)
        try:
            self.arm()  # the default from now on: break-events only
        except gdb.error:
            pass
        lines: list[str] = []
        select = None
        if hit is None:
            if self.finish_bp is not None:
                return  # stepping out of det's code for next/step: they report
            if isinstance(event, gdb.SignalEvent):
                self.signalled = (here, event.stop_signal)
            if goal is not None:
                lines.append(f"det: stopped before reaching {goal.what}; now at "
                             f"{self.model.label(self.pos.seq)}")
            # gdb stopped in det's code (a watchpoint hit inside det's call)
            # or in a library for a signal (abort, raise): the program's own
            # line is what the user wants to see.
            try:
                newest = frame_kind(gdb.newest_frame())
            except gdb.error:
                newest = "program"
            if newest == "det" or (newest == "system" and isinstance(event, gdb.SignalEvent)):
                f = user_frame()
                if f is not None and frame_kind(f) == "program":
                    f.select()
                    who = f"T{here}" if here is not None else "this thread"
                    lines.append(f"det: {who} is in {where(f)} (frame #{f.level()}, the program's code)")
                    lines += self.frame_lines()
            if lines:
                self.say(*lines)
            return
        if hit.why == "goal":
            select = goal.select if goal is not None else None
            if select is not None:
                lines.append(f"det: T{select} did {goal.what}")
                lines.append(f"det: now at {self.model.of_total(hit.seq)}: {self.model.describe(hit.seq)}")
            else:
                lines.append(f"det: {self.model.of_total(hit.seq)}: {self.model.describe(hit.seq)}")
        elif hit.why == "break":
            lines.append(f"det: break-event {hit.brk.number}: {self.model.of_total(hit.seq)}: "
                         f"{self.model.describe(hit.seq)}")
        elif hit.why == "end":
            lines.append(f"det: at {self.model.of_total(self.model.end)}; every thread waits where the "
                         f"recording ended ({self.model.recorded_end()})")
            lines += [ln for ln in self.model.status_text(self.model.end, None, live, self.relaxed)[1:]
                      if ln.startswith("deadlock") or ln.startswith("all threads")]
        elif hit.why == "exit":
            lines.append(f"det: at {self.model.of_total(self.model.end)}; the program is about to exit with "
                         f"code {hit.code} (recorded: {self.model.recorded_end()}); `continue` lets it exit")
        elif hit.why == "diverged":
            lines.append(f"det: the replay diverged: {self.divergence}")
            lines.append("det: `continue` lets the program stop (status 125); `det goto N` restarts the replay")
        elif hit.why == "ready" and self.model.total == 0:
            lines.append("det: the recording has no events; the program is stopped where det started it")
        self.select_thread(select if select is not None else hit.thread)
        self.say(*lines)
        self.show_frame()

    def position_from(self, live: list) -> Position:
        nexts = [s for t in live if (s := self.model.thread_seq(t.num, t.done)) is not None]
        return Position(min(nexts) if nexts else self.model.end, None, False)

    def on_exited(self, event) -> None:
        self.pos = None
        self.slot_base = None
        self.hit = None
        if self.quiet_exit:
            return  # a restart: the goal is for the new run
        goal, self.goal = self.goal, None
        code = getattr(event, "exit_code", None)
        if code is None and goal is None:
            return  # killed (gdb's `kill`, or gdb exiting): nothing to compare
        got = f"exit code {code}" if code is not None else "its end"
        lines = []
        if goal is not None:
            lines.append(f"det: the program ended ({got}) before reaching {goal.what}")
        if self.divergence:
            lines.append(f"det: the replay diverged: {self.divergence}")
        else:
            lines.append(f"det: the replay ended with {got}; recorded: {self.model.recorded_end()}")
        lines.append("det: `det goto N` starts the replay again")
        self.say(*lines)

    def say(self, *lines: str) -> None:
        if self.deferred is not None:
            self.deferred.extend(lines)
        else:
            for ln in lines:
                print(ln)

    def name_threads(self) -> None:
        for t in gdb.selected_inferior().threads():
            num = self.lwp_to_num.get(t.ptid[1])
            if num is not None:
                self.name_thread(t, num)

    @staticmethod
    def name_thread(t: gdb.InferiorThread | None, num: int) -> None:
        if t is not None and t.is_valid() and t.name != f"T{num}":
            t.name = f"T{num}"

    def select_thread(self, num: int | None) -> None:
        if num is not None:
            t = self.gdb_thread(num)
            if t is not None and t != gdb.selected_thread():
                t.switch()
        f = user_frame()
        if f is not None:
            f.select()

    def frame_lines(self) -> list[str]:
        text = gdb.execute("frame", to_string=True)
        disp = gdb.execute("display", to_string=True)
        return (text + disp).rstrip("\n").split("\n")

    def show_frame(self) -> None:
        self.say(*self.frame_lines())

    # --- moving ----------------------------------------------------------------
    def resume(self, goal: Goal, restart: bool = False, silent: bool = False) -> None:
        """Run the program (started or not) until goal, a breakpoint, or the end;
        restart: from the start in any case; silent: say nothing."""
        if goal.end:
            self.bps["exit"].enabled = True
        self.signalled = None
        self.deferred = []
        try:
            with self.quiet(), self.user_breakpoints(goal.honor):
                if restart or not self.alive() or self.must_restart(goal):
                    self.goal = goal
                    self.restart()
                else:
                    self.goal = goal
                    self.arm()
                    gdb.execute("continue", to_string=True)
        finally:
            out, self.deferred = self.deferred, None
            self.bps["exit"].enabled = False
            self.goal = None
            for ln in [] if silent else out:
                print(ln)

    def restart(self) -> None:
        self.quiet_exit = True
        try:
            gdb.execute("run", to_string=True)
        finally:
            self.quiet_exit = False

    def must_restart(self, goal: Goal) -> bool:
        if self.pos is None:
            return True
        if goal.seq is None:
            return False
        if not self.relaxed:
            return goal.seq <= self.pos.seq and not (goal.seq == self.pos.seq and not self.pos.det_stop)
        tid = self.model.thread_of(goal.seq)
        done = {t.num: t.done for t in self.live()}.get(tid, 0)
        return done > self.model.idx_of(goal.seq) or (goal.seq == self.pos.seq and self.pos.det_stop)

    @contextmanager
    def quiet(self) -> Iterator[None]:
        saved = {p: gdb.parameter(p) for p in ("confirm", "print thread-events", "print inferior-events")}
        for p in saved:
            gdb.execute(f"set {p} off", to_string=True)
        try:
            yield
        finally:
            for p, v in saved.items():
                gdb.execute(f"set {p} {'on' if v else 'off'}", to_string=True)

    @contextmanager
    def user_breakpoints(self, honor: bool) -> Iterator[None]:
        """Going to an event ignores the user's breakpoints (they are kept)."""
        off = [] if honor else [b for b in gdb.breakpoints() if b.visible and b.enabled]
        for b in off:
            b.enabled = False
        try:
            yield
        finally:
            for b in off:
                if b.is_valid():
                    b.enabled = True

    def goto(self, seq: int, honor: bool = False, select: int | None = None, what: str | None = None) -> None:
        if seq >= self.model.end:
            # A hung recording ends with every thread parked (the park
            # breakpoint); one that exited ends at _exit.
            goal = Goal("the end of the recording", end=True, honor=honor, select=select)
        else:
            goal = Goal(what or f"event {seq}", seq=seq, honor=honor, select=select)
        if (self.pos is not None and self.pos.det_stop and self.pos.seq == seq and self.alive()
                and not honor):
            print(f"det: already at {self.model.of_total(seq)}: {self.model.describe(seq)}")
            return
        self.resume(goal)

    def step_out_of_det(self) -> None:
        """Before next/step/until/advance: run the selected thread to the end of det's call.

        At a det stop the innermost frames are libdet's (the thread is inside
        pthread_mutex_lock, about to do its event), and gdb steps in the
        innermost frame. So first let the thread finish its event, the other
        threads moving as the schedule requires, and stop it on the `ret` of
        the interposed function: gdb's own command then steps out of it into
        the program exactly as it steps over any call (landing on the next
        line of the program)."""
        if not self.alive():
            return
        f = gdb.newest_frame()
        if not in_det(f) and not (f.older() is not None and in_det(f.older()) and not in_user(f)):
            return
        uf = det_caller_frame()
        if uf is None or uf.newer() is None or in_det(uf):
            return
        callee = uf.newer()
        while callee is not None and callee.type() == gdb.INLINE_FRAME:
            callee = callee.newer()
        if callee is None or not in_det(callee):
            return
        thread = gdb.selected_thread()
        stops: list[gdb.Breakpoint] = []
        try:
            block = callee.block()
            while block is not None and block.function is None:
                block = block.superblock
            insns = callee.architecture().disassemble(block.start, block.end - 1) if block is not None else []
        except RuntimeError:
            # An entry stub (recorder/stack.c, no debug information): it
            # returns to the program with the first `ret` after its call.
            insns = callee.architecture().disassemble(callee.pc(), count=64)
            insns = insns[:next((i + 1 for i, n in enumerate(insns) if n["asm"].split()[0] in ("ret", "retq")),
                                len(insns))]
        for insn in insns:
            if insn["asm"].split()[0] in ("ret", "retq") or insn["asm"].startswith(("repz ret", "bnd ret")):
                b = gdb.Breakpoint(f"*{insn['addr']:#x}", internal=True, temporary=True)
                b.thread = thread.num
                b.silent = True
                stops.append(b)
        # A tail call returns straight to the program: catch that too.
        fb = gdb.FinishBreakpoint(callee, internal=True)
        fb.silent = True
        stops.append(fb)
        self.finish_bp = fb
        num = self.det_num()
        self.last_event = None
        try:
            with self.quiet():
                gdb.execute("continue", to_string=True)
        finally:
            self.finish_bp = None
            ev = self.last_event
            reached = isinstance(ev, gdb.BreakpointEvent) and any(b in ev.breakpoints for b in stops)
            for b in stops:
                if b.is_valid():
                    b.delete()
        if not reached:
            raise gdb.GdbError(f"det: T{num} stopped before its call returned to the program; not stepping")


def prefilter(clauses: list[tuple[int | None, int | None, int | None, int | None]]) -> tuple[int, int, int, int]:
    """det_gdb_control's (stop_seq, stop_thread, stop_kind, stop_obj) for a set of wanted stops.

    The runtime stops when seq >= stop_seq, OR the thread is stop_thread,
    OR the kind (and object, if set) match, OR (without a kind) the object
    matches. Each clause (seq, thread, kind, obj) is one wanted stop; the
    fields can hold one thread and one kind/object each, so clauses that do
    not fit share the superset "every event" (stop_seq 0), and det_gdb.py
    decides in Python which stops to keep."""
    seq, thread, kind, obj = UINT64_MAX, None, None, None
    everything = False
    for c_seq, c_thread, c_kind, c_obj in clauses:
        if c_seq is not None:
            seq = min(seq, c_seq)
        elif c_thread is not None and thread in (None, c_thread):
            thread = c_thread
        elif c_kind is not None and (kind is None or kind == c_kind) and not (kind is None and obj is not None):
            if kind is None:
                obj = c_obj
            elif obj != c_obj:
                obj = None  # same kind on two objects: the kind alone covers both
            kind = c_kind
        elif c_kind is None and c_obj is not None and kind is None and obj in (None, c_obj):
            obj = c_obj
        else:
            everything = True
    if everything:
        seq = 0
    return seq, (thread + 1) if thread is not None else 0, kind or 0, obj or 0


def solib(pc: int) -> str:
    return os.path.basename(gdb.solib_name(pc) or "")


# Where the system's shared libraries live: their frames are neither det's
# nor the program's own code (libc's abort, libstdc++'s thread entry).
SYSTEM_DIRS = ("/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/libexec/")


def frame_kind(f: gdb.Frame) -> str:
    """"det" (libdet.so), "system" (a system library, the vDSO) or "program"."""
    try:
        pc = f.pc()
        path = gdb.solib_name(pc)
    except gdb.error:
        return "system"
    if path is None:
        # The executable itself, or the vDSO (no file either).
        return "system" if (f.name() or "").startswith("__vdso_") else "program"
    if os.path.basename(path) == LIBDET:
        return "det"
    return "system" if path.startswith(SYSTEM_DIRS) or "linux-vdso" in path else "program"


def in_det(f: gdb.Frame) -> bool:
    return frame_kind(f) == "det"


def in_user(f: gdb.Frame) -> bool:
    return not in_det(f) and (f.name() or "") not in THREAD_ENTRY


def det_caller_frame(limit: int = 64) -> gdb.Frame | None:
    """The frame that called into det (the first frame above det's frames), or None."""
    try:
        f = gdb.newest_frame()
    except gdb.error:
        return None
    seen_det = False
    for _ in range(limit):
        if f is None:
            return None
        if in_det(f):
            seen_det = True
        elif seen_det:
            return f
        f = f.older()
    return None


def user_frame(limit: int = 256) -> gdb.Frame | None:
    """The selected thread's innermost frame in the program's own code.

    Not det's frames, not a system library's (abort, raise): the line of the
    program a thread is at. A thread that has none yet (about to run its start
    routine, at its thread_start event) gets det's thread entry, the frame
    that calls the start routine."""
    try:
        f = gdb.newest_frame()
    except gdb.error:
        return None
    outer_det = None
    for _ in range(limit):
        if f is None:
            break
        kind = frame_kind(f)
        if kind == "program":
            return f
        if kind == "det":
            outer_det = f
        f = f.older()
    return outer_det or gdb.newest_frame()


def where(f: gdb.Frame | None) -> str:
    if f is None:
        return ""
    sal = f.find_sal()
    name = f.name() or "??"
    if sal.symtab is not None and sal.line:
        return f"{name} at {os.path.basename(sal.symtab.filename)}:{sal.line}"
    return name


MAX_POINTEE = 4096   # a pointer at most this far below an object may point to the struct holding it
MAX_SCANNED = 1 << 20  # bytes of the program's static data read to find pointers


def pointer_expression(addr: int, kind: str) -> str | None:
    """The expression that reaches an object with no symbol (on the heap)
    from the program's static data, one pointer away: `q->lock`, `*p`,
    `pools[1]->locks[2]`; None if no static pointer leads to it."""
    s = SESSION
    if s is None or not s.alive():
        return None
    names = s.model.names
    exe = s.cfg.get("binary", "")
    try:
        base = names.sym.bases[names.sym.paths.index(exe)]
    except ValueError:
        return None
    ds = names.data_symbols(exe)
    inf = gdb.selected_inferior()
    best: tuple[int, str, int] | None = None
    scanned = 0
    for start, end, name in zip(ds.starts, ds.ends, ds.names, strict=True):
        size = end - start
        if size < 8 or scanned + size > MAX_SCANNED:
            continue
        try:
            mem = bytes(inf.read_memory(base + start, size))
        except (gdb.error, gdb.MemoryError):
            continue
        scanned += size
        for off in range(0, size - 7, 8):
            p = int.from_bytes(mem[off:off + 8], "little")
            if p <= addr < p + MAX_POINTEE and (best is None or addr - p < best[0]):
                best = (addr - p, name, off)
    if best is None:
        return None
    delta, name, off = best
    try:
        holder = gdb.parse_and_eval(name)
        ptr = lvalue_path(holder.type, off, name)
        if ptr is None:
            return None
        target = gdb.parse_and_eval(ptr).type.strip_typedefs()
        if target.code != gdb.TYPE_CODE_PTR:
            return None
        pointee = target.target()
        if delta == 0 and pointee.strip_typedefs().code != gdb.TYPE_CODE_STRUCT:
            return f"*{ptr}"
        inner = lvalue_path(pointee, delta, "")
    except gdb.error:
        return None
    if inner is None:
        return f"*{ptr}" if delta == 0 else f"(char *){ptr}+{delta}"
    if not inner:
        return f"*{ptr}"
    return f"{ptr}->{inner[1:]}" if inner.startswith(".") else f"(*{ptr}){inner}"


def lvalue_path(t: gdb.Type, off: int, prefix: str) -> str | None:
    """The C expression for the object at byte `off` inside an object of type
    t named prefix (`pool.jobs[2]`), down to a pthread type or a scalar."""
    t = t.strip_typedefs()
    if off == 0 and (t.code not in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_ARRAY)
                     or (t.name or "").startswith(("pthread_", "__pthread"))):
        return prefix
    if t.code == gdb.TYPE_CODE_ARRAY:
        elem = t.target()
        n = elem.sizeof
        if n <= 0:
            return None
        return lvalue_path(elem, off % n, f"{prefix}[{off // n}]")
    if t.code == gdb.TYPE_CODE_STRUCT:
        for f in t.fields():
            if f.bitpos is None or f.name is None:
                continue
            fo = f.bitpos // 8
            if fo <= off < fo + max(f.type.sizeof, 1):
                return lvalue_path(f.type, off - fo, f"{prefix}.{f.name}")
        return None
    return prefix if off == 0 else None


def session() -> Session:
    if SESSION is None:
        raise gdb.GdbError("det: no replay loaded (start gdb with `detreplay --gdb TRACE`)")
    return SESSION


def running() -> Session:
    s = session()
    if not s.alive():
        raise gdb.GdbError("det: the program is not running; `det goto N` starts the replay again")
    return s


# --- argument parsing ------------------------------------------------------------
def parse_int(text: str, what: str) -> int:
    text = text.strip()
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        v = gdb.parse_and_eval(text)
        return int(v)
    except (gdb.error, ValueError, TypeError):
        raise gdb.GdbError(f"det: {what}: '{text}' is not a number") from None


def parse_event(s: Session, text: str, cmd: str) -> int:
    t = text.strip().lower()
    m = s.model
    if t in ("end", "$"):
        return m.end
    if t in ("start", "begin", "first"):
        return m.first
    n = parse_int(text, cmd)
    if n < 0 or n > m.end:
        last = f"events {m.first} to {m.end - 1}" if m.total else "no events"
        raise gdb.GdbError(f"det: {cmd}: event {n} is not in the recording ({last}; `end` is after the last)")
    if n == m.end:
        return n
    if not m.has(n):
        raise gdb.GdbError(f"det: {cmd}: the trace has no event {n} (its thread died before it was written)")
    return n


def parse_bound(s: Session, text: str, cmd: str) -> int:
    """An end of a range of events: a number or expression (not checked
    against the recording: ranges are clamped), `start` or `end`."""
    t = text.strip().lower()
    if t in ("end", "$"):
        return s.model.end
    if t in ("start", "begin", "first"):
        return s.model.first
    return parse_int(text, cmd)


def parse_thread(s: Session, text: str, cmd: str) -> int:
    t = text.strip()
    n = parse_int(t[1:] if t[:1] in "Tt" and t[1:].isdigit() else t, cmd)
    if n not in s.model.threads:
        last = max(s.model.threads) if s.model.threads else 0
        raise gdb.GdbError(f"det: {cmd}: no thread T{n} in the recording (threads T0 to T{last})")
    return n


def parse_kind(text: str, cmd: str) -> int | None:
    m = _model()
    if text.lower() == "any":
        return None
    k = m.kind_number(text)
    if k is None:
        names = ", ".join(sorted(m.KIND_BY_NAME))
        raise gdb.GdbError(f"det: {cmd}: unknown event kind '{text}' (kinds: {names})")
    return k


def parse_obj(s: Session, text: str, cmd: str) -> int:
    t = text.strip()
    if t.isdigit():
        n = int(t)
        if n not in s.model.objects:
            raise gdb.GdbError(f"det: {cmd}: no object {n} in the recording (objects 1 to "
                               f"{max(s.model.objects, default=0)})")
        return n
    # An expression for the object's address, like &a.lock: recorded
    # addresses are the replay's (ASLR is off in every det run).
    try:
        addr = int(gdb.parse_and_eval(t))
    except (gdb.error, ValueError, TypeError) as e:
        raise gdb.GdbError(f"det: {cmd}: '{t}' is neither an object number nor an address ({e})") from None
    found = s.model.objects_at(addr)
    if not found:
        raise gdb.GdbError(f"det: {cmd}: no recorded object at {addr:#x}")
    here = s.pos.seq if s.pos is not None else 0
    live = [o for o, first in found if first <= here]
    return live[-1] if live else found[0][0]


def words(arg: str) -> list[str]:
    try:
        return gdb.string_to_argv(arg)
    except gdb.error as e:
        raise gdb.GdbError(f"det: {e}") from None


# --- commands --------------------------------------------------------------------
class DetPrefix(gdb.Command):
    """Step threads through the recorded interleaving of a det trace.

det status             where the replay is: the event, every thread's next event
det when               the current event (as rr's `when`)
det next [N]           let the schedule advance N events (1) and stop
det step-thread [T]    run until thread T (the selected thread) completes its next event
det goto N|end         go to event N, forward or backward (restarts the replay)
det back [N]           go back N events (1)
det until KIND [OBJ]   run until the next event of KIND (on object OBJ)
det break-event ...    stop before events of a kind, on an object, by a thread
det timeline [FROM [TO]]  the events around the current one, one column per thread
det thread T           select thread T (T2) in its frame of the program's code
det threads            gdb's thread numbers next to det's T0, T1, ...
det disas [T]          disassembly around thread T's code (capstone, pyelftools)
det last-write EXPR    go back to the last write that changed EXPR (by re-execution)
det reverse-continue   go back to the last hit of your breakpoints and watchpoints
det reverse-step       go back to the previous line of the current thread
set det show-frames on|off   show det's own frames in backtraces (off)

At an event, every other thread waits at its turnstile: `info threads` and
`bt` show where. $det_event is the current event and $det_thread the thread
about to do it. Breakpoints, watchpoints, continue, next and step work as
usual; det keeps the recorded order. Event numbers are the trace's (as
detrec info and detreplay print them); "event N" means events before N are
done and N is next."""

    def __init__(self) -> None:
        super().__init__("det", gdb.COMMAND_RUNNING, gdb.COMPLETE_NONE, prefix=True)

    def invoke(self, arg: str, from_tty: bool) -> None:
        if arg.strip():
            raise gdb.GdbError(f"det: unknown command 'det {arg.strip()}' (see `help det`)")
        gdb.execute("help det")


class DetStatus(gdb.Command):
    """Where the replay is: the current event and total, the thread about to do it,
and for every thread its next recorded event with its source line, what it
holds, and whether it waits for its turn. At the end of a recording that
hung, the deadlock cycle (or what every thread waits for).

Usage: det status"""

    def __init__(self) -> None:
        super().__init__("det status", gdb.COMMAND_STATUS)

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = running()
        live = s.live()
        pos = s.pos or s.position_from(live)
        for t in live:
            if t.gdb_num is not None:
                th = s.gdb_thread(t.num)
                if th is not None:
                    t.where = thread_where(th)
            if s.signalled is not None and s.signalled[0] == t.num:
                t.signal = s.signalled[1]
        lines = s.model.status_text(pos.seq, pos.thread if pos.det_stop else None, live, s.relaxed,
                                    selected=s.det_num())
        if s.divergence:
            lines.insert(1, f"det: the replay diverged: {s.divergence}")
        for ln in lines:
            print(ln)


@contextmanager
def on_thread(th: gdb.InferiorThread) -> Iterator[None]:
    """Run a block with th selected; the user's thread and frame come back after."""
    cur = gdb.selected_thread()
    try:
        frame = gdb.selected_frame()
    except gdb.error:
        frame = None
    try:
        th.switch()
        yield
    finally:
        cur.switch()
        if frame is not None and frame.is_valid():
            frame.select()


def thread_where(th: gdb.InferiorThread) -> str:
    """The program-code frame of another thread."""
    try:
        with on_thread(th):
            return where(user_frame())
    except gdb.error:
        return ""


class DetWhen(gdb.Command):
    """The current event, as rr's `when`.

Usage: det when"""

    def __init__(self) -> None:
        super().__init__("det when", gdb.COMMAND_STATUS)

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = running()
        pos = s.pos or s.position_from(s.live())
        m = s.model
        if pos.seq >= m.end:
            print(f"det: at {m.of_total(pos.seq)}")
        elif pos.det_stop and pos.thread is not None:
            print(f"det: at {m.of_total(pos.seq)}: {m.describe(pos.seq)}")
        else:
            print(f"det: between events: {m.of_total(pos.seq)} is next ({m.describe(pos.seq)})")


class DetNext(gdb.Command):
    """Let the schedule advance N events (default 1) and stop before the next one.

Usage: det next [N]
Your breakpoints and break-events stop it earlier, as gdb's `next` would."""

    def __init__(self) -> None:
        super().__init__("det next", gdb.COMMAND_RUNNING)

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = running()
        n = parse_int(arg, "det next") if arg.strip() else 1
        if n < 1:
            raise gdb.GdbError("det: det next: N must be at least 1")
        m = s.model
        pos = s.pos or s.position_from(s.live())
        i = m.index_of(pos.seq)
        if i >= m.total:
            raise gdb.GdbError("det: det next: already at the end of the recording")
        if i + n > m.total:
            # clamped to the recording, as every range is
            print(f"det: det next: only {m.total - i} events left; going to the end")
            n = m.total - i
        target = m.seq_at(i + n)
        s.goto(target, honor=True, what=m.label(target))


class DetBack(gdb.Command):
    """Go back N events (default 1): restart the replay and run to that event.

Usage: det back [N]"""

    def __init__(self) -> None:
        super().__init__("det back", gdb.COMMAND_RUNNING)

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = session()
        n = parse_int(arg, "det back") if arg.strip() else 1
        if n < 1:
            raise gdb.GdbError("det: det back: N must be at least 1")
        m = s.model
        if not s.alive() or s.pos is None:
            raise gdb.GdbError("det: det back: the program is not running; use `det goto N`")
        i = m.index_of(s.pos.seq)
        if i == 0:
            raise gdb.GdbError(f"det: det back: already at the first event ({m.label(s.pos.seq)})")
        if i - n < 0:
            print(f"det: det back: only {i} events before {m.label(s.pos.seq)}; going to the first")
            n = i
        s.goto(m.seq_at(i - n))


class DetGoto(gdb.Command):
    """Go to event N, forward or backward: events before N done, N next.

Usage: det goto N | start | end
Backward, det restarts the replay and runs it to N; your breakpoints are
disabled meanwhile and kept, as are watchpoints and displays. `end` is after
the last recorded event: where a hung recording ended (every thread waits
for its lock, `det status` names the cycle), or just before the program
exits. N may be an expression, e.g. `det goto $det_event + 10`."""

    def __init__(self) -> None:
        super().__init__("det goto", gdb.COMMAND_RUNNING)

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = session()
        if not arg.strip():
            raise gdb.GdbError("det: det goto: which event? (det goto N | start | end)")
        s.goto(parse_event(s, arg, "det goto"))


class DetStepThread(gdb.Command):
    """Run until thread T completes its next event; the other threads move only as
the schedule requires. T defaults to the selected thread; gdb then selects T.

Usage: det step-thread [T]      (T: 2 or T2)"""

    def __init__(self) -> None:
        super().__init__("det step-thread", gdb.COMMAND_RUNNING)

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = running()
        m = s.model
        if arg.strip():
            t = parse_thread(s, arg, "det step-thread")
        else:
            t = s.det_num()
            if t is None:
                raise gdb.GdbError("det: det step-thread: the selected thread is not one of det's; name one")
        live = {x.num: x for x in s.live()}
        done = live[t].done if t in live else 0
        seq = m.thread_seq(t, done)
        if seq is None:
            raise gdb.GdbError(f"det: det step-thread: T{t} has no more recorded events "
                               f"(it did all {m.thread_count(t)})")
        what = f"its event {seq} ({m.what(m.event(seq))})"
        if s.relaxed:
            if m.thread_seq(t, done + 1) is None:
                s.resume(Goal(what, end=True, select=t))
            else:
                s.resume(Goal(what, thread=t, after_idx=done, select=t))
        else:
            target = m.seq_at(m.index_of(seq) + 1)
            s.goto(target, honor=True, select=t, what=what)


class DetUntil(gdb.Command):
    """Run until the next event of KIND, on object OBJ if given.

Usage: det until KIND [OBJ]
KIND is an event kind of events.def (mutex_lock, cond_wait, thread_create,
...) or `any` with OBJ. OBJ is an object number as det prints them
(`mutex 4` is 4) or an expression for its address (&account.lock)."""

    def __init__(self) -> None:
        super().__init__("det until", gdb.COMMAND_RUNNING)

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = running()
        w = words(arg)
        if not w or len(w) > 2:
            raise gdb.GdbError("det: det until: usage: det until KIND [OBJ]")
        kind = parse_kind(w[0], "det until")
        obj = parse_obj(s, w[1], "det until") if len(w) > 1 else None
        if kind is None and obj is None:
            raise gdb.GdbError("det: det until: `any` needs an object")
        pos = s.pos or s.position_from(s.live())
        after = pos.seq if pos.det_stop else pos.seq - 1
        found = s.model.find_next(after, kind, obj)
        what = " ".join(w)
        if found is None:
            raise gdb.GdbError(f"det: det until: no {what} after {s.model.label(pos.seq)} in the recording")
        s.resume(Goal(f"the next {what} (event {found})", kind=kind, obj=obj))


class DetBreakEvent(gdb.Command):
    """Stop before recorded events of a kind, on an object, or by a thread.

Usage: det break-event [KIND|any] [OBJ] [obj OBJ] [thread T]
       det break-event                list them
       det break-event delete [N...]  delete them (all without N)
       det break-event disable|enable N...
Examples: det break-event mutex_lock 4;  det break-event thread T2;
          det break-event any obj &b.lock
They stop `continue`, `det next`, `det until` and `det step-thread`;
`det goto` and `det back` pass them."""

    def __init__(self) -> None:
        super().__init__("det break-event", gdb.COMMAND_BREAKPOINTS)

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = session()
        w = words(arg)
        if not w:
            if not s.breaks:
                print("det: no break-events")
            for b in s.breaks:
                print(f"det: break-event {b.number}: {describe_break(s, b)}"
                      f"{'' if b.enabled else ' (disabled)'}; hit {b.hits} time(s)")
            return
        if w[0] in ("delete", "disable", "enable"):
            nums = [parse_int(x, f"det break-event {w[0]}") for x in w[1:]]
            targets = [b for b in s.breaks if not nums or b.number in nums]
            missing = set(nums) - {b.number for b in s.breaks}
            if missing:
                raise gdb.GdbError(f"det: no break-event {min(missing)}")
            for b in targets:
                if w[0] == "delete":
                    s.breaks.remove(b)
                else:
                    b.enabled = w[0] == "enable"
        else:
            kind = obj = thread = None
            i = 0
            if w[0] not in ("obj", "thread"):
                kind = parse_kind(w[0], "det break-event")
                i = 1
                if i < len(w) and w[i] not in ("obj", "thread"):
                    obj = parse_obj(s, w[i], "det break-event")
                    i += 1
            while i < len(w):
                if w[i] in ("obj", "thread") and i + 1 < len(w):
                    if w[i] == "obj":
                        obj = parse_obj(s, w[i + 1], "det break-event")
                    else:
                        thread = parse_thread(s, w[i + 1], "det break-event")
                    i += 2
                else:
                    raise gdb.GdbError(f"det: det break-event: unexpected '{w[i]}' (see `help det break-event`)")
            if kind is None and obj is None and thread is None:
                raise gdb.GdbError("det: det break-event: `any` needs an object or a thread")
            b = BreakEvent(s.next_break, kind, obj, thread)
            s.next_break += 1
            s.breaks.append(b)
            print(f"det: break-event {b.number}: {describe_break(s, b)}")
        if s.alive():
            s.arm()


def describe_break(s: Session, b: BreakEvent) -> str:
    from det.trace import kind_name

    parts = [f"before every {kind_name(b.kind) if b.kind is not None else 'event'}"]
    if b.obj is not None:
        parts.append(f"on {s.model.obj_name(b.obj)}")
    if b.thread is not None:
        parts.append(f"by T{b.thread}")
    return " ".join(parts)


class DetTimeline(gdb.Command):
    """A text swimlane of the events around the current one, one column per thread.

Usage: det timeline [FROM [TO]]
Each row is one event, in the recorded order, written in the column of the
thread that did it; `|` marks a thread running between its events, `:` one
waiting in a condition or barrier wait, `#` one blocked where the recording
ended; `=>` marks the current event. Default: 10 events either side."""

    def __init__(self) -> None:
        super().__init__("det timeline", gdb.COMMAND_STATUS)

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = session()
        m = s.model
        if m.total == 0:
            print("det: the recording has no events")
            return
        live = s.live() if s.alive() else []
        pos = s.pos.seq if s.pos is not None else m.first
        w = words(arg)
        if len(w) > 2:
            raise gdb.GdbError("det: det timeline: usage: det timeline [FROM [TO]]")
        if w:
            # A range is clamped to the recording (`det timeline 0 40` on a
            # 36-event trace shows events 0 to 35).
            lo = parse_bound(s, w[0], "det timeline")
            hi = parse_bound(s, w[1], "det timeline") if len(w) > 1 else m.seq_at(min(m.index_of(lo) + 20,
                                                                                     m.total - 1))
            if hi < lo:
                raise gdb.GdbError("det: det timeline: TO is before FROM")
            lo, hi = min(max(lo, m.first), m.end - 1), min(max(hi, m.first), m.end - 1)
        else:
            i = m.index_of(pos)
            lo, hi = m.seq_at(max(0, i - 10)), m.seq_at(min(m.total - 1, i + 10))
        for ln in m.timeline_text(lo, min(hi, m.end - 1), pos, live):
            print(ln)


class DetThread(gdb.Command):
    """Select thread T by its T-name, in its innermost frame of the program's code.

Usage: det thread T      (T: 2 or T2; gdb's own `thread N` takes gdb's numbers)"""

    def __init__(self) -> None:
        super().__init__("det thread", gdb.COMMAND_STACK)

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = running()
        if not arg.strip():
            raise gdb.GdbError("det: det thread: which thread? (det thread T2)")
        num = parse_thread(s, arg, "det thread")
        th = s.gdb_thread(num)
        if th is None:
            raise gdb.GdbError(f"det: det thread: T{num} is not running")
        th.switch()
        f = user_frame()
        if f is not None:
            f.select()
        print(f"det: T{num} is in {where(f) or '?'}")
        print(gdb.execute("frame", to_string=True).rstrip("\n"))


class DetThreads(gdb.Command):
    """gdb's thread numbers next to det's thread numbers, with each thread's state.

Usage: det threads"""

    def __init__(self) -> None:
        super().__init__("det threads", gdb.COMMAND_STATUS)

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = running()
        live = s.live()
        cur = gdb.selected_thread()
        by_lwp = {t.ptid[1]: t for t in gdb.selected_inferior().threads()}
        print(f"  {'gdb':<5}{'det':<5}{'LWP':<9}{'state':<16}{'done':<12}where")
        for t in live:
            th = by_lwp.get(t.lwp) if t.lwp is not None else None
            if th is None:
                if t.state != "free":
                    print(f"  {'-':<5}T{t.num:<4}{'-':<9}{t.state:<16}{t.done}/{t.count}")
                continue
            mark = "*" if th == cur else " "
            state = t.state
            if s.pos is not None and s.pos.det_stop and s.pos.thread == t.num:
                state = "at its event"
            elif t.ended_blocked:
                state = "blocked (end)"
            elif t.state == "running" and t.at_turnstile:
                state = "waits its turn"
            print(f"{mark} {th.num:<5}T{t.num:<4}{t.lwp:<9}{state:<16}{str(t.done) + '/' + str(t.count):<12}"
                  f"{thread_where(th)}")
        known = set(s.lwp_to_num)
        for lwp, th in by_lwp.items():
            if lwp not in known:
                print(f"  {th.num:<5}{'-':<5}{lwp:<9}(not a det thread)")


class DetDisas(gdb.Command):
    """Disassemble around thread T's position in the program's code (the call it
waits in), with symbols; T defaults to the selected thread.

Usage: det disas [T]
Needs the Python packages capstone and pyelftools in gdb's Python
(`make` installs them into det's .venv, which det adds to gdb's path)."""

    def __init__(self) -> None:
        super().__init__("det disas", gdb.COMMAND_DATA)

    def invoke(self, arg: str, from_tty: bool) -> None:
        s = running()
        try:
            import det_gdb_disas
        except ImportError as e:
            raise gdb.GdbError(f"det: det disas: {e}") from None
        err = det_gdb_disas.missing(s.cfg.get("site_packages", []))
        if err:
            raise gdb.GdbError(f"det: det disas: {err}")
        num = parse_thread(s, arg, "det disas") if arg.strip() else s.det_num()
        th = s.gdb_thread(num) if num is not None else gdb.selected_thread()
        if th is None:
            raise gdb.GdbError(f"det: det disas: T{num} is not running")
        with on_thread(th):
            f = user_frame() or gdb.newest_frame()
            pc = f.pc()
            call_site = f != gdb.newest_frame()
        modules = s.model.trace.modules()
        for ln in det_gdb_disas.disassemble(pc, modules, gdb.selected_inferior().read_memory, call_site,
                                            f"T{num}" if num is not None else "this thread"):
            print(ln)


class DetFrameFilter:
    """Hides libdet.so's frames from `bt` (gdb's frame-filter protocol).

    det's frames are how a thread waits for its turn, never the program's
    business; `set det show-frames on` (or gdb's `bt -no-filters`) shows
    them. Frame numbers stay gdb's, so `frame N` still means what bt says."""

    def __init__(self) -> None:
        self.name = "det"
        self.priority = 100
        self.enabled = True
        gdb.frame_filters[self.name] = self

    def filter(self, frames: Iterator) -> Iterator:
        return (d for d in frames if not in_det(d.inferior_frame()))


class DetSetPrefix(gdb.Command):
    """det's settings: `set det show-frames on|off`."""

    def __init__(self, verb: str) -> None:
        super().__init__(f"{verb} det", gdb.COMMAND_DATA, gdb.COMPLETE_NONE, prefix=True)


class DetShowFrames(gdb.Parameter):
    """Whether backtraces show det's own frames (libdet.so: how a thread waits for its
turn). Off by default: `bt` shows the program's frames and the libraries it called."""

    set_doc = "Set whether backtraces show det's own frames."
    show_doc = "Show whether backtraces show det's own frames."

    def __init__(self, flt: DetFrameFilter) -> None:
        super().__init__("det show-frames", gdb.COMMAND_STACK, gdb.PARAM_BOOLEAN)
        self.value = False
        self.flt = flt

    def get_set_string(self) -> str:
        self.flt.enabled = not self.value
        return f"det: backtraces {'show' if self.value else 'hide'} det's frames"

    def get_show_string(self, svalue: str) -> str:
        return f"det: backtraces {'show' if self.value else 'hide'} det's frames"


def after_thread_command() -> None:
    """Run by gdb's hookpost-thread: `thread N` selects N's frame in the program's code."""
    if SESSION is None or not SESSION.alive():
        return
    try:
        if frame_kind(gdb.selected_frame()) != "det":
            return
        f = user_frame()
    except gdb.error:
        return
    if f is not None and f != gdb.selected_frame():
        f.select()
        num = SESSION.det_num()
        who = f"T{num}" if num is not None else "this thread"
        print(f"det: {who} is in {where(f)} (frame #{f.level()}; `set det show-frames on` shows det's frames)")
        print(gdb.execute("frame", to_string=True).rstrip("\n"))


def _stop_handler(event: gdb.StopEvent) -> None:
    if SESSION is not None:
        SESSION.on_stop(event)


def _exit_handler(event) -> None:
    if SESSION is not None:
        SESSION.on_exited(event)


def step_hook() -> None:
    """Run by gdb's hook-next/hook-step/hook-until/hook-advance (see start)."""
    if SESSION is not None:
        SESSION.step_out_of_det()


def gdb_quote(s: str) -> str:
    return s if s and all(c.isalnum() or c in "/._-+,:@" for c in s) else '"' + s.replace('"', '\\"') + '"'


def start(config_path: str) -> None:
    """Set gdb up for the replay described by config_path and stop at the first event."""
    global SESSION
    with open(config_path, encoding="utf-8") as f:
        cfg = json.load(f)
    for p in reversed(cfg.get("pythonpath", [])):
        if p not in sys.path:
            sys.path.insert(0, p)
    sys.modules.setdefault("det_gdb", sys.modules[__name__])
    try:
        s = Session(cfg)
    except Exception as e:  # noqa: BLE001 - det.errors.DetError and sqlite/OS errors: one line, no traceback
        raise gdb.GdbError(f"det: {e}") from None
    SESSION = s
    s.model.names.live = pointer_expression
    wrapper = " ".join(shlex.quote(a) for a in cfg["exec_wrapper"])
    for cmd in ("set startup-with-shell on", f"set exec-wrapper {wrapper}", "set breakpoint pending on",
                f"file {gdb_quote(cfg['binary'])}"):
        gdb.execute(cmd, to_string=True)
    # det's own sources are not the user's: `step` does not enter them.
    for pat in cfg.get("skip_files", []):
        gdb.execute(f"skip -gfile {pat}", to_string=True)
    for cmd in ("next", "step", "until", "advance"):
        gdb.execute(f"define hook-{cmd}\npython det_gdb.step_hook()\nend", to_string=True)
    gdb.execute("define hookpost-thread\npython det_gdb.after_thread_command()\nend", to_string=True)
    DetSetPrefix("set")
    DetSetPrefix("show")
    DetShowFrames(DetFrameFilter())
    gdb.events.stop.connect(_stop_handler)
    gdb.events.exited.connect(_exit_handler)
    for cls in (DetPrefix, DetStatus, DetWhen, DetNext, DetBack, DetGoto, DetStepThread, DetUntil, DetBreakEvent,
                DetTimeline, DetThread, DetThreads, DetDisas):
        cls()
    import det_gdb_reverse

    det_gdb_reverse.register()
    s.make_breakpoints()
    m = s.model
    mode = "relaxed" if s.relaxed else "ordered"
    print(f"det: replaying {cfg['trace']}: {m.meta.get('binary')}, {m.total} events, {len(m.threads)} threads, "
          f"{mode}; recorded: {m.recorded_end()}")
    print("det: `help det` lists det's commands")
    goto = cfg.get("goto")
    if goto is None:
        s.resume(Goal("the first event", seq=m.first, first=True, honor=False) if m.total
                 else Goal("the start", first=True, end=True, honor=False))
    else:
        s.goto(int(goto))


def start_or_say(config_path: str) -> None:
    """start(), with any failure said in one line (the init script's entry)."""
    try:
        start(config_path)
    except gdb.GdbError as e:
        print(str(e) if str(e).startswith("det:") else f"det: {e}", file=sys.stderr)
    except (OSError, ValueError, KeyError) as e:
        print(f"det: cannot start the replay: {e}", file=sys.stderr)
