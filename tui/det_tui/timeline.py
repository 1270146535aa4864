"""The timeline: one lane per thread, events in recorded order left to right.

Rules of this file:
  - Lanes are in process order (a process's threads together, labelled
    `P1 T3` when the program had child processes).
  - Drawn line by line (Textual's line API): one Strip per lane, made from
    slices of TraceModel.lanes_s (one code point per event), never a widget
    or an object per event. A column holds `per` events; per = 1 shows
    single events as letters, more shows the most telling class of the
    thread's events in that column as a coloured block.
  - A thread waits from a wait-begin event (condition or barrier wait,
    strict mode's BLOCK) to its next event: drawn as a line. A thread left
    blocked when the program stopped waits from its last event to the end:
    drawn in red (a deadlock's threads, their labels marked).
  - The cursor is an event rank; the column holding it is highlighted.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from det.trace import LANE_KINDS

from .messages import FromWidget
from .model import CLASS_RANK, CLASSES, WAIT_BEGINS, TraceModel, glyph_of

CLASS_STYLE = {
    "other": Style(color="grey62"),
    "output": Style(color="bright_white"),
    "lock": Style(color="yellow"),
    "input": Style(color="cyan"),
    "sync": Style(color="magenta"),
    "thread": Style(color="green"),
    "sched": Style(color="blue"),
    "signal": Style(color="bright_red", bold=True),
}
WAIT_STYLE = Style(color="magenta", dim=True)
BLOCKED_STYLE = Style(color="red", bold=True)
AXIS_STYLE = Style(color="grey50")
LABEL_STYLE = Style(color="bright_white", bold=True)
LABEL_ALT_STYLE = Style(color="sky_blue1", bold=True)
CURSOR_BG = Style(bgcolor="grey23")
CURSOR_CELL = Style(reverse=True, bold=True)
MARK_BG = Style(bgcolor="dark_red")
ZOOMS = [1, 2, 5]


def zoom_steps(limit: int) -> list[int]:
    """Events per column: 1, 2, 5, 10, 20, 50, ... up to limit."""
    out, scale = [], 1
    while True:
        for z in ZOOMS:
            out.append(z * scale)
            if z * scale >= limit:
                return out
        scale *= 10


class Timeline(ScrollView, can_focus=True):
    """Threads as lanes, zoomable from the whole run to single events."""

    BINDINGS = [
        Binding("left,h", "move(-1)", "Earlier", show=False),
        Binding("right,l", "move(1)", "Later", show=False),
        Binding("shift+left,H", "page(-1)", "Page earlier", show=False),
        Binding("shift+right,L", "page(1)", "Page later", show=False),
        Binding("plus,equals_sign,i", "zoom(-1)", "Zoom in"),
        Binding("minus,o", "zoom(1)", "Zoom out"),
        Binding("0", "whole", "Whole run"),
        Binding("up,k", "scroll_up", "Lanes up", show=False),
        Binding("down,j", "scroll_down", "Lanes down", show=False),
    ]

    cursor: reactive[int] = reactive(0, always_update=True, repaint=False)   # watch_cursor refreshes

    class Selected(FromWidget):
        """The user picked an event on the timeline."""

        def __init__(self, sender: Timeline, rank: int) -> None:
            super().__init__(sender)
            self.rank = rank

    def __init__(self, model: TraceModel, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self.model = model
        self.start = 0
        self.per = 1
        self.marks: set[int] = set()      # ranks drawn on a red background (a divergence, a critical pair)
        self.prefix = ""          # before the title: which trace (in dettui A B)
        self.fitted = True        # showing the whole run: keep it so when the size changes
        self._cache_key: tuple | None = None
        self._title = ""
        self._cursor_shown: tuple[int, int, int, int] | None = None
        self._grid_key: tuple | None = None
        self._grid_cells: dict[int, list[tuple[str, Style | None]]] = {}
        self._rows: list[Strip] = []
        self.rows_meta: list[int | None] = []   # per row: the lane index, None for the axis and separators

    # ----- geometry

    @property
    def label_width(self) -> int:
        return max((len(lane.label) for lane in self.model.lanes), default=2) + 3

    @property
    def columns(self) -> int:
        return max(1, self.size.width - self.label_width)

    def _row_plan(self) -> list[int | None]:
        """The axis, then the lanes (already in process order)."""
        return [None] + list(range(len(self.model.lanes)))

    def on_resize(self) -> None:
        self.rows_meta = self._row_plan()
        self.virtual_size = Size(self.size.width, len(self.rows_meta))
        if self.fitted and self.size.width > self.label_width:
            self.action_whole()
        self.refresh()

    def lanes_ready(self) -> None:
        """The model's lanes string is loaded: draw."""
        self._cache_key = self._grid_key = None
        self.refresh()

    @property
    def title(self) -> str:
        n = self.model.count
        if not n:
            return f"{self.prefix}Timeline: no events"
        end = min(n, self.start + self.columns * self.per)
        unit = "1 event" if self.per == 1 else f"{self.per} events"
        return f"{self.prefix}Timeline  events {self.start}..{end - 1} of {n}  (1 column = {unit})"

    # ----- moving and zooming

    def _ensure_visible(self) -> None:
        span = self.columns * self.per
        if self.cursor < self.start or self.cursor >= self.start + span:
            col = self.columns // 3
            self.start = max(0, (self.cursor // self.per - col) * self.per)
        self.start = max(0, min(self.start, max(0, self.model.count - 1)))

    def watch_cursor(self) -> None:
        self._ensure_visible()
        self._update_title()
        # Zoomed out, most moves stay in the same column and thread: nothing to redraw.
        s = self.model.lanes_s
        tid = ord(s[self.cursor]) // LANE_KINDS if s is not None and 0 <= self.cursor < len(s) else -1
        shown = (self.start, self.per, (self.cursor - self.start) // self.per, tid)
        if shown != self._cursor_shown:
            self._cursor_shown = shown
            self.refresh()

    def _update_title(self) -> None:
        title = self.title
        if title != self._title:    # a new title re-lays the screen out: only when it changes
            self._title = title
            self.border_title = title

    def action_move(self, step: int) -> None:
        if self.model.count:
            self.cursor = max(0, min(self.model.count - 1, self.cursor + step * self.per))
            self.post_message(self.Selected(self, self.cursor))

    def action_page(self, step: int) -> None:
        self.fitted = False
        span = self.columns * self.per
        self.start = max(0, min(max(0, self.model.count - span // 2), self.start + step * (span * 3 // 4)))
        self._update_title()
        self.refresh()

    def set_per(self, per: int) -> None:
        """Zoom to per events a column, keeping the cursor's column where it is."""
        self.fitted = False
        col = (self.cursor - self.start) // self.per if self.start <= self.cursor else 0
        col = max(0, min(self.columns - 1, col))
        self.per = max(1, per)
        self.start = max(0, (self.cursor // self.per - col) * self.per)
        self._ensure_visible()
        self._update_title()
        self.refresh()

    def action_zoom(self, direction: int) -> None:
        fit = max(1, -(-self.model.count // self.columns))
        steps = zoom_steps(fit)
        i = next((k for k, z in enumerate(steps) if z >= self.per), len(steps) - 1)
        if direction < 0 and steps[i] > self.per:
            i += 1      # between two steps: zooming in goes to the smaller one
        i = max(0, min(len(steps) - 1, i + direction))
        self.set_per(steps[i])

    def action_whole(self) -> None:
        self.fitted = True
        self.per = max(1, -(-self.model.count // self.columns))
        self.start = 0
        self._update_title()
        self.refresh()

    def zoom_to(self, rank: int) -> None:
        """Single events around rank."""
        self.fitted = False
        self.per = 1
        self.cursor = rank
        self.start = max(0, rank - self.columns // 3)
        self._update_title()
        self.refresh()

    # ----- mouse

    def _hit(self, x: int, y: int) -> int | None:
        row = y + int(self.scroll_offset.y)
        if row >= len(self.rows_meta) or x < self.label_width:
            return None
        col = x - self.label_width
        a = self.start + col * self.per
        if a >= self.model.count:
            return None
        lane_i = self.rows_meta[row]
        s = self.model.lanes_s
        if lane_i is None or s is None or self.per == 1:
            return a
        seg = s[a:a + self.per]
        hits = [i for i in (seg.find(c) for c in self.model.chars_of.get(self.model.lanes[lane_i].tid, [])) if i >= 0]
        return a + min(hits) if hits else a

    def on_click(self, event: events.Click) -> None:
        rank = self._hit(event.x, event.y)
        if rank is not None:
            self.cursor = rank
            self.post_message(self.Selected(self, rank))

    # The wheel pans through time; with ctrl it zooms, with shift it scrolls the lanes.

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        if event.ctrl:
            self.action_zoom(1)
        elif event.shift:
            self.scroll_down(animate=False)
        else:
            self.action_page(1)
        event.stop()

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        if event.ctrl:
            self.action_zoom(-1)
        elif event.shift:
            self.scroll_up(animate=False)
        else:
            self.action_page(-1)
        event.stop()

    # ----- drawing

    def render_line(self, y: int) -> Strip:
        key = (self.start, self.per, self.size.width, self.cursor, self.model.lanes_s is not None,
               len(self.rows_meta), frozenset(self.marks))
        if key != self._cache_key:
            self._rows = self._draw()
            self._cache_key = key
        row = y + int(self.scroll_offset.y)
        if row < len(self._rows):
            return self._rows[row]
        return Strip.blank(self.size.width)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.rows_meta) or len(self._row_plan())

    def _grid(self) -> dict[int, list[tuple[str, Style | None]]]:
        """Per thread, per column: its glyph and style. Depends only on the
        view (start, per, columns), not on the cursor: cached."""
        key = (self.start, self.per, self.columns)
        if self._grid_key == key:
            return self._grid_cells
        m = self.model
        s = m.lanes_s or ""
        n, per, start, cols = len(s), self.per, self.start, self.columns
        tids = [lane.tid for lane in m.lanes]
        lane_of = {lane.tid: lane for lane in m.lanes}
        # Per thread: waiting when the first column begins?
        waiting: dict[int, bool] = {}
        for t in tids:
            last_k, last_at = None, -1
            for c in m.chars_of.get(t, []):
                at = s.rfind(c, 0, start)
                if at > last_at:
                    last_at, last_k = at, ord(c) % LANE_KINDS
            waiting[t] = last_k in WAIT_BEGINS
        cells: dict[int, list[tuple[str, Style | None]]] = {t: [] for t in tids}
        blank = (" ", None)
        for col in range(cols):
            a = start + col * per
            if a >= n:
                for t in tids:
                    cells[t].append(blank)
                continue
            seg = s[a:a + per]
            top: dict[int, int] = {}                 # tid -> the class rank of its most telling event
            last: dict[int, tuple[int, int]] = {}    # tid -> (position, kind) of its last event
            for ch in set(seg):
                code = ord(ch)
                t, k = code // LANE_KINDS, code % LANE_KINDS
                r = CLASS_RANK[k]
                if r > top.get(t, -1):
                    top[t] = r
                at = seg.rfind(ch) if per > 1 else 0
                if t not in last or at > last[t][0]:
                    last[t] = (at, k)
            for t in tids:
                if t in top:
                    k = last[t][1]
                    waiting[t] = k in WAIT_BEGINS
                    cells[t].append((glyph_of(k) if per == 1 else "█", CLASS_STYLE[CLASSES[top[t]]]))
                    continue
                lane = lane_of[t]
                if lane.blocked and lane.last >= 0 and a > lane.last:
                    cells[t].append(("━", BLOCKED_STYLE))
                elif waiting[t] and lane.first <= a <= lane.last:
                    cells[t].append(("─", WAIT_STYLE))
                else:
                    cells[t].append(blank)
        self._grid_key, self._grid_cells = key, cells
        return cells

    def _draw(self) -> list[Strip]:
        m = self.model
        width, label_w, cols = self.size.width, self.label_width, self.columns
        s = m.lanes_s
        if not self.rows_meta:
            self.rows_meta = self._row_plan()
        if s is None:
            msg = "reading the schedule..." if m.count else "no events"
            return [Strip([Segment(msg.ljust(width)[:width], AXIS_STYLE)])]
        grid = self._grid()
        per, start = self.per, self.start
        cur_col = (self.cursor - start) // per if start <= self.cursor < start + cols * per else -1
        cur_tid = ord(s[self.cursor]) // LANE_KINDS if 0 <= self.cursor < len(s) else -1
        mark_cols = {(r - start) // per for r in self.marks if start <= r < start + cols * per}
        rows: list[Strip] = []
        cycle = set(m.problem.cycle) if m.problem else set()
        for r in self.rows_meta:
            if r is None:
                rows.append(self._axis(width, label_w, cols))
                continue
            lane = m.lanes[r]
            mark = " ✖" if lane.tid in cycle else (" ■" if lane.blocked else "")
            label = (lane.label + mark).ljust(label_w - 1)[:label_w - 1] + "│"
            # Processes take turns in two label colours, so a process's threads read as a group.
            style = BLOCKED_STYLE if lane.blocked else (LABEL_STYLE if lane.process % 2 == 0 else LABEL_ALT_STYLE)
            segs = [Segment(label, style)]
            line = grid[lane.tid]
            # Runs of cells between the highlighted columns go in as they are.
            special = sorted(c for c in {cur_col, *mark_cols} if 0 <= c < len(line))
            prev = 0
            for c in special + [len(line)]:
                segs.extend(Segment(g, st) for g, st in line[prev:c])
                if c < len(line):
                    g, st = line[c]
                    if c == cur_col:
                        st = (st or Style()) + (CURSOR_CELL if lane.tid == cur_tid and g.strip() else CURSOR_BG)
                    else:
                        st = (st or Style()) + MARK_BG
                    segs.append(Segment(g, st))
                prev = c + 1
            rows.append(Strip(Segment.simplify(segs)).crop_extend(0, width, None))
        return rows

    def _axis(self, width: int, gutter: int, cols: int) -> Strip:
        line = [" "] * cols
        step = 16
        for col in range(0, cols, step):
            text = f"|{self.start + col * self.per}"
            if col + len(text) <= cols:
                line[col:col + len(text)] = text
        return Strip([Segment(" " * (gutter - 1) + "│", AXIS_STYLE), Segment("".join(line), AXIS_STYLE)],
                     width).adjust_cell_length(width)
