"""How a recorded run ended, in one line every tool says (detrec's summary,
`detrec info`, dettui's header and its `x` key, gdb's `det status`): which
thread, which signal or failed assertion, at which source line and
function, with that thread's last event; a deadlock only when threads wait
for each other in a cycle.

Rules: standard library only (gdb's Python imports this module). What a
crash was comes from the trace: meta `crash` (which thread the signal
killed, its instruction, a fault's address, where the program called into
a library or det: preload/signals.c note_crash), the outcome and its
stderr tail (glibc's assertion message); never from a guess about which
thread ran last.
"""

from __future__ import annotations

import os
import re
import signal
from dataclasses import dataclass, field
from typing import Any

from .launch import signal_name
from .names import ObjectNames
from .results import result_text
from .symbols import Location, Symbolizer
from .trace import Event, Trace, kind_name, outcome_words

# glibc's __assert_fail: "prog: file.c:19: func: Assertion `expr' failed."
ASSERTION = re.compile(r"^(?:.*?: )?(?P<file>[^\s:][^:\n]*):(?P<line>\d+): (?P<func>[^\n]+?): "
                       r"Assertion [`'](?P<expr>.*)' failed\.$", re.M)
# si_code of a signal a process sent with kill or sigqueue (<signal.h>)
SI_USER, SI_QUEUE = 0, -1
# Modules whose code is not the program's: where a crash inside them was called from is said too.
_SYSTEM = re.compile(r"(^|/)(libc|libpthread|libstdc\+\+|libgcc_s|libm|ld-linux[^/]*|libdet)[.-][^/]*$")


@dataclass
class Ending:
    kind: str                  # exit, crash, assertion, signal, deadlock, blocked, timeout, stopped, incomplete
    line: str                  # how the run ended, in one line
    thread: int | None = None  # the thread it names (the one that died)
    seq: int | None = None     # the event to show: that thread's last one (a deadlock: where its cycle closed)
    details: list[str] = field(default_factory=list)  # the last event, the blocked threads
    cycle: list[int] = field(default_factory=list)    # a deadlock's threads
    blocked: list[int] = field(default_factory=list)  # every thread blocked at the end
    waits: list[str] = field(default_factory=list)    # what each of them waited in (det.analysis.block_report)

    @property
    def failed(self) -> bool:
        return self.kind != "exit" or self.line != "exit 0"


def _where(loc: Location | None) -> str:
    """`x.c:31 (function)`, `function`, `module+0x..`."""
    if loc is None:
        return "?"
    if loc.function and loc.file and loc.line:
        return f"{loc.short()} ({loc.function})"
    return loc.short()


def _function(loc: Location) -> str:
    """A library function's name as the program calls it (glibc's
    ___pthread_mutex_lock is pthread_mutex_lock)."""
    name = (loc.function or "").lstrip("_") or loc.short()
    return name


def assertion(stderr_tail: bytes | str | None) -> dict[str, str] | None:
    """The last assertion failure glibc printed in the output, or None."""
    if not stderr_tail:
        return None
    text = stderr_tail.decode(errors="replace") if isinstance(stderr_tail, bytes) else stderr_tail
    found = list(ASSERTION.finditer(text))
    return found[-1].groupdict() if found else None


def _last_words(stderr_tail: bytes | str | None) -> str | None:
    """The program's last line on stderr (what abort() followed), or None."""
    if not stderr_tail:
        return None
    text = stderr_tail.decode(errors="replace") if isinstance(stderr_tail, bytes) else stderr_tail
    lines = [x.strip() for x in text.splitlines() if x.strip()]
    return lines[-1][:160] if lines else None


def crash_place(sym: Symbolizer, crash: dict[str, Any]) -> tuple[str, Location | None]:
    """Where a crash was: `in pthread_mutex_lock called at x.c:27 (consumer)`,
    `at x.c:12 (worker)`; and the program's location it names."""
    pc, call_ra, caller = crash.get("pc", 0), crash.get("call_ra", 0), crash.get("caller", 0)
    # (inside a call det wraps, the crash is det's or libc's doing on the program's behalf)
    at = sym.one(pc, return_address=False) if pc else None
    in_library = at is not None and bool(_SYSTEM.search(at.module or ""))
    if at is not None and not in_library and (at.file or at.function):
        return f"at {_where(at)}", at
    ra = call_ra or caller
    prog = sym.one(ra) if ra else None
    lib = ""
    entry = sym.one(crash["entry"], return_address=True) if crash.get("entry") else None
    if entry is not None and entry.function and not entry.function.startswith("det_"):
        lib = f"in {entry.function} "  # (the call det wraps that the program made)
    elif crash.get("signal") == signal.SIGABRT and in_library:
        lib = "in abort() "  # (glibc's abort raises it: the frames above are libc's)
    elif at is not None and in_library and at.function and "libdet" not in os.path.basename(at.module):
        lib = f"in {_function(at)} "
    if prog is not None:
        return f"{lib}called at {_where(prog)}" if lib else f"in a call at {_where(prog)}", prog
    if at is not None:
        return f"in {_function(at)} ({os.path.basename(at.module)})" if at.function else f"at {at.short()}", None
    return "", None


