"""What differs between two traces of the same program: the engine behind
detdiff (and the TUI).

Rules:
 - Standard library only (gdb's Python imports this module). Nothing here
   prints: compare() returns a DiffResult of plain dataclasses, and every
   failure is a DetError with a one-line message.
 - Events are matched across traces by (thread number, per-thread index);
   det's thread numbers are stable. Two matched events are "the same
   operation" when their kind, object and call site agree (results are
   compared separately). Objects are matched by what they are, never by id
   (ids follow first use, which follows the schedule): threads through the
   threads table, others by kind + address (ASLR is off in every det run) +
   which incarnation at that address, then, for the rest, by the event that
   first used them. Sites are matched by module + offset.
 - "Position" is an event's rank in its trace's order (seq may have gaps).
   The schedules part at the first position where the two traces run a
   different thread or a different operation.
 - An object's order is compared on matched events only: events before their
   thread's first difference, present in both traces. The first position
   where two objects' orders name different threads is an inversion: each
   trace runs the other's event later, so the pair is ordered both ways.
 - Speed: one SQL scan per trace turns its events into a string (one code
   point per field per event); everything else is string slicing and a few
   C-speed loops, so two 1M-event traces compare in about a second. Only
   what is reported is read back as rows and symbolized.
"""

from __future__ import annotations

import difflib
import operator
import os
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from operator import itemgetter
from typing import Any

from det import events as ev
from det import schema
from det.analysis import held_at_end
from det.errors import DetError
from det.names import THREAD_KIND, ObjectNames
from det.symbols import Symbolizer
from det.trace import Trace, TraceError, kind_name, objkind_name
from det.tracefile import read_only

# Characters per event in the fetched string: tid, kind, obj, site, result.
WIDTH = 5
MAX_ENCODABLE = 0x10FFFF
# Tails of a thread's events are aligned with difflib, which is quadratic:
# up to this product of their lengths (about 0.2 s), and this much in all.
ALIGN_LIMIT = 4_000_000
ALIGN_BUDGET = 16_000_000
# Tails longer than this together are not even looked at event by event.
ALIGN_SCAN = 200_000
THREAD_START = next(e.number for e in ev.EVENTS if e.name == "THREAD_START")
THREAD_EXIT = next(e.number for e in ev.EVENTS if e.name == "THREAD_EXIT")
BARRIER_DEPART = next(e.number for e in ev.EVENTS if e.name == "BARRIER_DEPART")
# Inputs whose value differs in every run (clocks, ids): their results are
# not compared.
VARYING = {e.number for e in ev.EVENTS if e.name in (
    "CLOCK_GETTIME", "GETTIMEOFDAY", "TIME", "CLOCK", "GETPID", "GETPPID", "GETTID", "RDTSC")}
VARYING_CHARS = {chr(k) for k in VARYING}


class DiffError(DetError):
    """The two traces cannot be compared."""


# ---------------------------------------------------------------- results


@dataclass
class EventRef:
    """One event of one trace, as reported."""

    side: str                 # "a" or "b"
    position: int             # rank in its trace's order, from 0
    seq: int
    tid: int
    idx: int                  # index among the thread's events
    kind: str
    obj: int                  # the object's id in its own trace (0: none)
    object: str               # label in the diff's shared numbering, e.g. "mutex 4", "thread T1"
    name: str | None          # the object's variable, when the binary says (e.g. "account")
    result: int
    address: int              # the call site (return address), 0 if none
    location: str | None      # "file.c:31", else function, else module+offset
    function: str | None


@dataclass
class ObjectRef:
    """An object as both traces know it."""

    label: str                # "mutex 4" (A's id), "mutex B9" (only in B), "thread T1"
    kind: str
    a_obj: int | None         # id in A, None if only in B
    b_obj: int | None
    address: int
    name: str | None          # the variable at that address, when the binary says
    location: str | None      # where it was first used


@dataclass
class Divergence:
    """The first position where the schedules part."""

    position: int             # events before it are identical in both traces
    reason: str               # interleaving | operation | a_ended | b_ended
    a: EventRef | None        # the event each trace runs there (None: the trace ended)
    b: EventRef | None
    before: list[EventRef]    # the identical events just before (A's copies)
    a_after: list[EventRef]   # from the divergence on, in A
    b_after: list[EventRef]


@dataclass
class ThreadDiff:
    """A thread that does something different at the same index."""

    tid: int
    index: int                # its first differing index
    a: EventRef | None        # None: the thread has no event there in A
    b: EventRef | None
    a_events: int
    b_events: int
    a_end: str | None         # threads.end_state
    b_end: str | None


