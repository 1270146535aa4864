"""`dettui --live TRACE`: a real `detreplay --gdb` session (det.gdbmi's
LiveSession, over gdb/MI), with the trace's views following it.

Rules of this file:
  - Every step is one of det's own gdb commands (det next, det step-thread,
    det back, det goto), run by det.gdbmi; the position shown is the one gdb
    reads back, never computed here.
  - Closing the screen closes the session: quitting leaves no process.
"""

from __future__ import annotations

import os

from rich.console import Group, RenderableType
from rich.text import Text
from textual import work
from textual.binding import Binding

from det.errors import DetError
from det.gdbmi import LiveError, LiveSession, Position, ThreadState

from .dialogs import ask_event
from .model import TraceModel
from .trace_screen import TraceScreen


def backtraces(threads: list[ThreadState], current: int | None, event: int | None) -> RenderableType:
    """Every thread's backtrace as gdb has it now (at `event`), the one about to run marked."""
    where = f"at event {event}" if event is not None else "now"
    parts: list[RenderableType] = [Text(f"Threads in gdb, {where}", style="bold underline")]
    for t in threads:
        mark = "▶ " if current is not None and t.name == f"T{current}" else "  "
        parts.append(Text(f"{mark}{t.name} [gdb {t.gdb_id}]", style="bold" if mark.strip() else ""))
        for f in t.frames:
            where = f"{os.path.basename(f.file)}:{f.line}" if f.file and f.line else (f.file or "")
            parts.append(Text(f"    #{f.level:<2} {f.func} {where}", style="grey50" if f.inner else ""))
    return Group(*parts)


class LiveScreen(TraceScreen):
    """The trace's views, following a live replay in gdb."""

    BINDINGS = [
        Binding("n", "det('det next')", "Next event"),
        Binding("s", "step_thread", "Step thread"),
        Binding("b", "det('det back')", "Back"),
        Binding("g", "live_goto", "Go to"),
    ]   # Textual merges these over TraceScreen's: n, b and g mean gdb here

    def __init__(self, model: TraceModel) -> None:
        super().__init__(model)
        self.session: LiveSession | None = None
        self.busy = True
        self.threads_state: list[ThreadState] = []

    def on_mount(self) -> None:
        super().on_mount()
        self.sub_title = f"{self.model.path}  live: starting detreplay --gdb..."
        self.start_session()

    @work(thread=True, exclusive=True, group="gdb")
    def start_session(self) -> None:
        try:
            s = LiveSession(self.model.path)
        except (LiveError, OSError, ValueError) as e:
            self.app.call_from_thread(self._failed, f"detreplay --gdb: {e}")
            return
        self.session = s
        self.app.session = s
        self._after(s.position)

    def _after(self, pos: Position) -> None:
        """Read the threads and show the position (in the worker's thread)."""
        assert self.session is not None
        try:
            threads = self.session.threads()
        except LiveError as e:
            self.app.call_from_thread(self._failed, str(e))
            return
        self.app.call_from_thread(self._show, pos, threads)

    def _failed(self, message: str) -> None:
        self.busy = False
        self.sub_title = f"{self.model.path}  live: {message}"
        self.notify(message, severity="error", timeout=20)

    def _show(self, pos: Position, threads: list[ThreadState]) -> None:
        self.busy = False
        self.threads_state = threads
        m = self.model
        said = next((ln for ln in reversed(pos.said) if ln.startswith("det: ")), "")
        where = "the end" if pos.event is not None and pos.event > m.last_seq else f"event {pos.event}"
        self.sub_title = f"{m.path}  live: at {where} (gdb)" + (f"  {said}" if said else "")
        if pos.event is not None and m.count:
            seq = min(pos.event, m.last_seq)
            self.select(seq)
            self.timeline.cursor = m.rank_of(seq)
        self.show_details(self.events.current_seq())
        for line in pos.said:
            if "diverge" in line or "deadlock" in line:
                self.notify(line, severity="warning", timeout=10)

    def show_details(self, seq: int | None) -> None:
        if seq is None:
            return
        try:
            e = self.model.event(seq)
        except DetError as err:
            self.details.update(Text(str(err), style="bold red"))
            return
        pos = self.session.position if self.session is not None else None
        extra = backtraces(self.threads_state, pos.thread if pos else None, pos.event if pos else None) \
            if self.threads_state else None
        self.details.show(e, self.events.notes.get(seq), extra)

    def _run(self, command: str) -> None:
        if self.session is None or self.busy:
            self.notify("gdb is busy" if self.busy else "no gdb session", timeout=2)
            return
        self.busy = True
        self.sub_title = f"{self.model.path}  live: {command}..."
        self._command(command)

    @work(thread=True, exclusive=True, group="gdb")
    def _command(self, command: str) -> None:
        assert self.session is not None
        try:
            pos = self.session.det(command)
        except LiveError as e:
            self.app.call_from_thread(self._failed, f"{command}: {e}")
            return
        self._after(pos)

    def action_det(self, command: str) -> None:
        self._run(command)

    def action_step_thread(self) -> None:
        seq = self.events.current_seq()
        e = self.model.event(seq) if seq is not None else None
        self._run(f"det step-thread {e.tid}" if e is not None else "det step-thread")

    def action_live_goto(self) -> None:
        ask_event(self, self.model.seq0, self.model.last_seq, lambda seq: self._run(f"det goto {seq}"))

    def on_unmount(self) -> None:
        if self.session is not None:
            self.session.close()
