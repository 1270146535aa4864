"""What det's gdb commands know from the trace, and how they say it.

This module holds everything of the gdb extension that does not need gdb:
the recorded schedule (which event is where, per thread and globally), the
names and source lines of events, and the text of `det status`,
`det timeline` and divergence reports, built from a snapshot of the live
threads that the det_gdb package reads from the program.

Rules of this file:
  - Standard library and det's stdlib-only modules (det.trace, det.events,
    det.analysis, det.ending, det.symbols) only: gdb's embedded Python is the system
    python3, not the project's virtualenv.
  - Positions are event seq numbers, as in the trace and in every det
    message; `Schedule.end` (one past the last seq) is "after the last
    event". Indexes into the global order are used only to count (next N,
    back N) and never shown.
  - Nothing here reads program memory: det_gdb passes `LiveThread`
    snapshots in, so the text can be checked without a running program.
"""

from __future__ import annotations

import bisect
import signal
from array import array
from dataclasses import dataclass

from det import events as ev
from det.analysis import DIVERGENCE_REASONS, HINT_SECONDS, Waiter, block_report, describe_divergence, holders, race_hint
from det.ending import ending
from det.names import ObjectNames
from det.symbols import Symbolizer
from det.trace import Event, Trace, kind_name, objkind_name, outcome_words

# The orders a replay under gdb keeps (replayer/det_replay/gdb.py picks one;
# the banner says what it means, `det status` names it).
REPLAY_MODES = {
    "strict": "every event and every shared-memory access in its recorded place (a --strict recording)",
    "all-ordered": "every event in its recorded place, inputs too; code between events runs freely",
    "relaxed": "each object's events in their recorded order (--relaxed)",
}

ROLE = {k.number: k.role for k in ev.EVENTS}
KIND_BY_NAME = {k.name.lower(): k.number for k in ev.EVENTS}
ACQUIRE_ROLES = {"ACQUIRE", "JOIN", "WAKE"}


def kind_number(name: str) -> int | None:
    """The event kind called `name` (events.def, any case), or None."""
    return KIND_BY_NAME.get(name.strip().lower())


@dataclass
class LiveThread:
    """One det thread as det_gdb read it from the program's memory."""

    num: int            # det thread number (T<num>)
    state: str          # free | starting | running | exiting | parked
    done: int           # events completed
    count: int          # events recorded for it
    at_turnstile: bool  # waiting for its turn (or parked)
    blocked_kind: int = 0   # parked past its last event: what it was calling
    blocked_obj: int = 0
    blocked_ra: int = 0
    gdb_num: int | None = None  # gdb's thread number, if gdb knows the thread
    lwp: int | None = None
    where: str = ""     # its first frame in the program's code, e.g. "transfer at x.c:33"
    signal: str = ""    # the signal gdb stopped it with (SIGABRT), if that was the last stop

    @property
    def ended_blocked(self) -> bool:
        """Past its last recorded event, in a call the recording never saw return."""
        return bool(self.blocked_kind) and self.done >= self.count