@dataclass
class Inversion:
    """First pair of events on one object ordered one way in A, the other in B."""

    object: ObjectRef
    first: EventRef           # A runs it first ...
    second: EventRef          # ... then this one (B the other way round)
    b_first: EventRef         # the same two events as B has them
    b_second: EventRef
    positions: int            # positions of the object's order that name different threads
    events: int               # matched events on the object


@dataclass
class OneSide:
    """Consecutive events of one thread that have no counterpart in the other trace."""

    side: str                 # "a" or "b"
    tid: int
    first_idx: int
    last_idx: int
    count: int
    kinds: dict[str, int]     # kind -> events
    first: EventRef
    aligned: bool             # False: the tails were too long to align, everything after the
                              # thread's first difference is listed


@dataclass
class ResultDiff:
    """The same operation, a different result (EBUSY, ETIMEDOUT, who ran a once...)."""

    a: EventRef
    b: EventRef


@dataclass
class OutcomeDiff:
    field: str                # status, exit_code, signal, stdout, stderr
    a: Any
    b: Any


@dataclass
class TraceSummary:
    path: str
    argv: list[str]
    binary: str | None
    binary_sha256: str | None
    complete: bool
    events: int
    threads: int
    objects: int
    outcome: dict[str, Any] | None   # as in the trace, tails decoded


@dataclass
class DiffResult:
    a: TraceSummary
    b: TraceSummary
    schedule_identical: bool
    outcome_identical: bool
    divergence: Divergence | None
    threads: list[ThreadDiff]
    thread_count: int                 # threads that do something else (the list may be cut)
    inversions: list[Inversion]
    inversion_count: int              # objects with an inversion (the list may be cut)
    one_side: list[OneSide]
    one_side_events: dict[str, int]   # {"a": n, "b": n}: events without a counterpart
    results: list[ResultDiff]
    result_count: int
    outcome: list[OutcomeDiff]
    notes: list[str] = field(default_factory=list)
    held: dict[str, list[str]] = field(default_factory=dict)  # "a"/"b": the locks held when the run ended

    @property
    def identical(self) -> bool:
        return self.schedule_identical and self.outcome_identical

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["identical"] = self.identical
        return d


# ---------------------------------------------------------------- encoding


def _enc(v: int) -> str:
    """A field's value as its code point (the SQL side is char())."""
    return chr(v)


def _dec(ch: str) -> int:
    return ord(ch)


# Each field is its own code point: char() takes any value up to 0x10FFFF
# (lone surrogates included: the string is decoded with surrogatepass; a 0
# is kept, SQLite strings have a length). char() turns values out of range
# into U+FFFD. Results (errno values, -errno, -1, 1, byte counts) go to
# result + 64, below -64 to the top of the code space (0x110040 + result):
# exact from -557000 to 557000; beyond, two results may share a code point.
_LOAD_SQL = ("SELECT group_concat(char(e.tid, c.kind, c.obj, c.site, e.result + 64 + (e.result < -64) * 1114112), '') "
             "FROM event_rows e CROSS JOIN calls c ON c.call = e.call")  # CROSS JOIN: a rowid scan, in seq order


# ---------------------------------------------------------------- one trace


