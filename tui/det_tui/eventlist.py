"""The event list: one line per event, as many events as the trace has.

Rules of this file:
  - Line API (a ScrollView whose height is the number of rows): a row is
    read when it is drawn, by pages of PAGE events (TraceModel.events or
    Trace.events_at for a filtered list), and a few pages are cached. No
    widget and no row object per event: a filtered list is an array of
    seqs (8 bytes an event).
  - The cursor is a row; moving it posts Highlighted with the event's seq.
"""

from __future__ import annotations

from array import array
from collections import OrderedDict

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from det.errors import DetError
from det.trace import Event

from .messages import FromWidget
from .model import TraceModel, class_of
from .timeline import CLASS_STYLE

PAGE = 128
COMPACT_BELOW = 80
WIDE_FROM = 100
PAGES_KEPT = 64
DIM = Style(color="grey50")
CURSOR = Style(bgcolor="grey30", bold=True)
CURSOR_FOCUSED = Style(bgcolor="dodger_blue3", bold=True)
MARKED = Style(bgcolor="dark_red")


class EventList(ScrollView, can_focus=True):
    """Every event (or those passing the filter), read a page at a time."""

    BINDINGS = [
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "First", show=False),
        Binding("end", "edge(1)", "Last", show=False),
        Binding("enter", "choose", "Zoom timeline"),
    ]

    cursor: reactive[int] = reactive(0, always_update=True, repaint=False)   # watch_cursor refreshes what changed

    class Highlighted(FromWidget):
        """The cursor is on another event (seq; None: the list is empty)."""

        def __init__(self, sender: EventList, seq: int | None) -> None:
            super().__init__(sender)
            self.seq = seq

    class Chosen(FromWidget):
        """Enter on an event."""

        def __init__(self, sender: EventList, seq: int) -> None:
            super().__init__(sender)
            self.seq = seq

    def __init__(self, model: TraceModel, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self.model = model
        self.seqs: array | None = None          # the filtered list, None: every event
        self.notes: dict[int, str] = {}          # seq -> why it is marked (a deadlock, a divergence)
        self.error: str | None = None             # why rows could not be read
        self._pages: OrderedDict[int, list[Event]] = OrderedDict()
        self._width_seq = max(5, len(str(max(0, model.last_seq))))
        self.virtual_size = Size(0, self.rows)

    @property
    def rows(self) -> int:
        return len(self.seqs) if self.seqs is not None else self.model.count

    def set_seqs(self, seqs: array | None) -> None:
        """Show only these events (None: all), keeping the cursor on the same event if it is there."""
        seq = self.current_seq()
        self.seqs = seqs
        self._pages.clear()
        self.virtual_size = Size(self.size.width, self.rows)
        self.scroll_to(y=0, animate=False)
        self.cursor = 0
        if seq is not None:
            self.select_seq(seq, exact=False)
        self.refresh()

    # ----- rows and seqs

    def seq_at(self, row: int) -> int:
        return self.seqs[row] if self.seqs is not None else self.model.seq_of(row)

    def row_of(self, seq: int) -> int:
        """The row of seq, or of the first event after it."""
        if self.seqs is None:
            return self.model.rank_of(seq)
        from bisect import bisect_left
        return bisect_left(self.seqs, seq)

    def current_seq(self) -> int | None:
        return self.seq_at(self.cursor) if 0 <= self.cursor < self.rows else None

    def select_seq(self, seq: int, exact: bool = True) -> bool:
        row = self.row_of(seq)
        if row >= self.rows:
            row = self.rows - 1
        if row < 0 or (exact and self.seq_at(row) != seq):
            return False
        self.cursor = row
        return True

    def _page(self, p: int) -> list[Event]:
        page = self._pages.get(p)
        if page is None:
            lo, hi = p * PAGE, min(self.rows, (p + 1) * PAGE)
            try:
                if self.seqs is None:
                    page = self.model.events(lo, hi)
                else:
                    page = self.model.tr.events_at(self.seqs[lo:hi])
            except DetError as e:
                # The file went bad under us (truncated while shown): say it, draw nothing there.
                if self.error is None:
                    self.error = str(e)
                    self.notify(self.error, severity="error", timeout=30)
                return []
            self._pages[p] = page
            if len(self._pages) > PAGES_KEPT:
                self._pages.popitem(last=False)
        else:
            self._pages.move_to_end(p)
        return page

    def event_at(self, row: int) -> Event | None:
        if not 0 <= row < self.rows:
            return None
        page = self._page(row // PAGE)
        i = row % PAGE
        return page[i] if i < len(page) else None

    # ----- keys and mouse

    def watch_cursor(self, old: int, new: int) -> None:
        h = self.scrollable_content_region.height or 1
        top = int(self.scroll_offset.y)
        if new < top:
            self.scroll_to(y=new, animate=False)
            self.refresh()
        elif new >= top + h:
            self.scroll_to(y=new - h + 1, animate=False)
            self.refresh()
        else:
            # Within the page: only the two rows whose highlight changed.
            self.refresh_line(old)
            self.refresh_line(new)
        self.post_message(self.Highlighted(self, self.current_seq()))

    def action_move(self, step: int) -> None:
        if self.rows:
            self.cursor = max(0, min(self.rows - 1, self.cursor + step))

    def action_page(self, step: int) -> None:
        self.action_move(step * max(1, self.scrollable_content_region.height - 1))

    def action_edge(self, end: int) -> None:
        if self.rows:
            self.cursor = self.rows - 1 if end else 0

    def action_choose(self) -> None:
        seq = self.current_seq()
        if seq is not None:
            self.post_message(self.Chosen(self, seq))

    def on_click(self, event: events.Click) -> None:
        row = int(self.scroll_offset.y) + event.y
        if 0 <= row < self.rows:
            self.cursor = row

    # ----- drawing

    def row_segments(self, e: Event) -> list[Segment]:
        m = self.model
        kind = e.name + (f"={m.result(e)}" if e.result else "")
        style = CLASS_STYLE[class_of(e.kind)]
        if self.size.width < COMPACT_BELOW:
            # Narrow (two lists side by side): no index, shorter names, the file and line only.
            loc = m.location(e)
            return [
                Segment(f"{e.seq:>{self._width_seq}} ", DIM),
                Segment(f"T{e.tid:<3}", Style(bold=True)),
                Segment(f"{kind:<16.16} ", style),
                Segment(f"{m.object_label(e.obj):<14.14} "),
                Segment(loc.short() if loc else "", DIM),
            ]
        loc = m.location(e)
        # The function after the line only when there is room for it.
        where = m.where(e) if self.size.width >= WIDE_FROM or loc is None else loc.short()
        return [
            Segment(f"{e.seq:>{self._width_seq}} ", DIM),
            Segment(f"T{e.tid:<3}", Style(bold=True)),
            Segment(f" #{e.idx:<6} ", DIM),
            Segment(f"{kind:<18.18} ", style),
            Segment(f"{m.object_label(e.obj):<18.18} "),
            Segment(where, DIM),
        ]

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        row = int(self.scroll_offset.y) + y
        e = self.event_at(row)
        if e is None:
            if row == 0 and not self.rows:
                text = "no events match the filter" if self.seqs is not None else "the trace has no events"
                return Strip([Segment(text.ljust(width), DIM)])
            return Strip.blank(width)
        segs = self.row_segments(e)
        note = self.notes.get(e.seq)
        if note:
            segs.append(Segment(f"  ✖ {note}", Style(color="bright_red", bold=True)))
        strip = Strip(segs).crop_extend(0, width, None)
        if row == self.cursor:
            strip = strip.apply_style(CURSOR_FOCUSED if self.has_focus else CURSOR)
        elif note:
            strip = strip.apply_style(MARKED)
        return strip

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()
