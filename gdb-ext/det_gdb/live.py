"""gdb attached to a live replica (`detreplay --follow --gdb`, a replica
that `detrec --follow` started): the recording is still being made (or its
program died and the replica holds its state: `detrec --follow --standby`),
so there is no trace to read. What det knows is the replica's status file
(its progress and lag, det.replay.follow writes it) and the replay region in
the program's memory (each thread's state, events done, next event).

While gdb holds the replica stopped the recording goes on and the replica
falls behind; `continue` lets it catch up; `detach` or `quit` leaves it
following as before.

Rules of this file (as every det_gdb module): no inferior function calls,
standard library and det's stdlib-only modules only, every user error one
gdb.GdbError line.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator

import gdb

from det_gdb import session
from det_gdb.frames import det_caller_frame, in_det, on_thread, thread_where, user_frame


class Replica:
    """The replica gdb is attached to: where its status is, whose it is."""

    def __init__(self, cfg: dict) -> None:
        self.status_path = str(cfg["status"])
        self.pid = int(cfg["replica_pid"])
        self.binary = str(cfg.get("binary") or "")

    def status(self) -> dict:
        try:
            with open(self.status_path, encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def headline(self) -> str:
        st = self.status()
        if not st:
            return f"det: the live replica (pid {self.pid}) of {self.binary} has ended"
        state = st.get("state")
        where = (f"{st.get('done')} of {st.get('captured')} recorded events done, {st.get('lag_events')} events / "
                 f"{st.get('lag_s')} s behind the recording")
        if state == "holding":
            at = ", stopped at the signal it died of" if st.get("held_at") == "fault" else ""
            return (f"det: standby replica (pid {self.pid}) of {self.binary}: the program died; this is its state at "
                    f"the recording's last event{at} ({st.get('done')} events)")
        return f"det: live replica (pid {self.pid}) of {self.binary}, {state}: {where}"

    def thread_lines(self) -> list[str]:
        """A line per thread of the region: its state, events done, what it waits for, where it is."""
        from det.trace import kind_name  # (det's stdlib-only store, on gdb's path once attached)

        if int(gdb.parse_and_eval("(unsigned long)det_hdr")) == 0:
            return ["det: the replica's program has not attached to its region yet"]
        names = session.thread_state_names()
        gdb_threads = {t.ptid[1]: t for t in gdb.selected_inferior().threads()}
        held = self.status().get("state") == "holding"
        lines = []
        for i, s in used_slots():
            state = names.get(int(s["state"]), "?")
            done = int(s["done"])
            what = state
            kind = int(s["blocked_kind"])
            if int(s["crash_sig"]):
                what = f"took {sig_name(int(s['crash_sig']))}, the signal the program died of"
            elif kind:
                what = f"blocked in {kind_name(kind)}"
            elif int(s["at_turnstile"]) and state == "running":
                nxt = next_kind(s, done)
                what = (f"waits for its turn for {kind_name(nxt)}" if nxt else
                        "held before its next call into det (the recording has no more of its events)" if held else
                        "waits for its next event to be recorded")
            th = gdb_threads.get(int(s["ktid"]))
            at = thread_where(th) if th is not None and th.is_valid() else ""
            gdb_num = f"  (gdb thread {th.num})" if th is not None else ""
            lines.append(f"  T{i}  {what}, {done} events done{gdb_num}{f'  in {at}' if at else ''}")
        return lines


def next_kind(slot: gdb.Value, idx: int) -> int:
    """The kind of a thread's event idx if the feeder has written it into its window, else 0."""
    from det.constants import DET_FILLED_BITS

    if int(slot["sched_filled"]) & ((1 << DET_FILLED_BITS) - 1) <= idx:
        return 0
    entries = gdb.parse_and_eval(f"(struct det_sched *)((char *)det_hdr + {int(slot['sched_off'])})")
    return int(entries[idx % int(slot["sched_window"])]["kind"])


