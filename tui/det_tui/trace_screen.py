"""`dettui TRACE`: the header, the timeline, the event list and the details.

Rules of this file:
  - The screen opens at once: the schedule string (TraceModel.load_lanes)
    and filters are read in thread workers, and the widgets draw what they
    have meanwhile.
  - The list's cursor is the selection; the timeline's cursor and the
    details follow it (the details after a short pause, so holding a key
    down stays smooth).
"""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Header, Input, Static

from det.errors import DetError

from .details import Details
from .dialogs import FilterScreen, HelpScreen, ask_event
from .eventlist import EventList
from .model import Filter, TraceModel
from .timeline import Timeline

DETAILS_DELAY = 0.08


def summary_text(model: TraceModel) -> Text:
    h = model.header()
    t = Text()
    bad = h.outcome not in ("exit 0",)
    for i, (label, value, style) in enumerate((
        ("", h.program, "bold"),
        ("", h.outcome, "bold red" if bad else "bold green"),
        ("mode ", h.mode, ""),
        ("", f"{h.threads} thread{'s' if h.threads != 1 else ''}", ""),
        ("", f"{h.processes} process{'es' if h.processes != 1 else ''}", ""),
        ("", f"{h.events} events", ""),
        ("", h.duration, ""),
    )):
        if i:
            t.append("  │  ", style="grey50")
        t.append(label, style="grey62")
        t.append(value, style=style)
    return t


