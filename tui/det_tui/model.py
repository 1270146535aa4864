"""What dettui knows about one trace, and how it reads it.

Rules of this file:
  - Every read goes through det.trace.Trace (its windowed methods); no SQL
    here. No Python object per event for the whole trace: the schedule is
    Trace.lanes() (one code point per event, tid * LANE_KINDS + kind) and
    rows are read a window at a time, when they are drawn.
  - Ranks (an event's place in the recorded order, from 0) are what views
    count in; seqs are what the trace stores (they can have gaps).
  - Names of kinds, objects, variables and source lines come from det's own
    modules (det.events, det.symbols, det.analysis, det.compare.difftext), never a
    copy of their rules.
"""

from __future__ import annotations

import errno
import os
import shlex
import stat
from array import array
from bisect import bisect_left
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import IO, Any

from det import events as ev
from det.compare.difftext import result_text
from det.ending import ending
from det.names import ObjectNames
from det.outpath import file_kind
from det.record.salvage import ensure_trace
from det.symbols import Location, Symbolizer
from det.trace import LANE_KINDS, Event, Trace, kind_name, outcome_words
from det.verdict import read_verdict

# ---------------------------------------------------------------- kinds as the timeline shows them

# Classes of events, by what they do; the timeline colours cells by the
# class of their most telling event (the highest rank here).
CLASSES = ("other", "output", "lock", "input", "sync", "thread", "sched", "signal")
RANK = {c: i for i, c in enumerate(CLASSES)}
THREAD_OBJECTS = {"THREAD"}
LOCK_OBJECTS = {"MUTEX", "RWLOCK", "SPIN", "FILE", "SEM", "OMP_LOCK"}
SYNC_OBJECTS = {"COND", "BARRIER", "ONCE"}


def kind_class(k: ev.EventKind) -> str:
    if k.name in ("SIGNAL", "SIGSUSPEND"):
        return "signal"
    if k.name in ("BLOCK", "PREEMPT"):
        return "sched"
    if k.objkind in THREAD_OBJECTS or k.name in ("PROC_EXEC", "PROC_WAIT"):
        return "thread"
    if k.objkind in SYNC_OBJECTS:
        return "sync"
    if k.role == "OUTPUT" or k.name == "WRITE":
        return "output"
    if k.objkind in LOCK_OBJECTS:
        return "lock"
    if k.role == "INPUT" or k.name in ("FD_OPEN", "ACCEPT"):
        return "input"
    return "other"


# One letter per event when the timeline shows single events.
ROLE_GLYPH = {"ACQUIRE": "L", "RELEASE": "U", "WAIT": "W", "WAKE": "w", "SIGNAL": "s", "CREATE": "C", "START": ">",
              "EXIT": "X", "JOIN": "J", "DESTROY": "d", "OUTPUT": "O", "INPUT": "I", "OTHER": "o"}
NAME_GLYPH = {"SIGNAL": "!", "BLOCK": "B", "PREEMPT": "P", "SEM_POST": "+", "BARRIER_ARRIVE": "A",
              "BARRIER_DEPART": "D"}

CLASS_OF = {k.number: kind_class(k) for k in ev.EVENTS}
# Indexed by kind number: the class's rank (a list, for the timeline's inner loop).
CLASS_RANK = [RANK[CLASS_OF.get(k, "other")] for k in range(LANE_KINDS)]
GLYPH_OF = {k.number: NAME_GLYPH.get(k.name, ROLE_GLYPH.get(k.role, "?")) for k in ev.EVENTS}
# After these a thread waits until its next event: a condition or barrier
# wait, and strict mode's giving up its turn before a call that may block.
WAIT_BEGINS = {k.number for k in ev.EVENTS if k.role == "WAIT" or k.name == "BLOCK"}
DESCRIPTION = {k.number: k.description for k in ev.EVENTS}
THREAD_START = ev.THREAD_START


def class_of(kind: int) -> str:
    return CLASS_OF.get(kind, "other")