class _Side:
    """One trace, loaded for comparison."""

    def __init__(self, name: str, tr: Trace) -> None:
        self.name = name
        self.tr = tr
        self.meta = tr.meta
        self.outcome = tr.outcome()
        self.threads = {t["tid"]: t for t in tr.threads()}
        self.objects = {o: (k, a, f) for o, k, a, f in tr.q("SELECT obj, kind, address, first_seq FROM objects")}
        self.sites = tr.sites()
        self.modules = tr.modules()
        self._sym: Symbolizer | None = None
        self._seqs: list[int] | None = None
        self.start_routines: set[int] | None = None
        lo, hi = tr.q1("SELECT min(seq) FROM event_rows"), tr.q1("SELECT max(seq) FROM event_rows")
        self.seq0 = int(lo or 0)
        self.last_seq = -1 if hi is None else int(hi)
        self.count = 0
        self.tids = self.kinds = self.objs = self.sites_s = self.results = ""
        self.pos: dict[str, list[int]] | None = None   # thread char -> positions

    @property
    def gapless(self) -> bool:
        return self.count == self.last_seq - self.seq0 + 1

    def load(self, raw: bytes | None = None) -> None:
        """Read every event into five strings, one code point per event each
        (raw: what _LOAD_SQL returned, if another process ran it)."""
        if raw is None:
            db = self.tr.db
            old = db.text_factory
            db.text_factory = bytes
            try:
                raw = db.execute(_LOAD_SQL).fetchone()[0] or b""
            except sqlite3.DatabaseError as e:
                raise TraceError(f"{self.tr.path}: the trace is damaged ({e})") from None
            finally:
                db.text_factory = old
        s = raw.decode("utf-8", "surrogatepass")
        if len(s) % WIDTH:
            raise TraceError(f"{self.tr.path}: the trace is damaged (an event field is out of range)")
        self.count = len(s) // WIDTH
        self.tids, self.kinds, self.objs, self.sites_s, self.results = (s[i::WIDTH] for i in range(WIDTH))

    def load_elsewhere(self) -> Callable[[], bytes | None]:
        """Run _LOAD_SQL in a forked process while this one reads the other
        trace; the returned function gives its result (None: it failed, load
        here). SQLite connections must not cross a fork: the child opens its own."""
        try:
            r, w = os.pipe()
            pid = os.fork()
        except OSError:
            return lambda: None
        if pid == 0:  # the child: never returns
            code = 1
            try:
                os.close(r)
                db = read_only(self.tr.path)
                db.text_factory = bytes
                data = db.execute(_LOAD_SQL).fetchone()[0] or b""
                with os.fdopen(w, "wb") as f:
                    f.write(data)
                code = 0
            finally:
                os._exit(code)
        os.close(w)

        def result() -> bytes | None:
            with os.fdopen(r, "rb") as f:
                data = f.read()
            _, status = os.waitpid(pid, 0)
            return data if status == 0 else None

        return result

    def maxima(self) -> dict[str, int]:
        q = self.tr.q1
        return {
            "tid": max(q("SELECT max(tid) FROM threads") or 0, q("SELECT max(tid) FROM blocked") or 0),
            "obj": q("SELECT max(obj) FROM objects") or 0,
            "site": q("SELECT max(site) FROM sites") or 0,
        }

    def positions(self) -> dict[str, list[int]]:
        """Thread char -> positions of its events, in order (index = idx)."""
        if self.pos is None:
            pos: dict[str, list[int]] = {}
            get = pos.get
            for i, c in enumerate(self.tids):
                lst = get(c)
                if lst is None:
                    lst = pos[c] = []
                lst.append(i)
            self.pos = pos
        return self.pos

    def seq_at(self, positions: list[int]) -> list[int]:
        if self.gapless:
            return [self.seq0 + p for p in positions]
        if self._seqs is None:
            self._seqs = [r[0] for r in self.tr.q("SELECT seq FROM event_rows ORDER BY seq")]
        return [self._seqs[p] for p in positions]

    @property
    def sym(self) -> Symbolizer:
        if self._sym is None:
            self._sym = Symbolizer(self.modules)
        return self._sym

    def summary(self) -> TraceSummary:
        o = None
        if self.outcome is not None:
            o = {k: (v.decode(errors="replace") if isinstance(v, bytes) else v) for k, v in self.outcome.items()}
        return TraceSummary(
            path=str(self.tr.path), argv=list(self.meta.get("argv") or []), binary=self.meta.get("binary"),
            binary_sha256=self.meta.get("binary_sha256"), complete=self.tr.complete, events=self.count,
            threads=len(self.threads), objects=len(self.objects), outcome=o,
        )


# ---------------------------------------------------------------- matching


def _object_keys(s: _Side) -> dict[int, tuple]:
    """obj -> what it is, comparable across traces."""
    by_thread_obj = {t["obj"]: tid for tid, t in s.threads.items()}
    keys: dict[int, tuple] = {}
    seen: Counter[tuple[int, int]] = Counter()
    for obj, (kind, addr, _first) in sorted(s.objects.items(), key=lambda kv: (kv[1][2], kv[0])):
        if kind == THREAD_KIND and obj in by_thread_obj:
            keys[obj] = ("thread", by_thread_obj[obj])
        else:
            # The n-th object of this kind at this address (destroyed and
            # created again gets a new id).
            keys[obj] = ("addr", kind, addr, seen[(kind, addr)])
            seen[(kind, addr)] += 1
    return keys


def match_objects(a: _Side, b: _Side) -> dict[int, int]:
    """B's object id -> A's object id, for every object both traces have."""
    ka, kb = _object_keys(a), _object_keys(b)
    by_key = {k: o for o, k in ka.items()}
    out = {ob: by_key[k] for ob, k in kb.items() if k in by_key}
    # The rest (e.g. heap objects, whose addresses can follow the schedule):
    # the same kind first used by the same event of the same thread.
    rest_a = [o for o in ka if o not in set(out.values())]
    rest_b = [o for o in kb if o not in out]
    if rest_a and rest_b:
        fa, fb = _first_use(a, rest_a), _first_use(b, rest_b)
        inv = {k: o for o, k in fa.items()}
        for o, k in fb.items():
            if k in inv:
                out[o] = inv.pop(k)
    return out


def _first_use(s: _Side, objs: list[int]) -> dict[int, tuple[int, int, int]]:
    """obj -> (kind, tid, idx) of the event that first used it; unique keys only."""
    want = {s.objects[o][2]: o for o in objs}
    found: dict[tuple[int, int, int], int | None] = {}
    for seq, o in want.items():
        e = s.tr.event(seq)
        if e is None:
            continue
        key = (s.objects[o][0], e.tid, e.idx)
        found[key] = None if key in found else o
    return {o: k for k, o in found.items() if o is not None}


