"""A BisectResult as text: what detdiff --bisect prints.

Rules: renders only (lines, no printing); the styles and event lines are
det.compare.difftext's, shared with detdiff's comparison.
"""

from __future__ import annotations

from typing import Any

from ..difftext import event_line, outcome_text, plural
from .result import FAILS, PASSES, BisectResult


def _verdict_text(verdict: str, detail: str) -> str:
    if verdict == FAILS:
        return f"fails ({detail.rsplit('outcome matches the recording: ', 1)[-1]}, as recorded)"
    return f"{_short(verdict)} ({detail})"


def _short(verdict: str) -> str:
    """`fails`, `does not fail: another path`, `stalled: neither passes nor fails`."""
    if verdict == FAILS:
        return "fails"
    if verdict in PASSES:
        return f"does not fail: {verdict}"
    return f"{verdict}: neither passes nor fails"


def render(r: BisectResult, st: Any) -> list[str]:
    """The result as text; st is det.compare.difftext.Style."""
    out: list[str] = []
    w = out.append
    width = max(len(r.a.path), len(r.b.path))
    for side, s, what in (("a", r.a, "passing"), ("b", r.b, "failing")):
        w(st.side(side, f"{side.upper()}  {s.path:<{width}}") +
          f"  {outcome_text(s):<8} ({what}) {plural(s.events, 'event')}, {plural(s.threads, 'thread')}")
    w(st.dim(f"   {' '.join(r.a.argv) or r.a.binary}"))
    w("")
    if not r.found or r.first is None or r.second is None:
        # One line: why no pair was named, with the closest candidate tried.
        w(st.head(f"No critical pair ({plural(r.replays, 'replay')}): ") + f"{r.message}.")
    else:
        w(st.head(f"The critical pair ({plural(r.replays, 'replay')}):"))
        for head, e in (("B runs first", r.first), ("then", r.second)):
            src = "" if e.side == "b" else "  (A's event: B never got there)"
            w(f"  {head:<12}  {event_line(e)}{src}")
        w(st.head(r.message[0].upper() + r.message[1:] + "."))
        if r.move is not None:
            m = r.move
            moved = (f"{plural(len(m.moved), 'event')} moved over {plural(m.jumped, 'event')}"
                     f"; {plural(m.pairs_reordered, 'pair')} of events in another order than B's")
            w(f"  {m.label} ({moved}):")
            w("      " + st.b(_verdict_text(m.verdict, m.detail)))
        control = next((s for s in r.steps if s.stage == "control" and s.verdict == FAILS), None)
        if control is not None:
            w(f"  {control.label}:")
            w("      " + st.a(_verdict_text(control.verdict, control.detail)))
        if r.pass_order:
            w(f"  {r.pass_order}.")
        for tid, evs in r.stacks.items():
            w("")
            w(st.head(f"{tid}'s recent call sites") + st.dim(" (return addresses recorded with its last events, "
                                                            "not an unwound stack):"))
            for i, e in enumerate(evs):
                mark = ">" if i == len(evs) - 1 else " "
                src = "" if e.side == "b" else "  (A's event: B never got there)"
                w(f"  {mark} {event_line(e)}{src}")
    w("")
    w(st.head(f"Schedules judged ({plural(r.replays, 'replay')} of hybrid traces with the real detreplay; "
              f"{r.events} events each):"))
    for s in r.steps:
        num = f"={s.replay:<3}" if s.repeated else f"{s.replay:>3} "
        verdict = _short(s.verdict)
        line = f"  {num} {s.label:<62} {verdict}"
        w(st.dim(line) if s.repeated else line)
    if any(s.repeated for s in r.steps):
        w(st.dim("  (=N: the same order as replay N, not replayed again)"))
    for note in r.notes:
        w(f"note: {note}")
    return out
