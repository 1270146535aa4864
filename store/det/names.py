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
  - otherwise (the heap, a stack): the expression the program's source
    passed to det's call at the object's first site that shows one
    (`pthread_mutex_lock(&q->mut)`, or `lock(&q->mut)` at the caller of an
    inlined one-line wrapper: `q->mut`; det.callsite reads it); det's gdb
    commands name it instead by the pointer expression that reaches it from
    the program's static data (`pool->lock`), which only a live program
    can tell; else where the program first used it (`first used at x.c:31`).

Rules: standard library only (gdb's Python imports this module). An
unreadable ELF file, or no addr2line, degrades names to numbers, never to
errors.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from . import events as ev
from . import schema
from .callsite import INTERPOSED, call_args, forwarded, object_expression
from .symbols import DataSymbols, Location, Symbolizer, outside_wrappers, variable_name
from .trace import Trace, objkind_name

THREAD_KIND = next(o.number for o in ev.OBJKINDS if o.name == "THREAD")
DESTROY_KINDS = tuple(k.number for k in ev.EVENTS if k.role == "DESTROY")
MAX_SITES_READ = 8  # an object's sites tried for a source expression, in order of first use


def _callee(kind: int) -> str:
    """The calls an event kind comes from, as a regular expression: the
    interposed names its description gives, else any interposed call."""
    k = ev.BY_NUMBER.get(kind)
    names = re.findall(INTERPOSED, k.description) if k is not None else []
    return "|".join(sorted(set(names))) if names else INTERPOSED


def source_expression(loc: Location, kind: int) -> str | None:
    """The object det's call at loc was given, as its source spells it at
    the first frame outside one-line wrappers: `q->mut` for
    `lock(&q->mut)`; None when the source does not show one (no source,
    or only a wrapper's parameter)."""
    frames = list(loc.frames)
    if not frames:
        return None
    outer = outside_wrappers(frames)
    callee, arg = _callee(kind), 0
    if outer:
        inner_callee = callee if outer == 1 else re.escape((frames[outer - 2][0] or "").split("(")[0])
        f, file, line = frames[outer - 1]
        k = forwarded(file, line, f, inner_callee)
        if k is None or not f:
            return None
        callee, arg = re.escape(f.split("(")[0].split("::")[-1]), k
    f, file, line = frames[outer]
    args = call_args(file, line, callee)
    if not args or len(args) <= arg:
        return None
    if forwarded(file, line, f, callee) is not None:
        return None  # a wrapper's own parameter (one not inlined): no name outside the wrapper
    return object_expression(args[arg])


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
        self._object_sites: dict[int, list[tuple[int, int]]] | None = None  # obj -> (kind, address) of its first sites
        self._destroyed: dict[int, tuple[int, int]] | None = None  # obj -> (the object destroyed there before, site)

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
        expression that reaches it (gdb), or the expression its source
        passes to the call (source_name), or None."""
        if obj not in self._names:
            kind_no, addr = self.objects.get(obj, (0, 0))
            kind = objkind_name(kind_no)
            n = None
            if kind_no != THREAD_KIND:
                n = self.symbol(addr, kind)
                if n is None and self.live is not None and addr:
                    n = self.live(addr, kind)
                    if n is None:  # the program may not reach it yet: ask again later
                        return self.source_name(obj) if self.symbolize else None
                if n is None and self.symbolize:
                    n = self.source_name(obj)
            self._names[obj] = n
        return self._names[obj]

    def source_name(self, obj: int) -> str | None:
        """The expression the program's source passed for the object at its
        first site that shows one (source_expression)."""
        if self._object_sites is None:
            # every object's first sites at once: one addr2line run for them all
            self._object_sites = {}
            for o, kind, address in self.trace.q(
                    "SELECT c.obj, c.kind, s.address FROM calls c JOIN sites s ON s.site = c.site "
                    "WHERE c.obj != 0 ORDER BY c.call"):
                sites = self._object_sites.setdefault(o, [])
                if len(sites) < MAX_SITES_READ and all(a != address for _, a in sites):
                    sites.append((kind, address))
            self.sym.lookup([a for sites in self._object_sites.values() for _, a in sites])
        for kind, address in self._object_sites.get(obj, []):
            n = source_expression(self.sym.one(address), kind)
            if n:
                return n
        return None

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
        about = self.describe(obj, first_use)
        return f"{base} ({about})" if about else base

    def describe(self, obj: int, first_use: bool = False) -> str:
        """What `label` says in parentheses: `q->mut`, `first used at x.c:31`
        (first_use), and `after mutex 4 (q->mut) was destroyed there at
        x.c:50` for an object used again where one was destroyed."""
        parts = []
        n = self.name(obj)
        if n:
            parts.append(n)
        elif first_use and (site := self.first_use(obj)):
            parts.append(f"first used at {site}")
        before = self.destroyed_before(obj)
        if before:
            prev, ra = before
            at = f" at {self.sym.one(ra).short()}" if ra and self.symbolize else ""
            prev_name = self.name(prev)
            parts.append(f"after {self.kind(obj)} {prev}{f' ({prev_name})' if prev_name else ''} "
                         f"was destroyed there{at}")
        return "; ".join(parts)

    def destroyed_before(self, obj: int) -> tuple[int, int] | None:
        """(the object of this kind at the same address that was destroyed
        before this one was first used, the destroying call's return address):
        a destroyed (often freed) object used again, or made again there."""
        if self._destroyed is None:
            self._destroyed = {}
            last: dict[tuple[int, int], int] = {}
            follows: dict[int, int] = {}
            for o in sorted(self.objects):
                kind_no, addr = self.objects[o]
                if kind_no != THREAD_KIND and addr:
                    if (kind_no, addr) in last:
                        follows[o] = last[(kind_no, addr)]
                    last[(kind_no, addr)] = o
            if follows:  # (rare: only then read the events)
                marks = ",".join("?" * len(DESTROY_KINDS))
                destroyed = {o: ra for o, ra in self.trace.q(
                    "SELECT c.obj, s.address FROM calls c LEFT JOIN sites s ON s.site = c.site "
                    f"WHERE c.kind IN ({marks}) ORDER BY c.call", DESTROY_KINDS)}
                self._destroyed = {o: (p, destroyed[p] or 0) for o, p in follows.items() if p in destroyed}
        return self._destroyed.get(obj)

    def at(self, address: int) -> str:
        """An address no recorded object has (a divergence's): `an object at 0x.. (other)`."""
        if not address:
            return "no object"
        n = self.symbol(address, "")
        if n is None and self.live is not None:
            n = self.live(address, "")
        return f"an object at {address:#x} ({n})" if n else f"an object at {address:#x}"
