"""How every det tool names a recorded object: `mutex 4 (account)`.

One scheme in detrec's deadlock report, `detrec info`, detreplay's
divergence and deadlock lines, det's gdb commands and detdiff:
  - the kind and the trace's object number: objects are numbered by the
    recording, so every tool that reads one trace shows the same number
    (detdiff, reading two, numbers by A and shows B's number where it
    differs);
  - a thread object is its thread's T-name (`T2`);
  - the program's name for it when it has one: the variable, from the ELF
    symbol tables (det.symbols.DataSymbols), `name[3]` for an element of an array of
    such objects, `name+16` inside a larger variable; glibc's FILE objects
    behind the standard streams are `stdin`, `stdout`, `stderr`;
  - otherwise (the heap, a stack): where the program first used it
    (`first used at x.c:31`); det's gdb commands add the pointer expression
    that reaches it from the program's static data (`pool->lock`), which
    only a live program can tell.

Rules: standard library only (gdb's Python imports this module). An
unreadable ELF file, or no addr2line, degrades names to numbers, never to
errors.
"""

from __future__ import annotations

from collections.abc import Callable

from . import events as ev
from . import schema
from .symbols import DataSymbols, Symbolizer, variable_name
from .trace import Trace, objkind_name

THREAD_KIND = next(o.number for o in ev.OBJKINDS if o.name == "THREAD")


class ObjectNames:
    """Labels of one trace's objects.

    live: for det's gdb commands, a function (address, kind name) -> the
    pointer expression that reaches an object with no symbol, or None."""

    def __init__(self, trace: Trace, sym: Symbolizer | None = None, symbolize: bool = True,
                 live: Callable[[int, str], str | None] | None = None) -> None:
        self.trace = trace
        self.sym = sym if sym is not None else Symbolizer(trace.modules())
        self.symbolize = symbolize
        self.live = live
        self.objects = trace.objects()
        self.thread_of = {t["obj"]: t["tid"] for t in trace.threads() if t.get("obj")}
        self._symbols: dict[str, DataSymbols] = {}
        self._names: dict[int, str | None] = {}
        self._sites: dict[int, str | None] = {}

    def kind(self, obj: int) -> str:
        return objkind_name(self.objects.get(obj, (0, 0))[0])

    def symbol(self, address: int, kind: str) -> str | None:
        """The program's variable at address (static objects), or None."""
        if not self.symbolize or not address:
            return None
        return variable_name(self.sym, self._symbols, kind, address)

    def data_symbols(self, module: str) -> DataSymbols:
        if module not in self._symbols:
            self._symbols[module] = DataSymbols(module)
        return self._symbols[module]

    def name(self, obj: int) -> str | None:
        """The program's name for the object: its variable, or the pointer
        expression that reaches it (gdb), or None."""
        if obj not in self._names:
            kind_no, addr = self.objects.get(obj, (0, 0))
            kind = objkind_name(kind_no)
            n = None
            if kind_no != THREAD_KIND:
                n = self.symbol(addr, kind)
                if n is None and self.live is not None and addr:
                    n = self.live(addr, kind)
                    if n is None:
                        return None  # the program may not reach it yet: ask again later
            self._names[obj] = n
        return self._names[obj]

    def first_use(self, obj: int) -> str | None:
        """`x.c:31`: where the program first used the object."""
        if obj not in self._sites:
            ra = self.trace.q1(f"SELECT s.address FROM {schema.EVENTS_PLAIN} e JOIN sites s ON s.site = e.site "
                               "WHERE e.obj = ? ORDER BY e.seq LIMIT 1", (obj,))
            self._sites[obj] = self.sym.one(ra).short() if ra and self.symbolize else None
        return self._sites[obj]

    def label(self, obj: int, first_use: bool = True) -> str:
        """`mutex 4 (account)`, `T2`, `mutex 7 (first used at x.c:31)`; "" for no object.
        first_use=False leaves out where an unnamed object was first used
        (a query of the events: viewers labelling many objects at once)."""
        if not obj:
            return ""
        kind_no = self.objects.get(obj, (0, 0))[0]
        if kind_no == THREAD_KIND and obj in self.thread_of:
            return f"T{self.thread_of[obj]}"
        base = f"{objkind_name(kind_no)} {obj}"
        n = self.name(obj)
        if n:
            return f"{base} ({n})"
        site = self.first_use(obj) if first_use else None
        return f"{base} (first used at {site})" if site else base

    def at(self, address: int) -> str:
        """An address no recorded object has (a divergence's): `an object at 0x.. (other)`."""
        if not address:
            return "no object"
        n = self.symbol(address, "")
        if n is None and self.live is not None:
            n = self.live(address, "")
        return f"an object at {address:#x} ({n})" if n else f"an object at {address:#x}"
