"""One registration point for det's gdb commands (as gef's and pwndbg's):
@command registers a command class, define_all() defines every registered
command in gdb and builds `help det` from their docstrings.

Rules of this file:
  - A command's docstring is its help: its first line is its summary (in
    `help det` and in gdb's own list of det subcommands) and its `Usage:`
    line how it is called. Nothing else lists the commands.
  - The `det` prefix is defined first, with its docstring's first paragraph,
    the list (usage, summary; by name, settings last), then the rest.
"""

from __future__ import annotations

import gdb

from det_gdb.args import Args
from det_gdb.session import Session

REGISTERED: list[type] = []
LIST_INDENT = 21  # `help det`: the usage column's width


def command(name: str, category: int, completer: int | None = None, prefix: bool = False):
    """Class decorator: a det command (a DetCommand) or setting (a gdb.Parameter
    whose __init__ takes no argument) called `name`, defined by define_all()."""

    def register(cls: type) -> type:
        cls.det_name = name
        cls.det_category = category
        cls.det_completer = completer
        cls.det_prefix = prefix
        REGISTERED.append(cls)
        return cls

    return register


class DetCommand(gdb.Command):
    """A det command: its name, class and completion come from @command."""

    det_name: str
    det_category: int
    det_completer: int | None
    det_prefix: bool

    def __init__(self) -> None:
        completer = () if self.det_completer is None else (self.det_completer,)
        super().__init__(self.det_name, self.det_category, *completer, prefix=self.det_prefix)

    def args(self, arg: str, s: Session | None = None) -> Args:
        """This command's arguments, read with s's recording."""
        return Args(self.det_name, arg, s)


def summary(cls: type) -> tuple[str, str]:
    """(usage, summary) of a registered command, from its docstring."""
    lines = (cls.__doc__ or "").strip().splitlines()
    usage = next((ln.removeprefix("Usage:").strip() for ln in lines if ln.startswith("Usage:")), cls.det_name)
    return usage.split("  ")[0], lines[0] if lines else ""


def listing(commands: list[type]) -> str:
    """`help det`'s list: each command's usage and summary, one a line."""
    out = []
    for cls in commands:
        usage, what = summary(cls)
        out.append(f"{usage:<{LIST_INDENT}}  {what}" if len(usage) <= LIST_INDENT else f"{usage}  {what}")
    return "\n".join(out)


def define_all() -> None:
    """Define the registered commands in gdb (once, at start)."""
    prefix = [c for c in REGISTERED if c.det_prefix]
    rest = sorted((c for c in REGISTERED if not c.det_prefix),
                  key=lambda c: (issubclass(c, gdb.Parameter), c.det_name))
    for cls in prefix:
        intro, _, more = (cls.__doc__ or "").partition("\n\n")
        cls.__doc__ = f"{intro}\n\n{listing(rest)}\n\n{more}".rstrip() if more else f"{intro}\n\n{listing(rest)}"
        cls()
    for cls in rest:
        cls()