def _site_keys(s: _Side, other_has_modules: bool) -> dict[int, tuple]:
    use_modules = bool(s.modules) and other_has_modules
    keys = {}
    for site, addr in s.sites.items():
        keys[site] = (os.path.basename(s.sym.module_of(addr)[0]), s.sym.module_of(addr)[1]) if use_modules \
            else ("addr", addr)
    return keys


def match_sites(a: _Side, b: _Side) -> dict[int, int]:
    """B's site id -> A's site id, for call sites both traces have."""
    ka = _site_keys(a, bool(b.modules))
    kb = _site_keys(b, bool(a.modules))
    by_key = {k: s for s, k in ka.items()}
    return {sb: by_key[k] for sb, k in kb.items() if k in by_key}


def _shared_numbers(b_ids: Iterable[int], b_to_a: dict[int, int], first_new: int) -> tuple[dict[int, int], int]:
    """B's ids in the shared numbering: A's id where matched, else new ones
    from first_new in B's order. Returns the map and the next free number."""
    canon: dict[int, int] = {}
    nxt = first_new
    for b in sorted(b_ids):
        if b in b_to_a:
            canon[b] = b_to_a[b]
        else:
            canon[b] = nxt
            nxt += 1
    return canon, nxt


def _gather(s: str, positions: list[int]) -> str:
    """The characters of s at positions, as a string."""
    if len(positions) < 2:
        return s[positions[0]] if positions else ""
    return "".join(itemgetter(*positions)(s))


def _first_diff(x: str, y: str, start: int = 0) -> int | None:
    """First index >= start where x and y differ (one ending counts), or None."""
    n = min(len(x), len(y))
    i = start
    step = 1 << 14
    while i < n:
        j = min(n, i + step)
        if x[i:j] != y[i:j]:
            while x[i] == y[i]:
                i += 1
            return i
        i = j
    return None if len(x) == len(y) else n


# ---------------------------------------------------------------- the comparison