class Schedule:
    """The recorded schedule of one trace, indexed for the gdb commands."""

    def __init__(self, path: str) -> None:
        self.trace = Trace(path)
        tr = self.trace
        self.path = path
        self.meta = tr.meta
        self.outcome = tr.outcome()
        self.threads = {t["tid"]: t for t in tr.threads()}
        self.objects = tr.objects()
        self.sites = tr.sites()
        self.sym = Symbolizer(tr.modules())
        # Global order and per-thread order, as compact arrays: a 1M-event
        # trace costs ~16 MB here and is indexed without SQL afterwards.
        self.seqs = array("q")
        tids = array("i")
        for seq, tid in tr.q("SELECT seq, tid FROM event_rows ORDER BY seq"):
            self.seqs.append(seq)
            tids.append(tid)
        self.by_thread: dict[int, array] = {t: array("q") for t in self.threads}
        for seq, tid in zip(self.seqs, tids, strict=True):
            self.by_thread.setdefault(tid, array("q")).append(seq)
        self.tids = tids
        self.total = len(self.seqs)
        self.first = self.seqs[0] if self.total else 0
        self.end = self.seqs[-1] + 1 if self.total else 0
        self._events: dict[int, Event] = {}
        self.thread_by_obj = {t["obj"]: tid for tid, t in self.threads.items()}
        self.blocked = {tid: (kind, obj) for tid, kind, obj, _ra in tr.blocked()}
        # det's one naming scheme (det.names); det_gdb sets names.live
        # to find the pointer expression that reaches a heap object.
        self.names = ObjectNames(tr, self.sym)

    def close(self) -> None:
        self.trace.close()

    # --- positions -------------------------------------------------------
    def index_of(self, seq: int) -> int:
        """Position of seq in the global order (total for the end)."""
        if seq >= self.end:
            return self.total
        return bisect.bisect_left(self.seqs, seq)

    def seq_at(self, index: int) -> int:
        return self.end if index >= self.total else self.seqs[index]

    def has(self, seq: int) -> bool:
        i = bisect.bisect_left(self.seqs, seq)
        return i < self.total and self.seqs[i] == seq

    def thread_of(self, seq: int) -> int:
        return self.tids[self.index_of(seq)]

    def idx_of(self, seq: int) -> int:
        """The event's index among its thread's events."""
        return bisect.bisect_left(self.by_thread[self.thread_of(seq)], seq)

    def thread_seq(self, tid: int, idx: int) -> int | None:
        s = self.by_thread.get(tid)
        return s[idx] if s is not None and 0 <= idx < len(s) else None

    def thread_count(self, tid: int) -> int:
        return len(self.by_thread.get(tid, ()))

    def event(self, seq: int) -> Event:
        e = self._events.get(seq)
        if e is None:
            e = self.trace.event(seq)
            if e is None:
                raise KeyError(seq)
            if len(self._events) > 4096:
                self._events.clear()
            self._events[seq] = e
        return e

    def label(self, seq: int) -> str:
        """`position` for messages: "event 12" or "the end"."""
        return "the end of the recording" if seq >= self.end else f"event {seq}"

    def of_total(self, seq: int) -> str:
        if seq >= self.end:
            return f"the end of the recording (all {self.total} events done)"
        i = self.index_of(seq)
        if i == seq:
            return f"event {seq} of {self.total}"
        return f"event {seq} (number {i} of {self.total})"

    # --- names -----------------------------------------------------------
    def obj_name(self, obj: int) -> str:
        """`mutex 4 (a)`, `T1`: det.names' label ("" for no object)."""
        return self.names.label(obj)

    def short(self, e: Event) -> str:
        """A timeline cell: `lock mutex4`, `create T2`, `join T1`."""
        k = ev.BY_NUMBER.get(e.kind)
        name = kind_name(e.kind)
        if k is not None:
            prefix = k.objkind.lower() + "_"
            name = name[len(prefix):] if name.startswith(prefix) else name
        if ROLE.get(e.kind) == "CREATE":
            return f"{name} T{e.aux}"
        if not e.obj:
            return name
        kind = objkind_name(self.objects.get(e.obj, (0, 0))[0])
        if kind == "thread" and e.obj in self.thread_by_obj:
            return f"{name} T{self.thread_by_obj[e.obj]}" if ROLE.get(e.kind) != "START" else name
        return f"{name} {kind}{e.obj}"

    def what(self, e: Event) -> str:
        """`mutex_lock mutex 4`, `thread_create T2`."""
        name = kind_name(e.kind)
        if ROLE.get(e.kind) == "CREATE":
            return f"{name} T{e.aux}"
        o = self.obj_name(e.obj)
        return f"{name} {o}" if o else name

    def where(self, e: Event) -> str:
        return self.wheres([e])[e.seq]

    def wheres(self, evs: list[Event]) -> dict[int, str]:
        """seq -> `file.c:44` for events, looked up in one batch."""
        ras = {e.seq: self.sites.get(e.site, 0) for e in evs}
        # The site of a thread's start and exit is its start routine, not a return address.
        starts = {e.seq for e in evs if ROLE.get(e.kind) in ("START", "EXIT")}
        locs = self.sym.lookup([a for s, a in ras.items() if a and s not in starts])
        out = {}
        for s, a in ras.items():
            if not a:
                out[s] = "?"
            elif s in starts:
                out[s] = self.sym.one(a, return_address=False).long()
            else:
                out[s] = locs[a].short()
        return out

    def ra_where(self, ra: int) -> str:
        return self.sym.one(ra).short() if ra else "?"

    def describe(self, seq: int) -> str:
        """`T1 mutex_lock mutex 4 at x.c:33`"""
        if seq >= self.end:
            return "the end of the recording"
        e = self.event(seq)
        return f"T{e.tid} {self.what(e)} at {self.where(e)}"

    def find_next(self, after: int, kind: int | None, obj: int | None, tid: int | None = None) -> int | None:
        """The first event after seq `after` matching kind/obj/thread, or None."""
        conds, args = ["e.seq > ?"], [after]
        for col, val in (("c.kind", kind), ("c.obj", obj), ("e.tid", tid)):
            if val is not None:
                conds.append(f"{col} = ?")
                args.append(val)
        return self.trace.q1("SELECT min(e.seq) FROM event_rows e JOIN calls c ON c.call = e.call "
                             f"WHERE {' AND '.join(conds)}", tuple(args))

    def objects_at(self, address: int) -> list[tuple[int, int]]:
        """(obj, first_seq) of the recorded objects at an address, oldest first."""
        return [(o, f) for o, f in self.trace.q(
            "SELECT obj, first_seq FROM objects WHERE address = ? ORDER BY first_seq", (address,))]

    def ended_blocked(self) -> bool:
        """The recording was stopped with threads still waiting (a hang)."""
        o = self.outcome
        return o is not None and o["status"] not in ("exited", "signaled")

    def ended_by(self, signal_name: str) -> bool:
        """Did the recorded run end by this signal (a name as gdb says it, SIGABRT)?"""
        o = self.outcome
        if o is None or o["status"] != "signaled":
            return False
        try:
            return signal.Signals(int(o["signal"])).name == signal_name
        except (ValueError, TypeError):
            return False

    def recorded_end(self) -> str:
        """The recording's outcome in det's one wording, with what det said
        when it stopped the program."""
        o = self.outcome
        if o is not None and o["status"] == "signaled":
            if getattr(self, "_ending", None) is None:
                self._ending = ending(self.trace, self.names, self.sym).line  # which thread died of what, where
            return self._ending
        said = o is not None and o["status"] not in ("exited", "signaled") and o.get("message")
        return outcome_words(o) + (f": {o['message']}" if said else "")

    # --- text ------------------------------------------------------------
    def status_text(self, pos: int, current: int | None, live: list[LiveThread], mode: str,
                    selected: int | None = None) -> list[str]:
        """`det status`: the position, then one line per thread."""
        mode = f"{mode} replay"  # REPLAY_MODES
        lines = []
        if pos >= self.end:
            lines.append(f"det: at {self.of_total(pos)}, {mode}; recorded: {self.recorded_end()}")
        elif current is not None:
            lines.append(f"det: at {self.of_total(pos)}, {mode}: T{current} is about to do "
                         f"{self.describe(pos).split(' ', 1)[1]}")
        else:
            lines.append(f"det: at {self.of_total(pos)}, {mode} (stopped between events)")
        held = holders(self.trace, min(pos, self.end))
        by_thread: dict[int, list[int]] = {}
        for obj, ts in held.items():
            for t in ts:
                by_thread.setdefault(t, []).append(obj)
        nexts = {}
        for t in live:
            s = self.thread_seq(t.num, t.done)
            if s is not None:
                nexts[t.num] = s
        locs = self.wheres([self.event(s) for s in nexts.values()])
        for t in sorted(live, key=lambda t: t.num):
            if t.state == "free" and t.done == 0:
                if t.count:
                    first = self.thread_seq(t.num, 0)
                    lines.append(f"  T{t.num}: not started yet (created by event "
                                 f"{self.threads[t.num]['create_seq']}; first event {first})")
                continue
            mark = "*" if t.num == selected else " "
            parts = [f"{mark} T{t.num}: {t.done}/{t.count} done"]
            mine = sorted(by_thread.get(t.num, []))
            if mine:
                parts.append("holds " + ", ".join(self.obj_name(o) for o in mine))
            s = nexts.get(t.num)
            if s is not None:
                e = self.event(s)
                nxt = f"next: event {s} {self.what(e)} at {locs[s]}"
                owners = [u for u in held.get(e.obj, {}) if u != t.num]
                if owners and ROLE.get(e.kind) in ACQUIRE_ROLES:
                    nxt += f" (held by {', '.join(f'T{u}' for u in sorted(owners))})"
                parts.append(nxt)
                if s == pos and t.num == current:
                    parts.append("<- about to do it")
                elif t.signal:
                    parts.append(f"stopped by {t.signal}")
                elif t.state == "running" and t.at_turnstile:
                    parts.append("waits for its turn")
                elif t.state == "running":
                    parts.append("running")
            elif t.signal:
                parts.append(f"no more recorded events; stopped by {t.signal}")
            elif t.ended_blocked:
                o = self.obj_name(t.blocked_obj)
                on = f" on {o}" if o else ""
                parts.append(f"no more recorded events; blocked in {kind_name(t.blocked_kind)}{on} "
                             f"at {self.ra_where(t.blocked_ra)}, where the recording ended")
            elif t.state in ("exiting", "free"):
                parts.append("exited")
            else:
                parts.append(f"no more recorded events ({t.state})")
            if t.where:
                parts.append(f"in {t.where}")
            lines.append("; ".join(parts))
        waiters = [Waiter(t.num, t.blocked_kind, t.blocked_obj, t.blocked_ra)
                   for t in live if t.ended_blocked]
        if waiters and pos >= self.end and self.ended_blocked():
            rep = block_report(self.trace, waiters, self.sym, None, self.names)
            lines.append(self.cycle_text(rep.summary, rep.cycle, waiters, held))
        return lines

    def cycle_text(self, summary: str, cycle: list[int], waiters: list[Waiter],
                   held: dict[int, dict[int, int]]) -> str:
        """The deadlock line, with where each lock was taken and is wanted."""
        if not cycle:
            return summary
        waits = {w.tid: w for w in waiters}
        parts = []
        for t in cycle:
            w = waits[t]
            mine = [o for o, ts in held.items() if t in ts and any(o == waits[u].obj for u in cycle if u != t)]
            got = ""
            if mine:
                s = self.trace.q1("SELECT max(e.seq) FROM event_rows e JOIN calls c ON c.call = e.call "
                                  "WHERE e.tid = ? AND c.obj = ?", (t, mine[0]))
                got = f" (taken at {self.where(self.event(s))})" if s is not None else ""
            has = self.obj_name(mine[0]) if mine else "?"
            parts.append(f"T{t} holds {has}{got} and waits for {self.obj_name(w.obj)} at {self.ra_where(w.ra)}")
        return "deadlock: " + "; ".join(parts)

    def timeline_text(self, lo: int, hi: int, pos: int, live: list[LiveThread], width: int = 16) -> list[str]:
        """A swimlane of events lo..hi (seqs, inclusive), one column per thread."""
        i0, i1 = self.index_of(lo), min(self.index_of(hi), self.total - 1)
        rows = [self.event(self.seqs[i]) for i in range(i0, i1 + 1)]
        locs = self.wheres(rows)
        live_by = {t.num: t for t in live}
        shown = [t for t in sorted(self.threads) if self._alive_in(t, lo, hi)] or sorted(self.threads)
        out = [f"{'':3}{'event':>8}  " + "".join(f"{'T' + str(t):<{width}}" for t in shown) + "where"]
        done = {t: bisect.bisect_left(self.by_thread.get(t, array("q")), lo) for t in shown}
        for e in rows:
            cells = [_fit(self.short(e) if t == e.tid else self._lane(t, e.seq, done[t]), width) for t in shown]
            mark = "=> " if e.seq == pos else "   "
            out.append(f"{mark}{e.seq:>8}  " + "".join(cells) + f"T{e.tid} at {locs[e.seq]}")
            if e.tid in done:
                done[e.tid] += 1
        if hi >= self.end - 1 or pos >= self.end:
            cells = []
            for t in shown:
                lt = live_by.get(t)
                if pos >= self.end and lt is not None and lt.ended_blocked:
                    blk = (lt.blocked_kind, lt.blocked_obj)
                else:
                    blk = self.blocked.get(t)
                cells.append(_fit(self._blocked_cell(blk) if blk else "", width))
            mark = "=> " if pos >= self.end else "   "
            out.append(f"{mark}{'end':>8}  " + "".join(cells) + self.recorded_end())
        out.append("   |: running between its events   :: waiting in a condition or barrier wait   "
                   "#: blocked in a call the recording never saw return   =>: the current event")
        return out

    def _blocked_cell(self, blk: tuple[int, int]) -> str:
        kind, obj = blk
        fake = Event(0, 0, 0, kind, obj, 0, 0, 0, 0)
        return "# " + self.short(fake)

    def _alive_in(self, t: int, lo: int, hi: int) -> bool:
        """Does thread t exist somewhere in lo..hi?"""
        s = self.by_thread.get(t)
        if not s:
            return False
        created = self.threads.get(t, {}).get("create_seq", -1)
        if created is not None and created > hi:
            return False
        return not (s[-1] < lo and self._exited_after_last(t))

    def _exited_after_last(self, t: int) -> bool:
        s = self.by_thread.get(t)
        return bool(s) and ROLE.get(self.event(s[-1]).kind) == "EXIT"

    def _lane(self, t: int, seq: int, done: int) -> str:
        """Thread t's lane at event seq, when `done` of its events come before seq."""
        s = self.by_thread.get(t)
        created = self.threads.get(t, {}).get("create_seq", -1)
        if not s or (created is not None and created >= seq):
            return ""  # not created yet
        if done >= len(s):
            if t in self.blocked:
                return self._blocked_cell(self.blocked[t])
            return "" if self._exited_after_last(t) else "|"
        if done > 0:
            role = ROLE.get(self.event(s[done - 1]).kind)
            if role == "EXIT":
                return ""
            if role == "WAIT":  # a condition wait or a barrier arrival: waits for its wake
                return ":"
        return "|"

    def divergence_text(self, div: dict[str, int], what: str) -> str:
        """One line, as detreplay says it, with its race hint (a default-mode trace)."""
        text = describe_divergence(self.names, div, what)
        at = div["seq"] if div["seq"] != 2**64 - 1 else None
        hint = race_hint(self.trace, self.names, DIVERGENCE_REASONS.get(div["reason"], "?"), what, at, HINT_SECONDS)
        return f"{text}; {hint[0]}" if hint else text


def _fit(text: str, width: int) -> str:
    text = text if len(text) < width - 1 else text[: width - 2] + "~"
    return f"{text:<{width}}"
