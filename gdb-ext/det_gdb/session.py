"""One replay under gdb: the Session (the trace's schedule, det's control
block in the program, the goals of a resume, the stops) and the current one.

How it moves the program: libdet.so (replayer/enforce.c, include/det/gdb.h)
checks `det_gdb_control` before every recorded event and calls
det_gdb_stop() when an armed condition matches, with every other thread
settled at its turnstile. The Session arms the control block with memory
writes and keeps silent internal breakpoints on det_gdb_ready (re-arm after
each (re)start), det_gdb_stop (decide, in Python, whether this is the stop
wanted), det_gdb_diverged, and, to find the end of a recording that hung,
on libdet's `park` and libc's `_exit`.

Rules of this file (and the package's, see det_gdb/__init__.py):
  - det's structures are read through gdb's expression evaluator with their
    real debug types (libdet.so is built with -g): no offsets in Python.
  - Going back resumes the nearest snapshot (det_gdb.snapshots), else
    restarts the program (`run`), and replays forward to the
    target with the user's breakpoints disabled meanwhile; their
    breakpoints, watchpoints and displays are kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import gdb

from det_gdb.frames import det_caller_frame, frame_kind, in_det, in_user, user_frame, where
from det_gdb.output import Relay
from det_gdb.snapshots import Snapshot, Snapshots

UINT64_MAX = 2**64 - 1

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
    ready: bool = False           # stop at det_gdb_ready, before any event (the re-executions of det_gdb.reexec)

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


def model_module():
    """det_gdb_model, imported late: sys.path gets det's package directory from the config."""
    import det_gdb_model

    return det_gdb_model