def glyph_of(kind: int) -> str:
    return GLYPH_OF.get(kind, "?")


# ---------------------------------------------------------------- the model


@dataclass
class Lane:
    """One thread's row of the timeline."""

    tid: int
    process: int
    label: str                 # "T1", with "P1 " before it in a program with child processes
    first: int = -1            # rank of its first and last event (-1: none)
    last: int = -1
    end_state: str | None = None
    blocked: str | None = None  # what it was blocked in when the program stopped


@dataclass
class Problem:
    """A deadlock, or threads blocked at the end: what the header and timeline point at."""

    summary: str
    lines: list[str]
    cycle: list[int]           # threads of the wait-for cycle ([] if none)
    tids: list[int]            # every blocked thread


@dataclass
class Filter:
    """The event list's filter: each field a set of allowed values, None for any."""

    tids: set[int] | None = None
    kinds: set[int] | None = None
    objs: set[int] | None = None
    sites: set[int] | None = None
    text: str = ""             # how the user said it, for the title

    @property
    def active(self) -> bool:
        return any(x is not None for x in (self.tids, self.kinds, self.objs, self.sites))


@dataclass
class Header:
    program: str
    outcome: str
    mode: str
    threads: int
    processes: int
    events: int
    duration: str
    complete: bool
    message: str
    notes: list[str] = field(default_factory=list)