class Comparison:
    """Two loaded traces, with everything needed to describe events of either."""

    def __init__(self, a: Trace, b: Trace, force: bool = False, symbolize: bool = True,
                 parallel: bool = False) -> None:
        self.a, self.b = _Side("a", a), _Side("b", b)
        self.symbolize = symbolize
        self.notes: list[str] = []
        check_same_program(self.a, self.b, force, self.notes)
        # An incomplete trace has no modules table (it is written at the
        # end); the binary is the same and ASLR off, so the other's serves.
        for x, y in ((self.a, self.b), (self.b, self.a)):
            if not x.modules and y.modules:
                x.modules = y.modules
        ma, mb = self.a.maxima(), self.b.maxima()
        self.b_obj_to_a = match_objects(self.a, self.b)
        self.b_site_to_a = match_sites(self.a, self.b)
        # The shared numbering: A's ids; objects and sites only in B are
        # numbered after A's largest.
        self.b_obj_canon, next_obj = _shared_numbers(self.b.objects, self.b_obj_to_a, (ma["obj"] or 0) + 1)
        self.b_site_canon, next_site = _shared_numbers(self.b.sites, self.b_site_to_a, (ma["site"] or 0) + 1)
        top = {"thread": max(ma["tid"], mb["tid"]), "object": max(next_obj, mb["obj"]),
               "call site": max(next_site, mb["site"])}
        for what, v in top.items():
            if v > MAX_ENCODABLE:
                raise DiffError(f"the traces have too many {what}s ({v}) for detdiff")
        # Reading the events is most of the time: with parallel, B is read by
        # a forked process meanwhile.
        later = self.b.load_elsewhere() if parallel else None
        self.a.load()
        self.b.load(later() if later else None)
        # B's object and site fields in the shared numbering.
        tr_obj = {ord(_enc(ob)): _enc(ca) for ob, ca in self.b_obj_canon.items() if ob != ca}
        if tr_obj:
            self.b.objs = self.b.objs.translate(tr_obj)
        tr_site = {ord(_enc(sb)): _enc(ca) for sb, ca in self.b_site_canon.items() if sb != ca}
        if tr_site:
            self.b.sites_s = self.b.sites_s.translate(tr_site)
        self.canon_to_b = {c: o for o, c in self.b_obj_canon.items()}
        self._names: dict[str, ObjectNames] = {}  # by side name
        self.align_budget = ALIGN_BUDGET
        # (trace, is a thread_start, address, what to locate): see finish().
        self._pending: list[tuple[_Side, bool, int, EventRef | ObjectRef]] = []

    # ----- describing events

    def refs(self, side: _Side, positions: list[int]) -> list[EventRef]:
        """EventRefs for positions of one trace, in the order given (located by finish())."""
        if not positions:
            return []
        seqs = side.seq_at(positions)
        rows: dict[int, tuple] = {}
        for seq in sorted(set(seqs)):
            e = side.tr.event(seq)
            if e is not None:
                rows[seq] = (seq, e.tid, e.idx, e.kind, e.obj, e.result, side.sites.get(e.site, 0))
        out = []
        for p, seq in zip(positions, seqs, strict=True):
            _, tid, idx, kind, obj, result, addr = rows[seq]
            e = EventRef(side=side.name, position=p, seq=seq, tid=tid, idx=idx, kind=kind_name(kind), obj=obj,
                         object=self.label(side, obj), name=self.name(side, obj), result=result, address=addr,
                         location=f"{addr:#x}" if addr else None, function=None)
            if addr:
                self._pending.append((side, self._is_entry(side, kind, addr), addr, e))
            out.append(e)
        return out

    def _is_entry(self, side: _Side, kind: int, addr: int) -> bool:
        """Is a site a function's entry rather than a return address? A
        thread_start's is (the start routine), and so is a thread_exit's when
        the start routine returned."""
        if kind == THREAD_START:
            return True
        if kind != THREAD_EXIT:
            return False
        if side.start_routines is None:
            side.start_routines = {r[0] for r in side.tr.q(
                "SELECT address FROM sites WHERE site IN (SELECT DISTINCT site FROM calls WHERE kind = ?)",
                (THREAD_START,))}
        return addr in side.start_routines

    def finish(self) -> None:
        """Source lines for every EventRef and ObjectRef made so far: one addr2line per module."""
        if not self.symbolize:
            return
        for side in (self.a, self.b):
            for start in (False, True):
                todo = [(addr, x) for s, st, addr, x in self._pending if s is side and st == start]
                if not todo:
                    continue
                # A thread_start's site is the start routine itself, not a return address.
                locs = side.sym.lookup([addr for addr, _ in todo], return_addresses=not start)
                for addr, x in todo:
                    loc = locs[addr]
                    x.location = loc.short()
                    if isinstance(x, EventRef):
                        x.function = loc.function
        self._pending.clear()

    def ref(self, side: _Side, position: int) -> EventRef:
        return self.refs(side, [position])[0]

    def label(self, side: _Side, obj: int) -> str:
        if obj == 0:
            return "no object"
        kind, _addr, _first = side.objects.get(obj, (0, 0, 0))
        # det.names' scheme: a thread is its T-name; an object is its
        # number in A, and in B where B numbered it otherwise (`mutex 5/B4`),
        # which detrec, detreplay and gdb show for B.
        if kind == THREAD_KIND:
            tid = next((t for t, row in side.threads.items() if row["obj"] == obj), None)
            if tid is not None:
                return f"T{tid}"
        if side is self.a:
            a_obj, b_obj = obj, self.canon_to_b.get(obj)
        elif obj in self.b_obj_to_a:
            a_obj, b_obj = self.b_obj_to_a[obj], obj
        else:
            return f"{objkind_name(kind)} B{obj}"
        other = f"/B{b_obj}" if b_obj is not None and b_obj != a_obj else ""
        return f"{objkind_name(kind)} {a_obj}{other}"

    def object_ref(self, canon: int) -> ObjectRef:
        """Describe an object by its shared id."""
        a_obj = canon if canon in self.a.objects else None
        b_obj = self.canon_to_b.get(canon)
        side, obj = (self.a, a_obj) if a_obj is not None else (self.b, b_obj)
        assert obj is not None
        kind, addr, first_seq = side.objects[obj]
        o = ObjectRef(label=self.label(side, obj), kind=objkind_name(kind), a_obj=a_obj, b_obj=b_obj,
                      address=addr, name=self.name(side, obj), location=None)
        row = side.tr.q(f"SELECT e.kind, s.address FROM {schema.EVENTS_PLAIN} e JOIN sites s ON s.site = e.site "
                        "WHERE e.seq = ?", (first_seq,))
        if row and row[0][1]:
            self._pending.append((side, self._is_entry(side, row[0][0], row[0][1]), row[0][1], o))
        return o

    def name(self, side: _Side, obj: int) -> str | None:
        """The program's name for an object (det.names): its variable, or
        the expression its source passed to det's call (`q->mut`), and
        whether one destroyed at its address came before it."""
        kind, _addr, _first = side.objects.get(obj, (0, 0, 0))
        if not self.symbolize or kind == THREAD_KIND:
            return None
        if side.name not in self._names:
            self._names[side.name] = ObjectNames(side.tr, side.sym, self.symbolize)
        return self._names[side.name].describe(obj) or None


