"""detrec dump TRACE: the trace's events, one a line, with det's names for
their objects and the source line of each call (as `rr dump` lists a
recording).

Rules: reads only; streamed: events come from one SQL cursor and are
printed a batch at a time, the sites of a batch symbolized together (one
addr2line run each) and cached, so a trace of millions of events prints
its first line at once and memory does not grow with it (the cache of
line tails is bounded). Fast: no per-row object or call layer; a row is
one f-string over its numbers and a tail kept per (kind, result, object,
site). Output is what the format strings below say, byte for byte. Bad arguments:
one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from det import __version__, tracedir
from det import events as ev
from det.errors import DetError
from det.names import ObjectNames
from det.results import result_text
from det.symbols import Symbolizer
from det.trace import Trace, kind_name

from .salvage import ensure_trace

# Events read before their sites are symbolized: the first line waits for
# one addr2line run over at most this many events' sites; later batches
# are larger (fewer addr2line runs and writes).
FIRST_BATCH, BATCH = 256, 8192
# Line tails kept (one per kind, result, object and site): a bound, so a
# trace of ever new results does not grow the cache with its length.
TAILS_KEPT = 1 << 16


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
    """Event lines of one trace. Names, sites and result words are worked
    out once per object, site and (kind, result) and kept; a row is then
    one f-string over its numbers and a cached tail."""

    def __init__(self, tr: Trace) -> None:
        self.tr = tr
        self.sym = Symbolizer(tr.modules())
        self.names = ObjectNames(tr, self.sym)
        self.site_addr = tr.sites()
        self.where: dict[int, tuple[str, str | None]] = {}  # site -> (file:line, function)
        self.labels: dict[int, str] = {}
        self.tails: dict[tuple[int, int, int, int], str] = {}  # bounded by TAILS_KEPT
        self.json_parts: dict[tuple[int, int, int, int], tuple[str, str]] = {}  # likewise

    def resolve(self, rows: list[tuple[int, ...]]) -> None:
        """Symbolize the sites of rows not seen before: one addr2line run."""
        new = {r[7] for r in rows} - self.where.keys()
        if not new:
            return
        addrs = [self.site_addr[s] for s in new if self.site_addr.get(s)]
        found = self.sym.lookup(addrs) if addrs else {}
        for s in new:
            loc = found.get(self.site_addr.get(s, 0))
            self.where[s] = (loc.short(), loc.function) if loc is not None else ("", None)

    def label(self, obj: int) -> str:
        if obj not in self.labels:
            self.labels[obj] = self.names.label(obj, first_use=False)
        return self.labels[obj]

    def tail(self, kind: int, result: int, obj: int, site: int) -> str:
        """A text line after its seq, thread and idx columns (kept in self.tails)."""
        res = f"={result_text(kind, result)}" if result else ""
        site_text, func = self.where[site]
        where = f"{site_text} ({func})" if func and site_text and func != site_text else site_text
        tail = f"{kind_name(kind) + res:<22} {self.label(obj):<28} {where}".rstrip()
        self.tails[(kind, result, obj, site)] = tail
        return tail

    def json_middle(self, kind: int, result: int, obj: int, site: int) -> tuple[str, str]:
        """A JSON line's text from "kind" to "aux": and from "site" to "ts":,
        as json.dumps writes the record (the former dict of the same keys)."""
        site_text, func = self.where[site]
        mid = (f'"kind": {json.dumps(kind_name(kind))}, "obj": {obj}, '
               f'"object": {json.dumps(self.label(obj) or None)}, "result": {result}, '
               f'"result_text": {json.dumps(result_text(kind, result))}, "aux": ')
        return mid, f', "site": {json.dumps(site_text or None)}, "function": {json.dumps(func)}, "ts": '

    def text(self, rows: list[tuple[int, ...]]) -> str:
        if len(self.tails) > TAILS_KEPT:
            self.tails.clear()
        kept, tail = self.tails.get, self.tail  # a tail is never empty (it starts with the kind)
        return "".join([f"{seq:<8} T{tid:<3} #{idx:<6} {kept((k, r, o, s)) or tail(k, r, o, s)}\n"
                        for seq, tid, idx, k, o, r, _aux, s, _ts in rows])

    def json_lines(self, rows: list[tuple[int, ...]]) -> str:
        parts = self.json_parts
        if len(parts) > TAILS_KEPT:
            parts.clear()
        out = []
        for seq, tid, idx, kind, obj, result, aux, site, ts in rows:
            key = (kind, result, obj, site)
            part = parts.get(key)
            if part is None:
                part = parts[key] = self.json_middle(kind, result, obj, site)
            out.append(f'{{"seq": {seq}, "tid": {tid}, "idx": {idx}, {part[0]}{aux}{part[1]}{ts}}}\n')
        return "".join(out)


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
            lines = d.json_lines if ns.json else d.text
            out = sys.stdout
            for rows in tr.event_batches(tid=tid, first=ns.first or 0, last=ns.last, size=BATCH,
                                         first_size=FIRST_BATCH):
                if kinds is not None:  # not in SQL: idx counts all the thread's events
                    rows = [r for r in rows if r[3] in kinds]
                d.resolve(rows)
                out.write(lines(rows))
                out.flush()
    except DetError as e:
        print(f"detrec dump: {e}", file=sys.stderr)
        return e.status
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0
