"""Messages that say which widget sent them (dettui A B has two of each).

Rules: a message's control is its sender, so handlers tell the two sides apart.
"""

from __future__ import annotations

from textual.message import Message
from textual.widget import Widget


class FromWidget(Message):
    """A message whose control is the widget that posted it."""

    def __init__(self, sender: Widget) -> None:
        self.sender = sender
        super().__init__()

    @property
    def control(self) -> Widget:
        return self.sender