def check_same_program(a: _Side, b: _Side, force: bool, notes: list[str]) -> None:
    """Refuse traces of different programs (the binary always, argv unless forced)."""
    sa, sb = a.meta.get("binary_sha256"), b.meta.get("binary_sha256")
    if not sa or not sb:
        raise DiffError(f"{(a if not sa else b).tr.path}: the trace does not say which binary it recorded")
    if sa != sb:
        raise DiffError(
            f"the traces record different programs: {a.tr.path} ran {a.meta.get('binary')} "
            f"(sha256 {sa[:12]}), {b.tr.path} ran {b.meta.get('binary')} (sha256 {sb[:12]})"
        )
    # argv[0] is however the program was named; the binary is already the same.
    xa, xb = list(a.meta.get("argv") or [])[1:], list(b.meta.get("argv") or [])[1:]
    if xa != xb:
        if not force:
            raise DiffError(
                f"the traces ran the program with different arguments ({_words(xa)} vs {_words(xb)}); "
                "--force compares them anyway"
            )
        notes.append(f"the arguments differ: A {_words(xa)}, B {_words(xb)}")


def _words(argv: list[str]) -> str:
    return " ".join(argv) if argv else "none"


def compare(a_path: str | os.PathLike[str], b_path: str | os.PathLike[str], *, force: bool = False,
            context: int = 3, limit: int | None = 10, symbolize: bool = True, parallel: bool = False) -> DiffResult:
    """Compare two trace files.

    force: compare traces whose arguments differ. context: events shown
    around the divergence. limit: cap on each list (None: no cap); counts are
    always complete. symbolize: source lines through addr2line and variable
    names through nm. parallel: read B in a forked process (not inside gdb).
    """
    with Trace(a_path) as ta, Trace(b_path) as tb:
        return compare_traces(ta, tb, force=force, context=context, limit=limit, symbolize=symbolize,
                              parallel=parallel)


def compare_traces(ta: Trace, tb: Trace, *, force: bool = False, context: int = 3, limit: int | None = 10,
                   symbolize: bool = True, parallel: bool = False) -> DiffResult:
    """Compare two open traces (see compare())."""
    c = Comparison(ta, tb, force=force, symbolize=symbolize, parallel=parallel)
    a, b = c.a, c.b

    def cap(xs: list) -> list:
        return xs if limit is None else xs[:limit]

    same_schedule = all(getattr(a, f) == getattr(b, f) for f in ("tids", "kinds", "objs", "sites_s"))
    divergence = None if same_schedule else _divergence(c, context)
    threads: list[ThreadDiff] = []
    inversions: list[Inversion] = []
    inversion_count = 0
    spans: list[tuple[int, str, str, list[int], bool]] = []   # (first position, side, thread, positions, aligned)
    result_pairs: list[tuple[int, int]] = []                  # positions in A and B
    if same_schedule:
        if a.results != b.results:
            result_pairs = [(i, i) for i, (x, y) in enumerate(zip(a.results, b.results, strict=True)) if x != y]
    else:
        pa, pb = a.positions(), b.positions()
        matched: dict[str, int] = {}     # thread char -> events matched: its first differing index
        for t in sorted(set(pa) | set(pb), key=ord):
            la, lb = pa.get(t, []), pb.get(t, [])
            d = thread_first_diff(a, b, la, lb)
            matched[t] = min(len(la), len(lb)) if d is None else d
            if d is not None:
                threads.append(_thread_diff(c, t, d, la, lb))
                spans.extend(_one_side(c, d, la, lb))
            k = matched[t]
            if k and a.results != b.results:
                ra = _gather(a.results, la[:k])
                rb = _gather(b.results, lb[:k])
                if ra != rb:
                    result_pairs.extend((la[i], lb[i]) for i, (x, y) in enumerate(zip(ra, rb, strict=True)) if x != y)
        inversions, inversion_count = _inversions(c, matched, limit)
        threads.sort(key=lambda td: min(e.position for e in (td.a, td.b) if e is not None))
    # Which thread a barrier_depart calls serial (-1) says who arrived last,
    # which the barrier's order already shows: not a difference of its own.
    serial = {chr(-1 + 64), chr(64)}
    result_pairs = sorted(
        (p, q) for p, q in result_pairs
        if a.kinds[p] not in VARYING_CHARS
        and not (a.kinds[p] == chr(BARRIER_DEPART) and a.results[p] in serial and b.results[q] in serial)
    )
    kept = cap(result_pairs)
    results = [ResultDiff(x, y) for x, y in zip(
        c.refs(a, [p for p, _ in kept]), c.refs(b, [q for _, q in kept]), strict=True)]
    spans.sort(key=lambda sp: (sp[0], sp[1]))
    one_side = [_span(c, side, positions, aligned) for _, side, _t, positions, aligned in cap(spans)]
    one_side_events = {"a": sum(len(sp[3]) for sp in spans if sp[1] == "a"),
                       "b": sum(len(sp[3]) for sp in spans if sp[1] == "b")}
    outcome = _outcome_diff(a, b)
    for side in (a, b):
        if not side.tr.complete:
            c.notes.append(f"{side.tr.path} is incomplete: the recording did not finish")
    # Who held which lock when each run ended: for a failure, often the
    # cause itself (two threads inside critical sections of one variable
    # under two different locks), which a default-mode recording does not
    # replay.
    held = {name: held_at_end(side.tr, ObjectNames(side.tr, side.sym, symbolize),
                              lambda o, side=side: _with_name(c, side, o))
            for name, side in (("a", a), ("b", b))}
    if outcome and b.meta.get("mode") not in ("strict", "ptrace", "isolated"):  # (they fix what threads do)
        c.notes.append(f"{b.tr.path} was recorded in the default mode, which does not fix what threads do "
                       "between events: if its replay diverges (a data race), record the failure with "
                       "detrec --strict --until-fail")
    c.finish()
    return DiffResult(
        a=a.summary(), b=b.summary(), schedule_identical=same_schedule and not result_pairs,
        outcome_identical=not outcome, divergence=divergence, threads=cap(threads), thread_count=len(threads),
        inversions=inversions, inversion_count=inversion_count, one_side=one_side, one_side_events=one_side_events,
        results=results, result_count=len(result_pairs), outcome=outcome, notes=c.notes, held=held,
    )


