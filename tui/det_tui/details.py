"""The details pane: one event's fields, its source line with the code
around it, and capstone's disassembly around its call site.

Rules: a missing source file or ELF file is said in the pane, never raised;
the disassembly is det.disasm's (gdb's det disas too), reading the ELF files.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from det.trace import Event, kind_name

from .model import DESCRIPTION, SourceView, TraceModel, class_of, disassembly, source_around
from .timeline import CLASS_STYLE


def event_fields(m: TraceModel, e: Event, note: str | None = None) -> Table:
    t = Table.grid(padding=(0, 1))
    t.add_column(style="grey62", justify="right")
    t.add_column()
    t.add_row("event", Text(f"seq {e.seq}", style="bold"))
    thread = m.threads.get(e.tid, {})
    proc = thread.get("process", 0) or 0
    t.add_row("thread", f"T{e.tid} #{e.idx}" + (f" (process P{proc})" if len(m.processes) > 1 else ""))
    t.add_row("kind", Text(kind_name(e.kind), style=CLASS_STYLE[class_of(e.kind)]))
    t.add_row("", Text(DESCRIPTION.get(e.kind, ""), style="grey62"))
    if e.obj:
        kind_addr = m.objects.get(e.obj, (0, 0))
        at = f" at {kind_addr[1]:#x}" if kind_addr[1] else ""
        t.add_row("object", m.object_label(e.obj, first_use=True) + at)
    t.add_row("result", m.result(e))
    if e.aux:
        t.add_row("aux", m.aux_text(e))
    addr = m.sites.get(e.site)
    if addr:
        t.add_row("call site", f"{addr:#x} {m.where(e)}")
    t.add_row("time", f"{e.ts / 1e6:.3f} ms after the start")
    data = m.data(e.seq)
    if data:
        shown = data[:48]
        text = shown.decode("ascii", "replace") if all(32 <= b < 127 or b in (9, 10) for b in shown) else shown.hex(" ")
        t.add_row("data", f"{len(data)} bytes: {text!r}" + (" ..." if len(data) > 48 else ""))
    if note:
        t.add_row("note", Text(note, style="bold bright_red"))
    return t


def source_panel(sv: SourceView) -> RenderableType:
    if sv.message:
        return Text(sv.message, style="italic grey62")
    from rich.syntax import Syntax  # pygments: imported when the first source is shown

    code = "\n".join(text for _, text in sv.lines)
    return Group(Text(f"{sv.name}:{sv.line}", style="bold"),
                 Syntax(code, "c", line_numbers=True, start_line=sv.lines[0][0], highlight_lines={sv.line},
                        theme="monokai", word_wrap=False))


def disassembly_panel(m: TraceModel, e: Event) -> RenderableType:
    addr = m.sites.get(e.site)
    if not addr:
        return Text("no call site recorded", style="italic grey62")
    lines = disassembly(addr, m.modules, call_site=e.kind != 2, who=f"T{e.tid}")
    out = Text()
    for i, line in enumerate(lines):
        style = "grey62" if i == 0 else ("bold yellow" if line.startswith("=>") else "")
        out.append(line.removeprefix("det: ") + "\n", style=style)
    return out


HEIGHT_STEP = 32


class Details(ScrollView, can_focus=True):
    """What one event is. Line API: its text is rendered to lines once per
    event (and per width), so a new event redraws this pane only, without
    laying the screen out again."""

    def __init__(self, model: TraceModel, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self.model = model
        self.content: RenderableType = Text("")
        self.source: SourceView | None = None     # what the pane shows of the source
        self._lines: list[Strip] = []
        self._width = 0

    def update(self, content: RenderableType) -> None:
        self.content = content
        self._render_lines()
        self.scroll_to(y=0, animate=False)

    def _render_lines(self) -> None:
        width = max(1, self.scrollable_content_region.width)
        console = self.app.console
        lines = console.render_lines(self.content, console.options.update_width(width), pad=False)
        self._lines = [Strip(line) for line in lines]
        self._width = width
        # A new virtual size lays the whole screen out again: it changes in
        # steps of HEIGHT_STEP lines, so most events keep the last one.
        height = -(-len(self._lines) // HEIGHT_STEP) * HEIGHT_STEP
        if self.virtual_size != Size(width, height):
            self.virtual_size = Size(width, height)
        self.refresh()

    def on_resize(self) -> None:
        if self.scrollable_content_region.width != self._width:
            self._render_lines()

    def render_line(self, y: int) -> Strip:
        row = y + int(self.scroll_offset.y)
        width = self.scrollable_content_region.width
        if row < len(self._lines):
            return self._lines[row].crop_extend(0, width, None)
        return Strip.blank(width)

    def show(self, e: Event | None, note: str | None = None, extra: RenderableType | None = None) -> None:
        if e is None:
            self.update(Text("no event selected", style="italic grey62"))
            return
        self.border_title = f"Event {e.seq}"
        parts: list[RenderableType] = [event_fields(self.model, e, note)]
        self.source = source_around(self.model.location(e), self.model.meta.get("cwd"))
        parts += [Text(""), Text("Source", style="bold underline"), source_panel(self.source)]
        if extra is not None:
            parts += [Text(""), extra]
        parts += [Text(""), Text("Code", style="bold underline"), disassembly_panel(self.model, e)]
        self.update(Group(*parts))
