"""dettui: see, step and compare det schedules in a terminal.

    dettui TRACE            the schedule: timeline, events, details
    dettui A B              two schedules side by side (detdiff's comparison; `b`: detdiff --bisect)
    dettui --live TRACE     step a real `detreplay --gdb` session (gdb/MI)

Rules of this file:
  - A file that cannot be shown (missing, damaged, another format version)
    is said inside the UI (ErrorScreen), never as a traceback; wrong
    arguments are one `dettui:` line and exit status 2.
  - The look is dettui.tcss beside this file; the keys are each screen's
    bindings (the footer and `?` show them).
"""

from __future__ import annotations

from collections.abc import Iterable

from textual.app import App, SystemCommand
from textual.screen import Screen

from det.errors import DetError

from .dialogs import ErrorScreen


class DetTui(App[None]):
    """The application: one screen for the mode it was started in."""

    CSS_PATH = "dettui.tcss"
    TITLE = "dettui"
    ENABLE_COMMAND_PALETTE = True

    def __init__(self, paths: list[str], live: bool = False) -> None:
        super().__init__()
        self.paths = paths
        self.live = live
        self.models: list = []
        self.session = None   # the live gdb session, if any

    def get_default_screen(self) -> Screen:
        """The mode's screen is the app's first (no blank screen to switch from)."""
        return self.first_screen()

    def first_screen(self) -> Screen:
        from .model import TraceModel

        for p in self.paths:
            try:
                self.models.append(TraceModel(p))
            except DetError as e:
                return ErrorScreen(p, str(e))
        if len(self.models) == 2:
            from .diff_screen import DiffScreen

            try:
                return DiffScreen(self.models[0], self.models[1])
            except DetError as e:
                return ErrorScreen(f"{self.paths[0]} and {self.paths[1]}", str(e))
        if self.live:
            from .live import LiveScreen

            return LiveScreen(self.models[0])
        from .trace_screen import TraceScreen

        return TraceScreen(self.models[0])

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The palette: Textual's commands, and every key of the screen and its focused widget by name."""
        yield from super().get_system_commands(screen)
        seen: set[str] = set()
        for key, active in screen.active_bindings.items():
            b = active.binding
            if not b.description or b.action == "app.quit" or b.description in seen:
                continue
            seen.add(b.description)
            yield SystemCommand(b.description, f"key: {key}",
                                lambda action=b.action, node=active.node: self.run_action(action, node))

    def on_unmount(self) -> None:
        if self.session is not None:
            self.session.close()
        for m in self.models:
            m.close()