def _with_name(c: Comparison, side: _Side, obj: int) -> str:
    name = c.name(side, obj)
    return f"{c.label(side, obj)} ({name})" if name else c.label(side, obj)


def _divergence(c: Comparison, context: int) -> Divergence:
    a, b = c.a, c.b
    firsts = [d for d in (_first_diff(getattr(a, f), getattr(b, f)) for f in ("tids", "kinds", "objs", "sites_s"))
              if d is not None]
    p = min(firsts)
    if p >= a.count:
        reason = "a_ended"
    elif p >= b.count:
        reason = "b_ended"
    elif a.tids[p] != b.tids[p]:
        reason = "interleaving"
    else:
        reason = "operation"
    before = c.refs(a, list(range(max(0, p - context), p)))
    a_after = c.refs(a, list(range(p, min(a.count, p + context + 1))))
    b_after = c.refs(b, list(range(p, min(b.count, p + context + 1))))
    return Divergence(position=p, reason=reason, a=a_after[0] if a_after else None,
                      b=b_after[0] if b_after else None, before=before, a_after=a_after, b_after=b_after)


def thread_first_diff(a: _Side, b: _Side, la: list[int], lb: list[int]) -> int | None:
    """First index where a thread's operations differ (or one trace's thread ends), or None."""
    best = None
    for f in ("kinds", "objs", "sites_s"):
        xa, xb = getattr(a, f), getattr(b, f)
        d = _first_diff(_gather(xa, la), _gather(xb, lb))
        if d is not None and (best is None or d < best):
            best = d
    return best


def _thread_diff(c: Comparison, t: str, d: int, la: list[int], lb: list[int]) -> ThreadDiff:
    ea = c.ref(c.a, la[d]) if d < len(la) else None
    eb = c.ref(c.b, lb[d]) if d < len(lb) else None
    tid = (ea or eb).tid if (ea or eb) else _dec(t)
    ta, tb = c.a.threads.get(tid), c.b.threads.get(tid)
    return ThreadDiff(tid=tid, index=d, a=ea, b=eb, a_events=len(la), b_events=len(lb),
                      a_end=ta["end_state"] if ta else None, b_end=tb["end_state"] if tb else None)


def _one_side(c: Comparison, d: int, la: list[int], lb: list[int]) -> list[tuple[int, str, str, list[int], bool]]:
    """A thread's events from its first difference on that have no counterpart in the other trace.

    The two tails are aligned with difflib (an edit script: what A has that B
    lacks, and the other way round) after their common end is set aside,
    when what is left is short enough; else all of it is listed."""
    ta, tb = la[d:], lb[d:]
    t = c.a.tids[ta[0]] if ta else c.b.tids[tb[0]]
    out: list[tuple[int, str, str, list[int], bool]] = []
    # One tail empty: all of the other is one-sided, nothing to align.
    aligned = not (ta and tb) or len(ta) + len(tb) <= ALIGN_SCAN
    if ta and tb and aligned:
        sa = [c.a.kinds[p] + c.a.objs[p] + c.a.sites_s[p] for p in ta]
        sb = [c.b.kinds[p] + c.b.objs[p] + c.b.sites_s[p] for p in tb]
        end = 0
        while end < min(len(sa), len(sb)) and sa[-1 - end] == sb[-1 - end]:
            end += 1
        if end:
            sa, sb, ta, tb = sa[:-end], sb[:-end], ta[:-end], tb[:-end]
        cost = len(sa) * len(sb)
        aligned = cost <= min(ALIGN_LIMIT, c.align_budget)
        if aligned:
            c.align_budget -= cost

    def add(side: str, positions: list[int]) -> None:
        if positions:
            out.append((positions[0], side, t, positions, aligned))

    if aligned and ta and tb:
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, sa, sb, autojunk=False).get_opcodes():
            if op in ("delete", "replace"):
                add("a", ta[i1:i2])
            if op in ("insert", "replace"):
                add("b", tb[j1:j2])
    else:
        add("a", ta)
        add("b", tb)
    return out


