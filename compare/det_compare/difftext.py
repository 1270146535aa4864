"""Comparisons as text: the lines detdiff prints for a det.compare.diff.DiffResult,
and the event lines, results and outcomes det.compare.bisect.report shares.

Rules: renders only (returns lines, prints nothing); colour through a Style,
which is off unless the caller turns it on.
"""

from __future__ import annotations

from typing import Any

from det import results
from det.trace import outcome_words

from .diff import DiffResult, Divergence, EventRef, Inversion, OneSide, TraceSummary


class Style:
    """ANSI styles, or none."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def _wrap(self, code: str, s: str) -> str:
        return f"\x1b[{code}m{s}\x1b[0m" if self.on else s

    def head(self, s: str) -> str:
        return self._wrap("1", s)

    def a(self, s: str) -> str:
        return self._wrap("31", s)

    def b(self, s: str) -> str:
        return self._wrap("32", s)

    def dim(self, s: str) -> str:
        return self._wrap("2", s)

    def side(self, side: str, s: str) -> str:
        return self.a(s) if side == "a" else self.b(s)


def result_text(kind: str, result: int) -> str:
    """A call's result as its man page says it (det.results, every tool's one wording)."""
    return results.result_text(kind, result)


def where(e: EventRef) -> str:
    """`file.c:31 (function)`."""
    if e.function and e.location and e.location != e.function:
        return f"{e.location} ({e.function})"
    return e.location or "?"


def obj(e: EventRef) -> str:
    return f"{e.object} ({e.name})" if e.name else e.object


def event_line(e: EventRef) -> str:
    res = f" = {result_text(e.kind, e.result)}" if e.result else ""
    return f"seq {e.seq:<7} T{e.tid:<3} #{e.idx:<6} {e.kind + res:<18} {obj(e):<26} {where(e)}"


def outcome_text(s: TraceSummary) -> str:
    return outcome_words(s.outcome)


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def render(r: DiffResult, st: Style) -> list[str]:
    out: list[str] = []
    w = out.append
    width = max(len(r.a.path), len(r.b.path))
    for side, s in (("a", r.a), ("b", r.b)):
        w(st.side(side, f"{side.upper()}  {s.path:<{width}}") +
          f"  {outcome_text(s):<10} {plural(s.events, 'event')}, {plural(s.threads, 'thread')}")
    w(st.dim(f"   {' '.join(r.a.argv) or r.a.binary}"))
    for note in r.notes:
        w(f"note: {note}")
    if r.identical:
        w("")
        w(st.head(f"Identical: the same schedule ({plural(r.a.events, 'event')}) and the same outcome."))
        return out

    if r.divergence is not None:
        w("")
        _divergence(r.divergence, st, w)
    else:
        w("")
        same = "identical" if r.schedule_identical else "the same operations in the same order"
        w(st.head(f"The schedules are {same} ({plural(r.a.events, 'event')})."))

    if r.threads:
        w("")
        w(st.head(f"Threads that do something else at the same index ({r.thread_count}):"))
        for t in r.threads:
            head = f"  T{t.tid} #{t.index}"
            for side, e, n, end in (("a", t.a, t.a_events, t.a_end), ("b", t.b, t.b_events, t.b_end)):
                what = (f"{e.kind} {obj(e)} at {where(e)}" if e is not None
                        else f"has no more events (T{t.tid} ends after {n}, {end or 'state unknown'})")
                w(f"{head:<14}" + st.side(side, f"{side.upper()}: {what}"))
                head = ""
        if r.thread_count > len(r.threads):
            w(st.dim(f"  ... and {r.thread_count - len(r.threads)} more (--limit 0 shows all)"))

    if r.inversions:
        w("")
        more = r.inversion_count - len(r.inversions)
        w(st.head(f"Order inversions ({plural(r.inversion_count, 'object')}; the first pair of each):"))
        for inv in r.inversions:
            _inversion(inv, st, w)
        if more:
            w(st.dim(f"  ... and {more} more (--limit 0 shows all)"))

    total = r.one_side_events["a"] + r.one_side_events["b"]
    if total:
        w("")
        w(st.head(f"Events on one side only (A: {r.one_side_events['a']}, B: {r.one_side_events['b']}):"))
        for sp in r.one_side:
            _one_side(sp, st, w)
        shown = sum(sp.count for sp in r.one_side)
        if shown < total:
            w(st.dim(f"  ... and {total - shown} more events (--limit 0 shows all)"))

    if r.results:
        w("")
        w(st.head(f"The same operation, a different result ({r.result_count}):"))
        for d in r.results:
            w(f"  T{d.a.tid} #{d.a.idx} {d.a.kind} {obj(d.a)} at {where(d.a)}: "
              + st.a(f"A {result_text(d.a.kind, d.a.result)}") + ", " + st.b(f"B {result_text(d.b.kind, d.b.result)}"))
        if r.result_count > len(r.results):
            w(st.dim(f"  ... and {r.result_count - len(r.results)} more (--limit 0 shows all)"))

    w("")
    if not r.outcome:
        w(st.head("The outcomes are identical") + f" ({outcome_text(r.a)}, same stdout and stderr).")
    else:
        w(st.head("The outcomes differ:"))
        for d in r.outcome:
            if d.field in ("stdout", "stderr"):
                for side, v in (("a", d.a), ("b", d.b)):
                    last = v["tail"].rstrip("\n").rsplit("\n", 1)[-1] if v["tail"] else ""
                    ends = f', ends "{last[:100]}"' if last else ""
                    label = f"  {d.field}:" if side == "a" else ""
                    w(f"{label:<11}" + st.side(side, f"{side.upper()} {plural(v['bytes'], 'byte')}{ends}"))
            else:
                w(f"  {d.field.replace('_', ' ')}: " + st.a(f"A {d.a}") + ", " + st.b(f"B {d.b}"))
    if any(r.held.values()):
        w("")
        w(st.head("Locks held when the runs ended:"))
        for side in ("a", "b"):
            for text in r.held.get(side, []):
                w("  " + st.side(side, f"{side.upper()}  {text}"))
    return out


def _divergence(d: Divergence, st: Style, w: Any) -> None:
    n = plural(d.position, "identical event")
    if d.reason == "interleaving":
        assert d.a and d.b
        w(st.head(f"The schedules part after {n}: A runs T{d.a.tid}, B runs T{d.b.tid}."))
    elif d.reason == "operation":
        assert d.a and d.b
        w(st.head(f"The schedules part after {n}: T{d.a.tid} #{d.a.idx} does {d.a.kind} on {obj(d.a)} in A, "
                  f"{d.b.kind} on {obj(d.b)} in B."))
    elif d.reason == "a_ended":
        w(st.head(f"The schedules part after {n}: A ends there, B goes on."))
    else:
        w(st.head(f"The schedules part after {n}: B ends there, A goes on."))
    for e in d.before:
        w(f"   both  {event_line(e)}")
    for side, evs in (("a", d.a_after), ("b", d.b_after)):
        for i, e in enumerate(evs):
            w(st.side(side, f"{'>' if i == 0 else ' '}  {side.upper()}     {event_line(e)}"))
        if not evs:
            w(st.side(side, f">  {side.upper()}     (no more events)"))


def _inversion(inv: Inversion, st: Style, w: Any) -> None:
    o = inv.object
    name = f" ({o.name})" if o.name else ""
    loc = f", first used at {o.location}" if o.location else ""
    x, y = inv.first, inv.second
    w(f"  {o.label}{name}{loc}: " + st.a(f"A: T{x.tid} then T{y.tid}") + ", "
      + st.b(f"B: T{y.tid} then T{x.tid}"))
    for e, other in ((x, inv.b_second), (y, inv.b_first)):
        w(st.dim(f"      T{e.tid} #{e.idx} {e.kind} at {where(e)}  (A seq {e.seq}, B seq {other.seq})"))
    if inv.positions > 1:
        w(st.dim(f"      the order differs at {inv.positions} of {inv.events} positions"))


def _one_side(sp: OneSide, st: Style, w: Any) -> None:
    span = f"#{sp.first_idx}" if sp.first_idx == sp.last_idx else f"#{sp.first_idx}..#{sp.last_idx}"
    kinds = ", ".join(f"{n} {k}" for k, n in sp.kinds.items())
    w(st.side(sp.side, f"  {sp.side.upper()}  T{sp.tid} {span:<14} {plural(sp.count, 'event')}: {kinds}")
      + st.dim(f"; from {where(sp.first)}"))
