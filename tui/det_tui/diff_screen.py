"""`dettui A B`: two schedules side by side, as detdiff compares them.

Rules of this file:
  - The comparison is det.compare.diff's (compare(), in a thread worker) and the
    bisection det.compare.bisect's (bisect_traces(), on request, with its progress
    callback and cancel event); this file only shows their results. Texts
    of events and outcomes are det.compare.difftext's.
  - Rows are aligned by position (rank in each trace's order): before the
    divergence both lists show the same events; the divergence, each
    thread's first difference, the inversions and the critical pair are
    marked in the lists and on both timelines, and listed on the right,
    where choosing one moves both sides there.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, Label, OptionList, ProgressBar, Static
from textual.widgets.option_list import Option

from det.compare.bisect import BisectResult, Step
from det.compare.diff import DiffResult, EventRef, compare
from det.compare.difftext import obj, outcome_text, plural, result_text, where
from det.errors import DetError

from .dialogs import HelpScreen, ask_event
from .eventlist import EventList
from .model import TraceModel
from .timeline import Timeline


@dataclass
class Item:
    """A difference to jump to: positions in A and B (None: that side has none)."""

    text: Text
    a: int | None
    b: int | None


def ref_text(e: EventRef | None) -> str:
    if e is None:
        return "(no event)"
    res = f"={result_text(e.kind, e.result)}" if e.result else ""
    return f"T{e.tid} #{e.idx} {e.kind}{res} {obj(e)} at {where(e)}"


def side_summary(label: str, m: TraceModel, style: str) -> Text:
    h = m.header()
    t = Text()
    t.append(f"{label}  {m.path}", style=f"bold {style}")
    t.append(f"   {h.outcome}, {plural(h.events, 'event')}, {plural(h.threads, 'thread')}, mode {h.mode}",
             style="grey70")
    return t


class DiffScreen(Screen[None]):
    """Two traces of one program."""

    BINDINGS = [
        Binding("n", "item(1)", "Next difference"),
        Binding("N", "item(-1)", "Prev difference", show=False),
        Binding("d", "divergence", "Divergence"),
        Binding("b", "bisect", "Bisect"),
        Binding("c", "critical", "Critical pair"),
        Binding("g", "goto", "Go to"),
        Binding("escape", "cancel_bisect", "Stop bisecting", show=False),
        Binding("question_mark", "help", "Keys"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, a: TraceModel, b: TraceModel) -> None:
        super().__init__()
        self.a, self.b = a, b
        self.result: DiffResult | None = None
        self.bisect: BisectResult | None = None
        self.items: list[Item] = []
        self.cancel = threading.Event()
        self.bisecting = False
        self._pinned: dict[str, int] = {}   # side -> position set by jump() or by following

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(side_summary("A", self.a, "red"), id="summary-a")
        yield Static(side_summary("B", self.b, "green"), id="summary-b")
        with Vertical(id="diff-lanes"):
            yield Timeline(self.a, id="timeline-a")
            yield Timeline(self.b, id="timeline-b")
        with Horizontal(id="diff-events"):  # the lists take the height the lanes leave
            yield EventList(self.a, id="events-a")
            yield EventList(self.b, id="events-b")
            yield OptionList(Option("comparing the two traces (det.diff)...", disabled=True), id="diff-items")
        with Horizontal(id="bisect-bar"):
            yield ProgressBar(id="bisect-progress", show_eta=False)
            yield Label("", id="bisect-step")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "dettui: compare"
        self.sub_title = f"{self.a.path.name}  vs  {self.b.path.name}"
        for side, m in (("a", self.a), ("b", self.b)):
            self.query_one(f"#timeline-{side}", Timeline).prefix = f"{side.upper()} {m.path.name}  "
            self.query_one(f"#events-{side}", EventList).border_title = f"{side.upper()}  {m.path.name}"
        self.query_one("#diff-items", OptionList).border_title = "Differences"
        self.query_one("#events-b", EventList).focus()
        # After the first paint: the comparison is Python-heavy and would hold the screen back.
        self.call_after_refresh(self.run_compare)
        self.call_after_refresh(self.load_lanes)

    @work(thread=True, group="lanes")
    def load_lanes(self) -> None:
        for side, m in (("a", self.a), ("b", self.b)):
            try:
                m.load_lanes()
            except DetError as e:
                self.app.call_from_thread(self.notify, str(e), severity="error")
                continue
            self.app.call_from_thread(self.query_one(f"#timeline-{side}", Timeline).lanes_ready)

    @work(thread=True, exclusive=True, group="compare")
    def run_compare(self) -> None:
        try:
            r = compare(self.a.path, self.b.path, force=True, context=3, limit=None)
        except DetError as e:
            self.app.call_from_thread(self._compare_failed, str(e))
            return
        self.app.call_from_thread(self._compared, r)

    def _compare_failed(self, message: str) -> None:
        from .dialogs import ErrorScreen

        self.app.switch_screen(ErrorScreen(f"{self.a.path} and {self.b.path}", message))

    # ----- the comparison's results

    def _compared(self, r: DiffResult) -> None:
        self.result = r
        self.items = self._items(r)
        self._refresh_items()
        self._mark(r)
        for note in r.notes:
            self.notify(note, timeout=8)
        if r.divergence is not None:
            self.action_divergence()

    def _items(self, r: DiffResult) -> list[Item]:
        items: list[Item] = []
        d = r.divergence
        if r.identical:
            items.append(Item(Text("Identical: the same schedule and the same outcome", style="bold green"), 0, 0))
        if d is not None:
            why = {"interleaving": f"A runs T{d.a.tid if d.a else '?'}, B runs T{d.b.tid if d.b else '?'}",
                   "operation": "the same thread does another operation",
                   "a_ended": "A ends there", "b_ended": "B ends there"}[d.reason]
            t = Text()
            t.append(f"The schedules part after {plural(d.position, 'identical event')}: ", style="bold")
            t.append(why)
            items.append(Item(t, d.position, d.position))
        for td in r.threads:
            t = Text(f"T{td.tid} #{td.index} does something else\n", style="bold")
            t.append(f"  A: {ref_text(td.a)}\n", style="red")
            t.append(f"  B: {ref_text(td.b)}", style="green")
            items.append(Item(t, td.a.position if td.a else None, td.b.position if td.b else None))
        for inv in r.inversions:
            o = inv.object
            x, y = inv.first, inv.second
            t = Text(f"Inversion on {o.label}{' ' + o.name if o.name else ''}: ", style="bold")
            t.append(f"A: T{x.tid} then T{y.tid}", style="red")
            t.append(", ")
            t.append(f"B: T{y.tid} then T{x.tid}", style="green")
            t.append(f"\n  T{x.tid} #{x.idx} {x.kind} at {where(x)}\n  T{y.tid} #{y.idx} {y.kind} at {where(y)}")
            if inv.positions > 1:
                t.append(f"\n  the order differs at {inv.positions} of {inv.events} positions", style="grey62")
            items.append(Item(t, x.position, inv.b_first.position))
        for sp in r.one_side:
            span = f"#{sp.first_idx}" if sp.first_idx == sp.last_idx else f"#{sp.first_idx}..#{sp.last_idx}"
            kinds = ", ".join(f"{n} {k}" for k, n in list(sp.kinds.items())[:3])
            t = Text(f"{sp.side.upper()} only: T{sp.tid} {span}, {plural(sp.count, 'event')}: {kinds}",
                     style="red" if sp.side == "a" else "green")
            pos = sp.first.position
            items.append(Item(t, pos if sp.side == "a" else None, pos if sp.side == "b" else None))
        for rd in r.results:
            t = Text(f"Result of T{rd.a.tid} #{rd.a.idx} {rd.a.kind}: ")
            t.append(f"A {result_text(rd.a.kind, rd.a.result)}", style="red")
            t.append(", ")
            t.append(f"B {result_text(rd.b.kind, rd.b.result)}", style="green")
            items.append(Item(t, rd.a.position, rd.b.position))
        if r.outcome:
            t = Text("The outcomes differ: ", style="bold")
            t.append(f"A {outcome_text(r.a)}", style="red")
            t.append(", ")
            t.append(f"B {outcome_text(r.b)}", style="green")
            for od in r.outcome:
                if od.field in ("stdout", "stderr"):
                    for side, v in (("A", od.a), ("B", od.b)):
                        last = v["tail"].rstrip("\n").rsplit("\n", 1)[-1] if v["tail"] else ""
                        t.append(f"\n  {od.field} {side}: {last[:60]!r}", style="red" if side == "A" else "green")
            items.append(Item(t, self.a.count - 1 if self.a.count else None,
                              self.b.count - 1 if self.b.count else None))
        if self.bisect is not None:
            items.insert(0, self._bisect_item(self.bisect))
        return items

    def _refresh_items(self) -> None:
        ol = self.query_one("#diff-items", OptionList)
        ol.clear_options()
        ol.add_options([Option(it.text, id=str(i)) for i, it in enumerate(self.items)])
        r = self.result
        if r is not None:
            ol.border_title = (f"Differences: {plural(r.thread_count, 'thread')}, "
                               f"{plural(r.inversion_count, 'inversion')}, "
                               f"one side A {r.one_side_events['a']} B {r.one_side_events['b']}")

    def _mark(self, r: DiffResult) -> None:
        ea, eb = self.query_one("#events-a", EventList), self.query_one("#events-b", EventList)
        ta, tb = self.query_one("#timeline-a", Timeline), self.query_one("#timeline-b", Timeline)
        d = r.divergence
        if d is not None:
            for e, lst, other in ((d.a, ea, d.b), (d.b, eb, d.a)):
                if e is not None:
                    lst.notes[e.seq] = f"the schedules part here (the other runs T{other.tid})" if other else \
                        "the other trace has ended"
            ta.marks.add(d.position)
            tb.marks.add(d.position)
        for td in r.threads:
            for e, lst in ((td.a, ea), (td.b, eb)):
                if e is not None:
                    lst.notes.setdefault(e.seq, f"T{td.tid}'s first difference")
        for inv in r.inversions:
            label = inv.object.label
            for e, lst in ((inv.first, ea), (inv.second, ea), (inv.b_first, eb), (inv.b_second, eb)):
                lst.notes.setdefault(e.seq, f"order of {label} inverted")
        for w in (ea, eb, ta, tb):
            w.refresh()

    # ----- moving both sides

    def jump(self, a: int | None, b: int | None) -> None:
        """Both lists and timelines to these positions (a side without one follows the other)."""
        a = b if a is None else a
        b = a if b is None else b
        if a is None or b is None:
            return
        for side, pos, m in (("a", a, self.a), ("b", b, self.b)):
            if not m.count:
                continue
            pos = max(0, min(m.count - 1, pos))
            # The lists' Highlighted messages come later: they must not pull the other side along.
            self._pinned[side] = pos
            self.query_one(f"#events-{side}", EventList).cursor = pos
            self.query_one(f"#timeline-{side}", Timeline).zoom_to(pos)

    def on_event_list_highlighted(self, msg: EventList.Highlighted) -> None:
        sender = msg.control
        if msg.seq is None or msg.seq != sender.current_seq():
            return      # stale: the cursor has moved on since
        side = "a" if sender.id == "events-a" else "b"
        rank = sender.cursor
        self.query_one(f"#timeline-{side}", Timeline).cursor = rank
        if self._pinned.get(side) == rank:
            return      # put there by jump(), with the other side
        self._pinned.clear()
        # Aligned by position: the other list follows.
        other = "b" if side == "a" else "a"
        om = self.b if side == "a" else self.a
        if om.count:
            pos = min(rank, om.count - 1)
            self._pinned[other] = pos
            self.query_one(f"#events-{other}", EventList).cursor = pos
            self.query_one(f"#timeline-{other}", Timeline).cursor = pos

    def on_option_list_option_selected(self, msg: OptionList.OptionSelected) -> None:
        if msg.option.id is not None:
            it = self.items[int(msg.option.id)]
            self.jump(it.a, it.b)

    def on_timeline_selected(self, msg: Timeline.Selected) -> None:
        side = "a" if msg.control.id == "timeline-a" else "b"
        self.query_one(f"#events-{side}", EventList).cursor = msg.rank

    def action_item(self, step: int) -> None:
        if not self.items:
            return
        ol = self.query_one("#diff-items", OptionList)
        i = ol.highlighted
        i = 0 if i is None else (i + step) % len(self.items)
        ol.highlighted = i
        it = self.items[i]
        self.jump(it.a, it.b)

    def action_divergence(self) -> None:
        r = self.result
        if r is None:
            self.notify("still comparing", timeout=2)
        elif r.divergence is None:
            self.notify("the schedules do not part", timeout=3)
        else:
            self.jump(r.divergence.position, r.divergence.position)

    def action_goto(self) -> None:
        m = self.a

        def done(seq: int) -> None:
            pos = m.rank_of(seq)
            self.jump(pos, pos)

        ask_event(self, m.seq0, m.last_seq, done)

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen())

    # ----- bisection

    def action_bisect(self) -> None:
        if self.bisecting:
            self.notify("the bisection is running (Esc stops it)", timeout=3)
            return
        self.bisecting = True
        self.cancel.clear()
        bar = self.query_one("#bisect-bar")
        bar.add_class("running")
        # Each step of the search halves a range of B's events: a few replays per halving.
        estimate = 2 * max(1, math.ceil(math.log2(max(2, self.b.count)))) + 4
        self.query_one("#bisect-progress", ProgressBar).update(total=estimate, progress=0)
        self.query_one("#bisect-step", Label).update("  detdiff --bisect: replaying B as recorded (the control)...")
        self.run_bisect()

    @work(thread=True, exclusive=True, group="bisect")
    def run_bisect(self) -> None:
        from det.compare.bisect import bisect_traces

        def progress(step: Step) -> None:
            self.app.call_from_thread(self._bisect_step, step)

        try:
            r = bisect_traces(self.a.path, self.b.path, force=True, progress=progress, cancel=self.cancel)
        except DetError as e:
            self.app.call_from_thread(self._bisect_done, None, str(e))
            return
        self.app.call_from_thread(self._bisect_done, r, "")

    def _bisect_step(self, step: Step) -> None:
        bar = self.query_one("#bisect-progress", ProgressBar)
        if bar.total is not None and bar.progress + 1 >= bar.total:
            bar.update(total=bar.total + 2)
        bar.advance(1)
        verdict = "fails" if step.verdict == "fails" else f"does not fail: {step.verdict}"
        again = " (as replay " + str(step.replay) + ")" if step.repeated else ""
        self.query_one("#bisect-step", Label).update(f"  replay {step.replay}: {step.label} → {verdict}{again}")

    def _bisect_done(self, r: BisectResult | None, error: str) -> None:
        self.bisecting = False
        self.query_one("#bisect-bar").remove_class("running")
        if r is None:
            self.notify(f"detdiff --bisect: {error}", severity="error", timeout=15)
            return
        self.bisect = r
        if self.result is not None:
            self.items = self._items(self.result)
            self._refresh_items()
        eb = self.query_one("#events-b", EventList)
        if r.first is not None and r.second is not None:
            for e, what in ((r.first, "critical pair: runs first in B"), (r.second, "critical pair: run it first")):
                if e.side == "b":
                    eb.notes[e.seq] = what
            self.action_critical()
        self.notify(r.message[0].upper() + r.message[1:], timeout=15,
                    severity="information" if r.found and r.confirmed else "warning")

    def _bisect_item(self, r: BisectResult) -> Item:
        t = Text(f"Bisection ({plural(r.replays, 'replay')}): ", style="bold")
        if not r.found or r.first is None or r.second is None:
            t.append(f"no critical pair: {r.message}")
            return Item(t, None, None)
        t.append("critical pair\n", style="bold yellow")
        t.append(f"  B runs first  {ref_text(r.first)}\n")
        t.append(f"  then          {ref_text(r.second)}\n")
        t.append(f"  {r.message}", style="green" if r.confirmed else "yellow")
        b_pos = r.first.position if r.first.side == "b" else None
        return Item(t, self._a_position(r.first), b_pos)

    def _a_position(self, e: EventRef) -> int | None:
        """Where A has the same thread's event with the same index (det.compare.diff's matching)."""
        if e.side == "a":
            return e.position
        found = self.a.tr.thread_event(e.tid, e.idx)
        return self.a.rank_of(found.seq) if found is not None else None

    def action_critical(self) -> None:
        r = self.bisect
        if r is None or r.first is None or r.second is None:
            self.notify("no critical pair yet: b runs detdiff --bisect (strict traces)", timeout=4)
            return
        it = self._bisect_item(r)
        self.jump(it.a, it.b)
        for side in ("a", "b"):
            tl = self.query_one(f"#timeline-{side}", Timeline)
            for e in (r.first, r.second):
                pos = e.position if e.side == side else (self._a_position(e) if side == "a" else None)
                if pos is not None:
                    tl.marks.add(pos)
            tl.refresh()

    def action_cancel_bisect(self) -> None:
        if self.bisecting:
            self.cancel.set()
            self.query_one("#bisect-step", Label).update("  stopping the replay under way...")

    def on_unmount(self) -> None:
        self.cancel.set()