def _span(c: Comparison, side_name: str, positions: list[int], aligned: bool) -> OneSide:
    side = c.a if side_name == "a" else c.b
    first, last = c.refs(side, [positions[0], positions[-1]])
    kinds = Counter(side.kinds[p] for p in positions)
    return OneSide(side=side_name, tid=first.tid, first_idx=first.idx, last_idx=last.idx, count=len(positions),
                   kinds={kind_name(ord(k)): n for k, n in kinds.most_common()}, first=first, aligned=aligned)


def _inversions(c: Comparison, matched: dict[str, int], limit: int | None) -> tuple[list[Inversion], int]:
    """Per object, the first pair of matched events the two traces order differently."""
    per_a = _per_object(c.a, matched)
    per_b = _per_object(c.b, matched)
    found: list[tuple[int, str, int, int, int, int]] = []
    for o, pos_a in per_a.items():
        pos_b = per_b.get(o)
        if pos_b is None or len(pos_a) < 2:
            continue
        sa = _gather(c.a.tids, pos_a)
        sb = _gather(c.b.tids, pos_b)
        if sa == sb:
            continue
        k = _first_diff(sa, sb)
        assert k is not None and k < len(sa) == len(sb), "matched events differ between traces"
        n = sum(map(operator.ne, sa, sb))
        found.append((pos_a[k], o, k, n, len(pos_a), 0))
    found.sort()
    out = []
    for _, o, k, n, total, _ in found if limit is None else found[:limit]:
        pos_a, pos_b = per_a[o], per_b[o]
        a1 = c.ref(c.a, pos_a[k])
        b1 = c.ref(c.b, pos_b[k])
        # The same two events in the other trace.
        a2 = c.ref(c.a, c.a.positions()[c.b.tids[pos_b[k]]][b1.idx])
        b2 = c.ref(c.b, c.b.positions()[c.a.tids[pos_a[k]]][a1.idx])
        out.append(Inversion(object=c.object_ref(_dec(o)), first=a1, second=a2, b_first=b1, b_second=b2,
                             positions=n, events=total))
    return out, len(found)


def _per_object(side: _Side, matched: dict[str, int]) -> dict[str, list[int]]:
    """Object char -> positions of its matched events, in order."""
    per: dict[str, list[int]] = {}
    get = per.get
    pos = side.positions()
    # Most threads match to their end: then every event counts, taken in one
    # pass; otherwise the matched prefix of each thread, merged in order.
    partial = {t for t, n in matched.items() if t in pos and n < len(pos[t])}
    none = _enc(0)
    objs = side.objs
    events: Iterable[tuple[int, str]] = enumerate(objs)
    if partial:
        keep = sorted(i for t, lst in pos.items() for i in (lst if t not in partial else lst[:matched[t]]))
        events = ((i, objs[i]) for i in keep)
    for i, o in events:
        if o != none:
            lst = get(o)
            if lst is None:
                lst = per[o] = []
            lst.append(i)
    return per


def _outcome_diff(a: _Side, b: _Side) -> list[OutcomeDiff]:
    oa, ob = a.outcome, b.outcome
    if oa is None or ob is None:
        if oa is None and ob is None:
            return []
        return [OutcomeDiff("status", oa["status"] if oa else "incomplete", ob["status"] if ob else "incomplete")]
    out = []
    for f in ("status", "exit_code", "signal"):
        if oa[f] != ob[f]:
            out.append(OutcomeDiff(f, oa[f], ob[f]))
    for stream in ("stdout", "stderr"):
        if oa[f"{stream}_sha256"] != ob[f"{stream}_sha256"]:
            out.append(OutcomeDiff(stream, _stream(oa, stream), _stream(ob, stream)))
    return out


def _stream(o: dict[str, Any], stream: str) -> dict[str, Any]:
    tail = o[f"{stream}_tail"]
    return {"bytes": o[f"{stream}_bytes"], "sha256": o[f"{stream}_sha256"],
            "tail": tail.decode(errors="replace") if isinstance(tail, bytes) else tail}