class Session:
    """One replay under gdb: the trace, the control block, the goals."""

    def __init__(self, cfg: dict) -> None:
        m = model_module()
        self.cfg = cfg
        self.model = m.Schedule(cfg["trace"])
        self.relaxed = bool(cfg.get("relaxed"))
        self.mode = str(cfg.get("mode") or ("relaxed" if self.relaxed else "all-ordered"))  # REPLAY_MODES
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
        self.output: Relay | None = None        # the program's output (det_gdb.output)
        self.snapshots = Snapshots(self.model.first, self.model.total, enabled=not self.relaxed)

    # --- the program's memory ------------------------------------------------
    def alive(self) -> bool:
        inf = gdb.selected_inferior()
        return inf is not None and inf.pid != 0

    def _slots(self) -> gdb.Value:
        if self.slot_base is None:
            self.slot_base = region_slots()
        return self.slot_base

    def _state_names(self) -> dict[int, str]:
        if not self.states:
            self.states = thread_state_names()
        return self.states

    def live(self) -> list:
        """Every recorded thread's slot, as det_gdb_model.LiveThread."""
        m = model_module()
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
        gdb.execute("python det_gdb.session.SESSION._make_breakpoints()", to_string=True)

    def _make_breakpoints(self) -> None:
        self.bps = {
            "ready": DetBreakpoint("det_gdb_ready", self.on_ready),
            "thread": DetBreakpoint("det_gdb_thread", self.on_thread),
            "stop": DetBreakpoint("det_gdb_stop", self.on_det_stop),
            "diverged": DetBreakpoint("det_gdb_diverged", self.on_diverged),
            "snapshot": DetBreakpoint("det_gdb_snapshot", self.on_snapshot),
            "park": DetBreakpoint("-source enforce.c -function park", self.on_park),
            "exit": DetBreakpoint("_exit", self.on_exit_call),
        }
        self.bps["exit"].enabled = False

    def fresh_run(self, output_at: list[int] | None = None) -> None:
        """A (re)started program, or a snapshot resumed: forget the last one's state."""
        if self.output is not None:
            self.output.new_run(output_at)
        self.slot_base = None
        self.lwp_to_num = {}
        self.divergence = None
        self.signalled = None

    def on_ready(self) -> bool:
        # A (re)start: the region was reset, det_gdb_control is fresh.
        self.fresh_run()
        self.arm()
        if not self.relaxed and self.deferred is not None:  # (det moves the program)
            self.snapshots.arm(None)
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

    def on_snapshot(self) -> bool:
        return self.snapshots.on_snapshot(self.output.positions() if self.output is not None else [])

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
        if self.snapshots.attaching:
            return  # gdb stopped the snapshot it attached to: not a stop of the replay
        self.last_event = event
        if self.output is not None:
            self.output.drain()
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
            if goal is not None and goal.end and self.signalled is not None \
                    and self.model.ended_by(self.signalled[1]):
                # a crash is where its recording ended
                who = f"T{here}" if here is not None else "the program"
                uf = user_frame()
                at = f" in {where(uf)}" if uf is not None and frame_kind(uf) == "program" else ""
                lines.append(f"det: at the end of the recording: {who} received {self.signalled[1]}{at}, as the "
                             f"recorded run ended (recorded: {self.model.recorded_end()}); `continue` lets it end")
            elif goal is not None:
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
            lines += [ln for ln in self.model.status_text(self.model.end, None, live, self.mode)[1:]
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
        if self.output is not None:
            self.output.drain()
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
        snaps = self.snapshots
        set_also = snaps.also_at is None and goal.seq is not None and not self.relaxed
        if set_also:
            snaps.also_at = snaps.window_start(self.model, goal.seq)
        try:
            with self.quiet(), self.user_breakpoints(goal.honor):
                if restart or not self.alive() or self.must_restart(goal):
                    self.goal = goal
                    snap = self.snapshots.nearest(goal.seq) if goal.seq is not None and not self.relaxed else None
                    if snap is None or not self.resume_snapshot(snap):
                        self.restart()
                else:
                    self.goal = goal
                    self.arm()
                    if not self.relaxed and self.pos is not None:
                        self.snapshots.arm(self.pos.seq if self.pos.det_stop else self.pos.seq - 1)
                    gdb.execute("continue", to_string=True)
        finally:
            if self.alive() and not self.relaxed:
                try:
                    self.snapshots.disarm()
                except gdb.error:
                    pass
            if set_also:
                snaps.also_at = None
            out, self.deferred = self.deferred, None
            self.bps["exit"].enabled = False
            self.goal = None
            for ln in [] if silent else out:
                print(ln)

    @contextmanager
    def ending_quietly(self) -> Iterator[None]:
        """The program's end in here is det's doing (a restart, a resume): say nothing."""
        self.quiet_exit = True
        try:
            yield
        finally:
            self.quiet_exit = False

    def restart(self) -> None:
        with self.ending_quietly():
            gdb.execute("run", to_string=True)

    def resume_snapshot(self, snap: Snapshot) -> bool:
        """Kill the program and go on from a snapshot (det_gdb.snapshots);
        False: it is gone (the caller restarts the program instead)."""
        self.snapshots.take_out(snap)
        # (gdb's CLI prints where an attach stopped past any to_string)
        quiet_cli = gdb.parameter("suppress-cli-notifications")
        gdb.execute("set suppress-cli-notifications on", to_string=True)
        try:
            with self.ending_quietly():
                if self.alive():
                    gdb.execute("kill", to_string=True)
            self.snapshots.attaching = True
            gdb.execute(f"attach {snap.pid}", to_string=True)
            self.snapshots.attaching = False
            self.fresh_run(snap.output)
            gdb.parse_and_eval("det_gdb_control.snap_go = 1")
            self.arm()
            self.snapshots.arm(snap.seq)
            gdb.execute("continue", to_string=True)
        except gdb.error:
            return False
        finally:
            gdb.execute(f"set suppress-cli-notifications {'on' if quiet_cli else 'off'}", to_string=True)
            self.snapshots.attaching = False
        return True

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
        if (seq >= self.model.end and self.alive() and not honor and self.signalled is not None
                and self.model.ended_by(self.signalled[1])):
            print(f"det: already at the end of the recording: T{self.signalled[0]} stopped by {self.signalled[1]}, "
                  f"as the recorded run ended (recorded: {self.model.recorded_end()}); `continue` lets it end")
            return
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
            # An entry stub (preload/stack.c, no debug information): it
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


def region_slots() -> gdb.Value:
    """The replay region's thread slots, in the program's memory (libdet.so's det_hdr)."""
    return gdb.parse_and_eval("(struct det_slot *)((char *)det_hdr + det_hdr->slots_off)")


def thread_state_names() -> dict[int, str]:
    """enum det_thread_state's values by number: running, parked, ..."""
    t = gdb.lookup_type("enum det_thread_state")
    return {int(f.enumval): f.name.lower().removeprefix("det_ts_") for f in t.fields()}


NO_REPLAY = "det: no replay loaded (start gdb with `detreplay --gdb TRACE`)"  # (det_gdb.live words it for a replica)


def prefilter(clauses: list[tuple[int | None, int | None, int | None, int | None]]) -> tuple[int, int, int, int]:
    """det_gdb_control's (stop_seq, stop_thread, stop_kind, stop_obj) for a set of wanted stops.

    The runtime stops when seq >= stop_seq, OR the thread is stop_thread,
    OR the kind (and object, if set) match, OR (without a kind) the object
    matches. Each clause (seq, thread, kind, obj) is one wanted stop; the
    fields can hold one thread and one kind/object each, so clauses that do
    not fit share the superset "every event" (stop_seq 0), and the Session
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


def session() -> Session:
    if SESSION is None:
        raise gdb.GdbError(NO_REPLAY)
    return SESSION


def running() -> Session:
    s = session()
    if not s.alive():
        raise gdb.GdbError("det: the program is not running; `det goto N` starts the replay again")
    return s