class TraceModel:
    """One open trace, as dettui shows it."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        # a trace whose detrec was killed: its capture log becomes the trace first
        self.path = ensure_trace(path, quiet=True)
        self.tr = Trace(self.path)
        tr = self.tr
        self.meta = tr.meta
        self.outcome = tr.outcome()
        self.complete = tr.complete
        self.count = tr.event_count()
        bounds = tr.seq_bounds()
        self.seq0 = bounds[0] if bounds else 0
        self.last_seq = bounds[1] if bounds else -1
        if bounds is None:
            self.count = 0
        self.gapless = self.last_seq - self.seq0 + 1 == self.count
        self._seqs: array | None = None if self.gapless else tr.seqs()
        if self._seqs is not None:
            self.count = len(self._seqs)
        self.threads = {t["tid"]: t for t in tr.threads()}
        self.processes = tr.processes()
        self.objects = tr.objects()
        self.thread_of_obj = {t["obj"]: tid for tid, t in self.threads.items()}
        self.sites = tr.sites()
        self.modules = tr.modules()
        self.sym = Symbolizer(self.modules)
        self.names = ObjectNames(tr, self.sym)
        self._locs: dict[int, Location] | None = None
        self._entry_locs: dict[int, Location] = {}
        self.lanes_s: str | None = None
        self.lanes: list[Lane] = []
        self.ending = ending(tr, self.names, self.sym)
        self.problem = self._problem()
        self._lane_rows()

    def close(self) -> None:
        self.tr.close()

    # ----- the whole run

    def header(self) -> Header:
        m, o = self.meta, self.outcome
        argv = m.get("argv") or []
        dur = f"{o['duration_ns'] / 1e9:.3f} s" if o else "?"
        notes = []
        if not self.complete:
            notes.append(f"{self.path.name} is incomplete: the recording did not finish (detrec was killed?); "
                         "what it holds up to its last saved events is shown")
        verdict = read_verdict(m)
        if verdict is not None and not verdict.replays:  # (a replay right after recording: det.verdict)
            notes.append(f"replayed right after recording, this trace {verdict.line()}")
        return Header(
            program=shlex.join(argv) if argv else str(m.get("binary") or "?"), outcome=outcome_words(o),
            mode=str(m.get("mode") or "?"), threads=len(self.threads), processes=max(1, len(self.processes)),
            events=self.count, duration=dur, complete=self.complete, message=(o or {}).get("message") or "",
            notes=notes)

    def _problem(self) -> Problem | None:
        """Threads blocked at the end (their lanes say in what); the summary
        is how the run ended (det.ending: a crash beside them, or a deadlock
        only when there is a cycle)."""
        end = self.ending
        if not end.blocked:
            return None
        return Problem(end.line, end.waits, end.cycle, end.blocked)

    def _lane_rows(self) -> None:
        multi = len(self.processes) > 1
        blocked = {}
        if self.problem is not None:
            for line in self.problem.lines:
                tid = int(line.split(" ", 1)[0][1:])
                blocked[tid] = line
        for tid, t in sorted(self.threads.items(), key=lambda kv: (kv[1].get("process", 0), kv[0])):
            p = t.get("process", 0) or 0
            self.lanes.append(Lane(tid, p, f"P{p} T{tid}" if multi else f"T{tid}", end_state=t.get("end_state"),
                                   blocked=blocked.get(tid)))

    def load_lanes(self) -> None:
        """Read the whole schedule (Trace.lanes(): about 0.3 s a million
        events; a large trace in two halves, one on each of two connections,
        since SQLite reads without Python's lock) and find each thread's
        first and last event."""
        if self.count >= PARALLEL_LANES:
            mid = self.seq0 + (self.last_seq - self.seq0 + 1) // 2
            with ThreadPoolExecutor(1) as pool:
                later = pool.submit(_lanes_from, self.path, mid)
                s = self.tr.lanes(None, mid) + later.result()
        else:
            s = self.tr.lanes()
        present = set(s)
        by_tid: dict[int, list[str]] = {}
        for ch in present:
            by_tid.setdefault(ord(ch) // LANE_KINDS, []).append(ch)
        for lane in self.lanes:
            chars = by_tid.get(lane.tid, [])
            if chars:
                lane.first = min(s.find(c) for c in chars)
                lane.last = max(s.rfind(c) for c in chars)
        self.chars_of = by_tid
        self.lanes_s = s

    # ----- ranks and seqs

    def seq_of(self, rank: int) -> int:
        return self.seq0 + rank if self._seqs is None else self._seqs[rank]

    def rank_of(self, seq: int) -> int:
        """The rank of seq, or of the first event after it."""
        if self._seqs is None:
            return max(0, min(self.count, seq - self.seq0))
        return bisect_left(self._seqs, seq)

    def events(self, lo_rank: int, hi_rank: int) -> list[Event]:
        """Events of ranks lo_rank <= r < hi_rank."""
        hi_rank = min(hi_rank, self.count)
        if lo_rank >= hi_rank:
            return []
        if self._seqs is None:
            return self.tr.events_between(self.seq0 + lo_rank, self.seq0 + hi_rank)
        return self.tr.events_at(self._seqs[lo_rank:hi_rank])

    def event(self, seq: int) -> Event | None:
        return self.tr.event(seq)

    # ----- words for things

    def location(self, e: Event) -> Location | None:
        """Where the event's call is; a thread_start's site is its start routine."""
        addr = self.sites.get(e.site)
        if not addr:
            return None
        if e.kind == THREAD_START:
            if addr not in self._entry_locs:
                self._entry_locs[addr] = self.sym.one(addr, return_address=False)
            return self._entry_locs[addr]
        return self.locations().get(e.site)

    def locations(self) -> dict[int, Location]:
        """site -> Location, every site at once (one addr2line per module)."""
        if self._locs is None:
            addrs = list(self.sites.values())
            found = self.sym.lookup(addrs) if addrs else {}
            self._locs = {s: found[a] for s, a in self.sites.items()}
        return self._locs

    def where(self, e: Event) -> str:
        loc = self.location(e)
        if loc is None:
            return ""
        if loc.function and loc.file and loc.line:
            return f"{loc.short()} ({loc.function}{f', through {loc.via}' if loc.via else ''})"
        return loc.short()

    def object_label(self, obj: int, first_use: bool = False) -> str:
        """det.names' label: `mutex 4 (account)`, `T1`, "" for none."""
        return self.names.label(obj, first_use)

    def result(self, e: Event) -> str:
        return result_text(kind_name(e.kind), e.result)

    def aux_text(self, e: Event) -> str:
        """What aux means for this kind."""
        k = ev.BY_NUMBER.get(e.kind)
        if k is None:
            return str(e.aux)
        if k.role == "CREATE":
            return f"thread T{e.aux}"
        if k.role in ("WAIT", "WAKE") and k.objkind == "COND":
            return f"holds {self.object_label(e.aux)}" if e.aux else "0"
        if k.name == "SIGNAL":
            return f"signal {e.aux}"
        if k.name == "BLOCK":
            return f"before {kind_name(e.aux)}"
        if k.name == "PREEMPT":
            return f"preempted T{e.aux}"
        return str(e.aux)

    def data(self, seq: int) -> bytes | None:
        return self.tr.data(seq)

    # ----- search and filter

    def matching(self, text: str) -> Filter:
        """What a search or filter word names: thread numbers (T3), kinds
        (their names contain it), objects (label or variable), sites (file,
        line or function). Each part None when nothing of that sort matches."""
        q = text.strip().lower()
        f = Filter(text=text)
        if not q:
            return f
        if q[0] == "t" and q[1:].isdigit() and int(q[1:]) in self.threads:
            f.tids = {int(q[1:])}
        kinds = {k.number for k in ev.EVENTS if q in k.name.lower()}
        f.kinds = kinds or None
        objs = {o for o in self.objects if q in self.object_label(o).lower()}
        f.objs = objs or None
        sites = {s for s, loc in self.locations().items()
                 if q in loc.short().lower() or (loc.function and q in loc.function.lower())
                 or (loc.file and q in loc.file.lower())}
        f.sites = sites or None
        return f

    def search(self, text: str, from_seq: int, forward: bool = True) -> int | None:
        """The next event (after from_seq) that the text names in any way."""
        m = self.matching(text)
        hits = []
        for part in ("tids", "kinds", "objs", "sites"):
            vals = getattr(m, part)
            if vals:
                hit = self.tr.next_seq(from_seq, forward, **{part: vals})
                if hit is not None:
                    hits.append(hit)
        if not hits:
            return None
        return min(hits) if forward else max(hits)

    def filtered_seqs(self, f: Filter) -> array:
        return self.tr.seqs(tids=f.tids, kinds=f.kinds, objs=f.objs, sites=f.sites)

    def parse_filter(self, thread: str, kind: str, obj: str, where: str) -> Filter:
        """The filter dialog's four fields (empty: any). thread: numbers,
        `T1 T3` or `1,3`; kind, object, where: words their names contain."""
        f = Filter()
        words = []
        if thread.strip():
            tids = set()
            for w in thread.replace(",", " ").split():
                w = w.lower().removeprefix("t")
                if not w.isdigit():
                    raise ValueError(f"thread: {w!r} is not a thread number")
                tids.add(int(w))
            f.tids = tids
            words.append("T" + ",".join(map(str, sorted(tids))))
        if kind.strip():
            qs = [w.lower() for w in kind.replace(",", " ").split()]
            f.kinds = {k.number for k in ev.EVENTS if any(q in k.name.lower() for q in qs)}
            words.append(kind.strip())
        if obj.strip():
            q = obj.strip().lower()
            f.objs = {o for o in self.objects if q in self.object_label(o).lower()}
            words.append(obj.strip())
        if where.strip():
            q = where.strip().lower()
            f.sites = {s for s, loc in self.locations().items()
                       if q in loc.short().lower() or (loc.file and q in loc.file.lower())
                       or (loc.function and q in loc.function.lower())}
            words.append(where.strip())
        f.text = " ".join(words)
        return f


# Traces with at least this many events read their schedule in two halves.
PARALLEL_LANES = 200_000


def _lanes_from(path: Path, lo: int) -> str:
    with Trace(path) as tr:
        return tr.lanes(lo, None)


# ---------------------------------------------------------------- source and code


def _regular(st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, f"{file_kind(st)}, not a regular file")


def open_regular(path: str | os.PathLike[str], mode: str = "rb", **kw: Any) -> IO[Any]:
    """open() for a file dettui reads by itself (a source or ELF file a trace
    names, a file it cannot show): anything but a regular file is an OSError
    saying what it is, before it is opened (a FIFO would block the open, and
    the UI with it, for ever); the open does not block, and what it opened
    is checked again (a FIFO put there in between)."""
    _regular(os.stat(path))
    f = open(path, mode, opener=lambda p, flags: os.open(p, flags | os.O_NONBLOCK), **kw)
    try:
        _regular(os.fstat(f.fileno()))
    except OSError:
        f.close()
        raise
    return f


@dataclass
class SourceView:
    path: str | None                 # the file read (absolute)
    line: int | None
    lines: list[tuple[int, str]]     # (number, text) around the line
    message: str                     # why there is none, or ""
    name: str = ""                   # the file as the debug info names it


def source_around(loc: Location | None, cwd: str | None, context: int = 5) -> SourceView:
    """The source lines around a location, when the file is here."""
    if loc is None or not loc.file or not loc.line:
        return SourceView(None, None, [], "no source line for this event (no call site, or no debug info)")
    path = loc.file
    if not os.path.isabs(path) and cwd:
        path = os.path.join(cwd, path)
    try:
        with open_regular(path, "r", encoding="utf-8", errors="replace") as f:
            text = f.read().splitlines()
    except OSError as e:
        what = "is not here" if isinstance(e, FileNotFoundError) else "cannot be read"
        return SourceView(loc.file, loc.line, [], f"source file {loc.file} {what} ({e.strerror})")
    lo, hi = max(1, loc.line - context), min(len(text), loc.line + context)
    return SourceView(path, loc.line, [(n, text[n - 1]) for n in range(lo, hi + 1)], "", loc.file)


def elf_reader(modules: list[tuple[str, int]]) -> Callable[[int, int], bytes]:
    """A read_memory for det.disasm that reads code from the recording's
    ELF files (their PT_LOAD segments), not from a running program."""
    mods = sorted((base, path) for path, base in modules if path and os.path.exists(path))

    def read(addr: int, length: int) -> bytes:
        i = bisect_left([b for b, _ in mods], addr + 1) - 1
        if i < 0:
            raise ValueError(f"no module holds {addr:#x}")
        base, path = mods[i]
        off = addr - base
        for vaddr, size, file_off in _load_segments(path):
            if vaddr <= off < vaddr + size:
                with open_regular(path) as f:
                    f.seek(file_off + off - vaddr)
                    return f.read(min(length, vaddr + size - off))
        raise ValueError(f"{os.path.basename(path)} has no code at {addr:#x}")

    return read


@lru_cache(maxsize=32)
def _load_segments(path: str) -> list[tuple[int, int, int]]:
    """(vaddr, size in the file, file offset) of an ELF file's PT_LOAD segments."""
    from elftools.elf.elffile import ELFFile

    with open_regular(path) as f:
        return [(seg["p_vaddr"], seg["p_filesz"], seg["p_offset"]) for seg in ELFFile(f).iter_segments()
                if seg["p_type"] == "PT_LOAD"]


def disassembly(addr: int, modules: list[tuple[str, int]], call_site: bool, who: str) -> list[str]:
    """capstone's lines around a call site, through det.disasm (one
    implementation for gdb's det disas and dettui), reading the ELF files."""
    from det import disasm

    err = disasm.missing([])
    if err is not None:
        return [err]
    # a module that is not a regular file is as good as gone (det.disasm opens the ones it is given)
    modules = [(path, base) for path, base in modules if path and os.path.isfile(path)]
    try:
        return disasm.disassemble(addr, modules, elf_reader(modules), call_site, who)
    except (OSError, ValueError) as e:
        return [f"no disassembly: {e}"]