def step_out_of_det() -> None:
    """Before next/step/until/advance in a replica: a thread inside det (it
    waits for its turn, or for its next event to be recorded) first runs to
    where det's call returns to the program, the replica going on meanwhile,
    so gdb's own command steps the program's line (det_gdb.session does the
    same for a replay from a trace, with its stops)."""
    f = gdb.newest_frame()
    if not in_det(f):
        return
    caller = det_caller_frame()
    if caller is None or in_det(caller):
        return
    b = gdb.Breakpoint(f"*{caller.pc():#x}", internal=True, temporary=True)
    b.thread = gdb.selected_thread().num
    b.silent = True
    try:
        gdb.execute("continue", to_string=True)
    finally:
        if b.is_valid():
            b.delete()
    if in_det(gdb.newest_frame()):
        raise gdb.GdbError("det: the thread stopped before its call into det returned to the program; not stepping")


def used_slots() -> Iterator[tuple[int, gdb.Value]]:
    """The region's slots of the threads that have started: (number, slot).
    A replica's region has room for more threads than its program makes."""
    base = session.region_slots()
    for i in range(int(gdb.parse_and_eval("det_hdr->threads_recorded"))):
        if int(base[i]["state"]) == 0:
            return  # (free: threads are numbered as created, so the rest are too)
        yield i, base[i]


def held_fault() -> tuple[gdb.InferiorThread, gdb.Frame | None, str] | None:
    """A standby held at the signal its program died of: the thread (its
    slot has the signal, noted by det's entry, which holds the thread in
    place: preload/signals.c), the frame the signal came in (its pc is the
    one noted: gdb's frame under <signal handler called>) and the signal's
    name."""
    lwps = {t.ptid[1]: t for t in gdb.selected_inferior().threads()}
    for _, s in used_slots():
        sig = int(s["crash_sig"])
        th = lwps.get(int(s["ktid"]))
        if not sig or th is None:
            continue
        pc = int(s["crash_pc"])
        with on_thread(th):
            f = gdb.newest_frame()
            while f is not None and f.pc() != pc:
                f = f.older()
        return th, f, sig_name(sig)
    return None


def sig_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


REPLICA: Replica | None = None


def start(cfg: dict) -> None:
    """gdb has attached to the replica's program: say where it is."""
    global REPLICA
    REPLICA = Replica(cfg)
    session.NO_REPLAY = ("det: this is a live replica, with no trace yet: `det status` and gdb's own commands work "
                         "here; the others need the trace (`detreplay --gdb TRACE` once the recording has ended)")
    for pat in cfg.get("skip_files", []):
        gdb.execute(f"skip -gfile {pat}", to_string=True)
    for cmd in ("next", "step", "until", "advance"):
        gdb.execute(f"define hook-{cmd}\npython det_gdb.step_hook()\nend", to_string=True)
    print(REPLICA.headline())
    st = REPLICA.status()
    fault = held_fault() if st.get("held_at") == "fault" else None
    if fault is not None:
        th, frame, sig = fault
        th.switch()
        if frame is not None:
            frame.select()
        print(f"det: gdb thread {th.num} took the {sig} the program died of; here:")
        print(gdb.execute("frame", to_string=True).rstrip("\n"))
    elif (f := user_frame()) is not None:
        f.select()  # (not det's wait: the program's line)
    if st.get("state") == "holding":
        print(f"det: it stays as it is (after `continue` too: every thread waits where the recording ends) until its "
              f"standby time is up, or `kill {REPLICA.pid}`; `det status` says where each thread is")
    else:
        print("det: the recording goes on while gdb holds the replica; `continue` lets it catch up, `detach` or "
              "`quit` leaves it following; `det status` says where each thread is and how far behind it is")


def status_lines() -> list[str]:
    assert REPLICA is not None
    return [REPLICA.headline(), *REPLICA.thread_lines()]
