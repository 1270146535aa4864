"""The narrowing: from H_k (B's beginning, A's order after it) to G_m (the
passing hybrid's middle, B's order after it) to the move of one event in B
that confirms the critical pair.

Rules: every verdict comes from a real replay (det.compare.bisect.runner); the
object model (det.compare.bisect.model) only proposes orders.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from det.constants import DET_EXIT_STOPPED
from det.outpath import check_output_dir
from det.trace import Trace
from det.trust import check_owner

from ..diff import Comparison, DiffError, EventRef
from .hybrid import Borrowed, Scheduler, borrow, inversions, load_fail, trim
from .model import SCHEDULING, Ev, Model
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
            boundary=None, first=None, second=None, move=None, pass_order=None, stacks={}, notes=self.notes)
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
    elif verdicts[lo] not in PASSES:
        s.notes.append(f"H_{lo} neither passes nor fails ({verdicts[lo]}); the search took it for the side that "
                       "does not fail, so this boundary may say little about the program")

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
            unconfirmed = v if v.verdict not in PASSES and v.verdict != FAILS else None
            if v.verdict in PASSES:
                best = (cands[0], order, v)
                # Slide the block back towards its place: the latest position
                # that still makes B pass names the closest event it must pass
                # (a move that stalls or cannot happen does not pass).
                lo, hi = 0, len(cands)          # cands[lo] passes; position len(cands) stands for B, which fails
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    order = moved(cands[mid])
                    v = s.judge(order, label(cands[mid]), f"move-{cands[mid]}", "move")
                    if v.verdict not in PASSES:
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
            elif unconfirmed is not None:
                moved_, direction, anchor, over = sides(cands[0])
                refs = s.refs(moved_ + [anchor])
                move = Move(label=label(cands[0]), moved=refs[:-1], direction=direction, anchor=refs[-1],
                            jumped=len(over), pairs_reordered=inversions(order), verdict=v.verdict,
                            detail=v.detail)
    first, second = s.refs([first_pos, x_pos])
    stacks = {}
    for e_pos, ref in ((first_pos, first), (x_pos, second)):
        upto = [p for p in s.sched.by_thread[ref.tid] if p <= e_pos and (evs[p].kind not in SCHEDULING or p == e_pos)]
        stacks[f"T{ref.tid}"] = s.refs(upto[-STACK_DEPTH:])
    confirmed = move is not None and move.verdict in PASSES

    def message() -> str:
        if move is not None and not confirmed:
            how = {IMPOSSIBLE: "is an order that cannot happen", STALLED: "stalls",
                   STOPPED: "was stopped by det"}.get(move.verdict, move.verdict)
            return (f"the hybrids that pass and fail differ in the order of T{second.tid} #{second.idx} and "
                    f"T{first.tid} #{first.idx}, but B with that alone moved {how} (neither passes nor fails), "
                    "so the pair is not confirmed")
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
