"""dettui's dialogs: go to an event, filter the list, the keys, and the
screen that says what is wrong with a file that cannot be shown.

Rules: a dialog only asks; the screen that opened it acts on the answer.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Footer, Header, Input, Label, Static

from .model import open_regular

KEYS = """\
| key | what it does |
|---|---|
| `↑` `↓` `j` `k`, `PgUp` `PgDn`, `Home` `End` | move in the event list |
| `←` `→` `h` `l` (timeline) | the cursor one column earlier or later; `↑` `↓` scroll the lanes |
| `+` `-` (or `i` `o`), `0` | zoom the timeline in, out, to the whole run |
| `Enter` | in the list: the timeline zooms to single events around it |
| `/` then `n` `N` | search (thread `T2`, kind, object, variable, file, line or function); next, previous |
| `f` | filter the list by thread, kind, object, source file; `F` clears it |
| `t` | only the selected event's thread (again: all threads) |
| `g` | go to an event by its number (seq) |
| `x` | go to how the run ended: the dead thread's last event, the deadlock, or the divergence |
| `Tab` | the next pane |
| mouse | click a lane or a row; the wheel pans, ctrl+wheel zooms, shift+wheel scrolls the lanes |
| `ctrl+p` | the command palette |
| `?` | this help |
| `q` | quit |

Comparing two traces (`dettui A B`): `n` / `N` the next or previous difference,
`d` the first divergence, `b` runs `detdiff --bisect` (strict traces), `c` the critical pair.

Live (`dettui --live TRACE`): `n` next event, `s` the selected thread's next event,
`b` back one event, `g` go to an event; all through gdb (`det next`, `det step-thread`,
`det back`, `det goto`).
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        from textual.widgets import Markdown  # markdown-it takes a tenth of a second to import: when asked

        with Vertical(id="help-box", classes="dialog"):
            with VerticalScroll(id="help-scroll"):
                yield Markdown(KEYS, id="help-text")
            yield Button("Close", id="help-close", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#help-scroll").focus()   # arrows and PgDn scroll the keys

    def on_button_pressed(self) -> None:
        self.dismiss(None)


class GotoScreen(ModalScreen[int | None]):
    """Asks for an event number."""

    BINDINGS = [Binding("escape", "dismiss", "Cancel")]

    def __init__(self, first: int, last: int) -> None:
        super().__init__()
        self.first, self.last = first, last

    def compose(self) -> ComposeResult:
        with Vertical(id="goto-box", classes="dialog"):
            yield Label(f"Go to event (seq {self.first}..{self.last}):")
            yield Input(placeholder="event number", id="goto-input", type="integer")
            yield Label("", id="goto-error", classes="error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text.lstrip("-").isdigit() or not self.first <= int(text) <= self.last:
            self.query_one("#goto-error", Label).update(f"a number from {self.first} to {self.last}")
            return
        self.dismiss(int(text))


def ask_event(screen: Screen, first: int, last: int, then: Callable[[int], None]) -> None:
    """The go-to dialog; then(seq) when the user gave an event number."""
    if last < first:
        return
    screen.app.push_screen(GotoScreen(first, last), lambda seq: then(seq) if seq is not None else None)


class FilterScreen(ModalScreen[tuple[str, str, str, str] | None]):
    """Asks for the list's filter: thread, kind, object, source file (empty: any)."""

    BINDINGS = [Binding("escape", "dismiss", "Cancel")]

    def __init__(self, current: tuple[str, str, str, str]) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        t, k, o, w = self.current
        with Grid(id="filter-box", classes="dialog"):
            yield Label("Filter the events (empty: any; Enter applies)", id="filter-title")
            yield Label("thread")
            yield Input(t, placeholder="T1 T3", id="filter-thread")
            yield Label("kind")
            yield Input(k, placeholder="mutex, cond_wait, ...", id="filter-kind")
            yield Label("object")
            yield Input(o, placeholder="mutex 4, account, ...", id="filter-object")
            yield Label("source")
            yield Input(w, placeholder="file.c, file.c:31, function", id="filter-where")
            yield Label("", id="filter-error", classes="error")
            yield Button("Apply", id="filter-apply", variant="primary")
            yield Button("Clear", id="filter-clear")

    def _values(self) -> tuple[str, str, str, str]:
        return tuple(self.query_one(f"#filter-{n}", Input).value for n in ("thread", "kind", "object", "where"))

    def on_input_submitted(self) -> None:
        self.dismiss(self._values())

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(("", "", "", "") if event.button.id == "filter-clear" else self._values())


class ErrorScreen(Screen[None]):
    """A file that cannot be shown: what is wrong, and what is there."""

    BINDINGS = [Binding("q,escape", "app.quit", "Quit")]

    def __init__(self, path: str, message: str) -> None:
        super().__init__()
        self.path, self.message = path, message

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="error-box"):
            yield Static(f"[b]dettui cannot show {self.path}[/b]", id="error-title")
            yield Static(self.message, id="error-message")
            yield Static(self._facts(), id="error-facts")
        yield Footer()

    def _facts(self) -> str:
        try:
            st = os.stat(self.path)
        except OSError as e:
            return f"what is there: nothing ({e.strerror})"
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(st.st_mtime))
        try:
            with open_regular(self.path) as f:
                head = f.read(16)
        except OSError as e:
            return f"what is there: {st.st_size} bytes, modified {when}, not readable ({e.strerror})"
        kind = "an SQLite file" if head.startswith(b"SQLite format 3") else "not an SQLite file"
        return f"what is there: {st.st_size} bytes, modified {when}, {kind}"