class TraceScreen(Screen[None]):
    """One trace."""

    BINDINGS = [
        Binding("slash", "search", "Search"),
        Binding("n", "search_next(1)", "Next match", show=False),
        Binding("N", "search_next(-1)", "Prev match", show=False),
        Binding("f", "filter", "Filter"),
        Binding("F", "clear_filter", "No filter", show=False),
        Binding("t", "thread", "Thread"),
        Binding("g", "goto", "Go to"),
        Binding("x", "problem", "Problem"),
        Binding("question_mark", "help", "Keys"),
        Binding("q", "app.quit", "Quit"),
        Binding("escape", "close_search", "Close search", show=False),
    ]

    def __init__(self, model: TraceModel) -> None:
        super().__init__()
        self.model = model
        self.filter = Filter()
        self.filter_fields = ("", "", "", "")
        self.search_text = ""
        self._details_timer: Timer | None = None

    # ----- layout

    def compose(self) -> ComposeResult:
        m = self.model
        yield Header()
        yield Static(summary_text(m), id="summary")
        h = m.header()
        warn = list(h.notes)
        if h.message:
            warn.append(h.message)
        end = m.ending
        if end.kind not in ("exit", "incomplete"):  # (how the run ended: det.ending)
            go = "  (x: go there)" if end.seq is not None else ""
            warn = [end.line + go] + [w for w in warn if w != h.message and "deadlock" not in w]
        banner = Static("\n".join(warn), id="problem")
        banner.display = bool(warn)
        if end.kind not in ("exit", "incomplete") or not h.complete:
            banner.add_class("bad")
        yield banner
        yield Timeline(m, id="timeline")
        with Horizontal(id="main"):
            yield EventList(m, id="events")
            yield Details(m, id="details")
        search = Input(placeholder="search: T2, mutex, account, file.c:31, a function ... (Enter: next)",
                       id="search")
        search.display = False
        yield search
        yield Footer()

    @property
    def timeline(self) -> Timeline:
        return self.query_one(Timeline)

    @property
    def events(self) -> EventList:
        return self.query_one(EventList)

    @property
    def details(self) -> Details:
        return self.query_one(Details)

    def on_mount(self) -> None:
        m = self.model
        self.title = "dettui"
        self.sub_title = str(m.path)
        self.events.border_title = "Events"
        self.details.border_title = "Event"
        self.timeline.border_title = "Timeline"
        self._mark_problem()
        self.events.focus()
        self.load_lanes()
        if m.count:
            # After the first paint: the details read source and code (addr2line, the ELF file).
            self.call_after_refresh(self.show_details, m.seq_of(0))

    def _mark_problem(self) -> None:
        """Each blocked thread's last event carries what it was blocked in;
        a thread that died, what killed it."""
        m = self.model
        end = m.ending
        if end.thread is not None and end.seq is not None:
            self.events.notes[end.seq] = "then " + end.line.split(" ", 1)[1]
        if m.problem is None:
            return
        for lane in m.lanes:
            if lane.blocked:
                e = m.tr.last_before(lane.tid, m.last_seq + 1)
                if e is not None:
                    self.events.notes[e.seq] = "then blocked: " + lane.blocked.split(" ", 1)[1]

    @work(thread=True, exclusive=True, group="lanes")
    def load_lanes(self) -> None:
        try:
            self.model.load_lanes()
        except DetError as e:
            self.app.call_from_thread(self.notify, str(e), severity="error", timeout=30)
            return
        self.app.call_from_thread(self.timeline.lanes_ready)
        self.app.call_from_thread(self._lanes_loaded)

    def _lanes_loaded(self) -> None:
        """Hook: the schedule is drawn (benchmarks and tests wait for it)."""
        self.lanes_loaded = True

    # ----- selection

    def on_event_list_highlighted(self, msg: EventList.Highlighted) -> None:
        if msg.seq is None:
            return
        self.timeline.cursor = self.model.rank_of(msg.seq)
        if self._details_timer is not None:
            self._details_timer.stop()
        self._details_timer = self.set_timer(DETAILS_DELAY, lambda: self.show_details(msg.seq))

    def on_event_list_chosen(self, msg: EventList.Chosen) -> None:
        self.timeline.zoom_to(self.model.rank_of(msg.seq))

    def on_timeline_selected(self, msg: Timeline.Selected) -> None:
        seq = self.model.seq_of(msg.rank)
        if not self.events.select_seq(seq, exact=True):
            self.notify(f"event {seq} is hidden by the filter", timeout=3)
            self.show_details(seq)

    def show_details(self, seq: int | None) -> None:
        if seq is None:
            return
        try:
            e = self.model.event(seq)
        except DetError as err:
            self.details.update(Text(str(err), style="bold red"))
            return
        self.details.show(e, self.events.notes.get(seq))

    def select(self, seq: int) -> None:
        """Put the cursor on an event (clearing a filter that hides it)."""
        if not self.events.select_seq(seq, exact=True):
            if self.filter.active:
                self.apply_filter(Filter(), ("", "", "", ""), then=seq)
                return
            self.events.select_seq(seq, exact=False)

    # ----- actions

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen())

    def action_goto(self) -> None:
        m = self.model

        def done(seq: int) -> None:
            self.select(seq)
            self.timeline.zoom_to(m.rank_of(seq))
            self.events.focus()

        ask_event(self, m.seq0, m.last_seq, done)

    def action_search(self) -> None:
        box = self.query_one("#search", Input)
        box.display = True
        box.focus()

    def action_close_search(self) -> None:
        box = self.query_one("#search", Input)
        if box.display:
            box.display = False
            self.events.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "search":
            return
        self.search_text = event.value
        self.action_search_next(1)

    def action_search_next(self, direction: int) -> None:
        if not self.search_text.strip():
            self.action_search()
            return
        cur = self.events.current_seq()
        start = cur if cur is not None else self.model.seq0 - 1
        hit = self.model.search(self.search_text, start, forward=direction > 0)
        if hit is None:
            self.notify(f"no {'later' if direction > 0 else 'earlier'} event matches {self.search_text!r}",
                        timeout=3)
            return
        self.select(hit)

    def action_filter(self) -> None:
        def done(values: tuple[str, str, str, str] | None) -> None:
            if values is None:
                return
            try:
                f = self.model.parse_filter(*values)
            except ValueError as e:
                self.notify(str(e), severity="error")
                return
            self.apply_filter(f, values)

        self.app.push_screen(FilterScreen(self.filter_fields), done)

    def action_clear_filter(self) -> None:
        self.apply_filter(Filter(), ("", "", "", ""))

    def action_thread(self) -> None:
        """Only the selected event's thread; again: every thread."""
        if self.filter.tids is not None and self.filter_fields[0]:
            fields = ("",) + self.filter_fields[1:]
        else:
            seq = self.events.current_seq()
            e = self.model.event(seq) if seq is not None else None
            if e is None:
                return
            fields = (f"T{e.tid}",) + self.filter_fields[1:]
        self.apply_filter(self.model.parse_filter(*fields), fields)

    def apply_filter(self, f: Filter, fields: tuple[str, str, str, str], then: int | None = None) -> None:
        self.filter, self.filter_fields = f, fields
        if not f.active:
            self.events.set_seqs(None)
            self.events.border_title = "Events"
            if then is not None:
                self.events.select_seq(then, exact=False)
            return
        self.events.border_title = f"Events  filter: {f.text}  (reading...)"
        self._filter_worker(f, then)

    @work(thread=True, exclusive=True, group="filter")
    def _filter_worker(self, f: Filter, then: int | None) -> None:
        try:
            seqs = self.model.filtered_seqs(f)
        except DetError as e:
            self.app.call_from_thread(self.notify, str(e), severity="error")
            return
        self.app.call_from_thread(self._filtered, f, seqs, then)

    def _filtered(self, f: Filter, seqs, then: int | None) -> None:  # noqa: ANN001 - an array of seqs
        if f is not self.filter:
            return
        self.events.set_seqs(seqs)
        self.events.border_title = f"Events  filter: {f.text}  ({len(seqs)} of {self.model.count}; F: clear)"
        if then is not None:
            self.events.select_seq(then, exact=False)

    def action_problem(self) -> None:
        """To how the run ended: the dead thread's last event, or where a
        deadlock's cycle closed (det.ending)."""
        end = self.model.ending
        if end.seq is None:
            self.notify(f"{end.line}: no failing thread to go to" if end.kind == "exit" else end.line, timeout=4)
            return
        self.select(end.seq)
        self.timeline.zoom_to(self.model.rank_of(end.seq))
        self.notify("\n".join([end.line] + end.details[:1]), timeout=8)