def event_text(e: Event, names: ObjectNames, sym: Symbolizer, sites: dict[int, int]) -> str:
    """`#2 mutex_unlock mutex 2 (gate) at x.c:26 (consumer)`."""
    res = f"={result_text(e.kind, e.result)}" if e.result else ""
    obj = names.label(e.obj, first_use=False)
    addr = sites.get(e.site, 0)
    where = f" at {_where(sym.one(addr))}" if addr else ""
    return f"#{e.idx} {kind_name(e.kind)}{res}{' ' + obj if obj else ''}{where}"


def ending(tr: Trace, names: ObjectNames | None = None, sym: Symbolizer | None = None) -> Ending:
    """How the run of this trace ended."""
    sym = sym if sym is not None else (names.sym if names is not None else Symbolizer(tr.modules()))
    names = names if names is not None else ObjectNames(tr, sym)
    o = tr.outcome()
    if o is None:
        return Ending("incomplete", "incomplete: the recording did not finish")
    blocked = tr.blocked()
    rep = None
    if blocked:
        from .analysis import Waiter, block_report  # (a hung run only: detrec's start-up does without it)

        rep = block_report(tr, [Waiter(*b) for b in blocked], sym, names=names)
    blocked_tids = sorted(b[0] for b in blocked)
    crash = tr.meta.get("crash")
    status = o["status"]
    if status == "signaled" and isinstance(crash, dict):
        return _crashed(tr, o, crash, names, sym, rep, blocked_tids)
    if status == "signaled":
        sig = int(o["signal"] or 0)
        line = f"killed by {signal_name(sig)}"
        a = assertion(o.get("stderr_tail")) if sig == signal.SIGABRT else None
        if a is not None:
            line = (f"assertion `{a['expr']}' failed at {os.path.basename(a['file'])}:{a['line']} ({a['func']}), "
                    f"{signal_name(sig)}")
        return Ending("assertion" if a else "signal", line, details=rep.lines if rep else [],
                      blocked=blocked_tids, waits=rep.lines if rep else [])
    if rep is not None and rep.cycle:
        return Ending("deadlock", rep.summary, seq=_closing(tr, rep.cycle), details=rep.lines, cycle=rep.cycle,
                      blocked=blocked_tids, waits=rep.lines)
    said = o.get("message") or ""
    if rep is not None:
        live = [t["tid"] for t in tr.threads() if t.get("end_state") != "exited"]
        what = rep.summary if set(live) <= set(blocked_tids) else "blocked then: " + "; ".join(
            line.split(" at ")[0] for line in rep.lines)
        return Ending("blocked", f"{said or outcome_words(o)}; {what}", seq=_closing(tr, blocked_tids),
                      details=rep.lines, blocked=blocked_tids, waits=rep.lines)
    if status == "exited":
        return Ending("exit", outcome_words(o) + (f": {said}" if said else ""))
    return Ending(str(status), said or outcome_words(o))


def _closing(tr: Trace, tids: list[int]) -> int | None:
    """Where the last of these threads made its last event."""
    bounds = tr.seq_bounds()
    if bounds is None:
        return None
    lasts = [e.seq for e in (tr.last_before(t, bounds[1] + 1) for t in tids) if e is not None]
    return max(lasts) if lasts else None


def _crashed(tr: Trace, o: dict[str, Any], crash: dict[str, Any], names: ObjectNames, sym: Symbolizer,
             rep: Any, blocked_tids: list[int]) -> Ending:
    tid, sig = int(crash["thread"]), int(crash["signal"])
    bounds = tr.seq_bounds()
    last = tr.last_before(tid, bounds[1] + 1) if bounds else None
    a = assertion(o.get("stderr_tail")) if sig == signal.SIGABRT else None
    if a is not None:
        kind = "assertion"
        line = (f"T{tid} failed an assertion: `{a['expr']}' at {os.path.basename(a['file'])}:{a['line']} "
                f"({a['func']}), {signal_name(sig)}")
    elif int(crash.get("code", 1)) in (SI_USER, SI_QUEUE):
        # sent by kill or sigqueue (maybe from outside): where it reached, not a fault
        kind = "signal"
        place, _ = crash_place(sym, crash)
        line = f"killed by {signal_name(sig)} sent with kill (it reached T{tid}{' ' + place if place else ''})"
    else:
        kind = "crash"
        place, _ = crash_place(sym, crash)
        fault = f" (address {crash.get('addr', 0):#x})" if sig in (signal.SIGSEGV, signal.SIGBUS) else ""
        said = ""
        if sig == signal.SIGABRT:
            words = _last_words(o.get("stderr_tail"))
            said = f" after printing \"{words}\"" if words else ""
        line = f"T{tid} died of {signal_name(sig)}{fault}{' ' + place if place else ''}{said}"
    details = []
    if last is not None:
        details.append(f"T{tid}'s last event: {event_text(last, names, sym, tr.sites())}")
    else:
        details.append(f"T{tid} made no event")
    others = [x for x in rep.lines if not x.startswith(f"T{tid} ")] if rep is not None else []
    if others:
        details += ["other threads then: " + others[0]] + others[1:]
    return Ending(kind, line, thread=tid, seq=last.seq if last is not None else None, details=details,
                  cycle=rep.cycle if rep is not None else [], blocked=blocked_tids,
                  waits=rep.lines if rep is not None else [])
