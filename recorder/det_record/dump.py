"""detrec dump TRACE: the trace's events, one a line, with det's names for
their objects and the source line of each call (as `rr dump` lists a
recording).

Rules: reads only; streamed: events come from one SQL cursor and are
printed a batch at a time, the sites of a batch symbolized together (one
addr2line run each) and cached, so a trace of millions of events prints
its first line at once and memory does not grow with it. Bad arguments:
one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator

from det import __version__, tracedir
from det import events as ev
from det.errors import DetError
from det.names import ObjectNames
from det.results import result_text
from det.symbols import Location, Symbolizer
from det.trace import Event, Trace, kind_name

from .salvage import ensure_trace

# Events read before their sites are symbolized: the first line waits for
# one addr2line run over at most this many events' sites.
BATCH = 256


class UsageError(DetError):
    def __init__(self, msg: str) -> None:
        super().__init__(msg, status=2)


def parse_thread(text: str) -> int:
    t = text[1:] if text[:1] in ("T", "t") else text
    if not t.isdigit():
        raise UsageError(f"--thread {text}: not a thread (T2, or 2)")
    return int(t)


def parse_kinds(text: str) -> set[int]:
    """`mutex_lock,cond_wait`; an object kind (`mutex`) stands for all its events."""
    out: set[int] = set()
    for word in (w.strip().lower() for w in text.split(",")):
        by_kind = [e.number for e in ev.EVENTS if e.name.lower() == word]
        by_obj = [e.number for e in ev.EVENTS if e.objkind.lower() == word and word != "none"]
        if not (by_kind or by_obj):
            raise UsageError(f"--kind {word}: no such event kind (an event kind such as mutex_lock, or an "
                             "object kind such as mutex; `detrec info` lists a trace's kinds)")
        out.update(by_kind or by_obj)
    return out


class Dumper:
    """Event lines of one trace, with names and sites resolved as needed."""

    def __init__(self, tr: Trace) -> None:
        self.tr = tr
        self.sym = Symbolizer(tr.modules())
        self.names = ObjectNames(tr, self.sym)
        self.site_addr = tr.sites()
        self.locs: dict[int, Location | None] = {}

    def resolve(self, batch: list[Event]) -> None:
        new = {e.site for e in batch if e.site not in self.locs}
        addrs = [self.site_addr[s] for s in new if self.site_addr.get(s)]
        found = self.sym.lookup(addrs) if addrs else {}
        for s in new:
            self.locs[s] = found.get(self.site_addr.get(s, 0))

    def where(self, e: Event) -> tuple[str, str | None]:
        loc = self.locs.get(e.site)
        return (loc.short(), loc.function) if loc is not None else ("", None)

    def line(self, e: Event) -> str:
        res = f"={result_text(e.kind, e.result)}" if e.result else ""
        label = self.names.label(e.obj, first_use=False)
        site, func = self.where(e)
        where = f"{site} ({func})" if func and site and func != site else site
        return f"{e.seq:<8} T{e.tid:<3} #{e.idx:<6} {kind_name(e.kind) + res:<22} {label:<28} {where}".rstrip()

    def record(self, e: Event) -> dict[str, object]:
        site, func = self.where(e)
        return {"seq": e.seq, "tid": e.tid, "idx": e.idx, "kind": kind_name(e.kind), "obj": e.obj,
                "object": self.names.label(e.obj, first_use=False) or None, "result": e.result,
                "result_text": result_text(e.kind, e.result), "aux": e.aux, "site": site or None,
                "function": func, "ts": e.ts}


def batches(events: Iterator[Event], kinds: set[int] | None) -> Iterator[list[Event]]:
    batch: list[Event] = []
    for e in events:
        if kinds is None or e.kind in kinds:
            batch.append(e)
            if len(batch) >= BATCH:
                yield batch
                batch = []
    if batch:
        yield batch


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="detrec dump", description="List a det trace's events, with names and "
                                "source lines (streamed).")
    tracedir.trace_argument(p, "trace", nargs="?", metavar="TRACE",
                            help="a trace path, or a name listed by `detrec ls` (default: the latest)")
    p.add_argument("--thread", metavar="T", help="only this thread's events (T2, or 2)")
    p.add_argument("--from", dest="first", type=int, metavar="N", help="from event N (its seq)")
    p.add_argument("--to", dest="last", type=int, metavar="M", help="up to event M, included")
    p.add_argument("--kind", metavar="K", help="only these kinds: mutex_lock,cond_wait, or an object kind (mutex)")
    p.add_argument("--json", action="store_true", help="one JSON object a line")
    p.add_argument("--version", action="version", version=f"%(prog)s (det) {__version__}")
    return p


def main(argv: list[str]) -> int:
    ns = build_parser().parse_args(argv)
    try:
        tid = None if ns.thread is None else parse_thread(ns.thread)
        kinds = None if ns.kind is None else parse_kinds(ns.kind)
        if ns.first is not None and ns.first < 0:
            raise UsageError(f"--from {ns.first}: events are numbered from 0")
        if ns.first is not None and ns.last is not None and ns.last < ns.first:
            raise UsageError(f"--to {ns.last} is before --from {ns.first}")
        with Trace(ensure_trace(tracedir.resolve(ns.trace)) if ns.trace else tracedir.latest()) as tr:
            if tid is not None and not tr.q1("SELECT 1 FROM threads WHERE tid = ?", (tid,)):
                raise UsageError(f"--thread {ns.thread}: the trace has no thread T{tid} "
                                 f"(it has T0..T{tr.q1('SELECT max(tid) FROM threads')})")
            d = Dumper(tr)
            out = sys.stdout
            for batch in batches(tr.events(tid=tid, first=ns.first or 0, last=ns.last), kinds):
                d.resolve(batch)
                if ns.json:
                    out.write("".join(json.dumps(d.record(e)) + "\n" for e in batch))
                else:
                    out.write("".join(d.line(e) + "\n" for e in batch))
                out.flush()
    except DetError as e:
        print(f"detrec dump: {e}", file=sys.stderr)
        return e.status
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
