"""Snapshots of the replayed process (replayer/snapshot.c): going back
resumes the nearest one instead of restarting the program.

libdet.so takes one before the first event and then every `every` events
(det_gdb_control.snap_at, snap_every): the thread whose turn it is has the
others save their contexts where they wait and forks; the snapshot waits.
It reports each with det_gdb_snapshot(pid, seq), where a silent breakpoint
keeps it here with where the program's output was (det_gdb.output). Going
back to event N kills the program, attaches gdb to the nearest snapshot at
or before N and lets it go on (det_gdb_control.snap_go); it forks a
replacement of itself first, so the same snapshot serves again.

What a resume costs, and what keeps it small: the attach re-reads the
symbols of every library (~0.15-0.45 s) unless gdb still has them open, so
across a reverse command's runs a second, processless inferior holds the
same files (gdb shares a file's symbol tables between program spaces;
held(): ~0.05 s an attach instead, ~0.1 s once to hold them); a reverse command's second run resumes the snapshot its
first run took where its window starts (also_at), not one up to
`every` events before it.

Rules of this file:
  - As every det_gdb module: no inferior function calls (memory writes
    only), standard library only, every user error one gdb.GdbError line.
  - At most CAP snapshots live: the oldest taken goes first, but never the
    earliest (the program's start). A second one at a seq already held is
    killed at once. gdb kills every snapshot as it exits (a snapshot also
    ends itself once detreplay is gone).
  - Ordered replays only: a relaxed one has no single position to resume.
  - A snapshot that cannot be resumed (gone, attach refused) is dropped and
    the caller restarts the program, as without snapshots.
  - The holding inferior lives only while a reverse command runs: the
    user never sees a second inferior (thread ids stay unqualified, their
    breakpoints get no second locations).
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import gdb

CAP = 8
WINDOW = 64         # a reverse command's first window, in events (det_gdb.reexec): det takes a snapshot
                    # that many events before each stop it makes at an event, where that window starts
UINT64_MAX = 2**64 - 1
EVERY_MIN = 1000
PARTS = 32          # by default a snapshot every total/PARTS events (at least EVERY_MIN): a resume
                    # replays at most that many (~3 us each under gdb) after its attach (~0.2 s)
REFUSALS = {1: "a thread was not waiting inside det", 2: "the program has more than one process",
            3: "no memory for a copy of det's shared region", 4: "fork failed",
            5: "the kmod backend keeps the turns outside the process",
            6: "the program handles SIGCHLD", 7: "a strict replay's threads wait where det takes no snapshot"}


@dataclass
class Snapshot:
    seq: int              # the next event when it was taken
    pid: int
    output: list[int]     # the program's output so far, per channel (det_gdb.output)
    order: int            # when it was taken


class Snapshots:
    """The live snapshots of one session."""

    def __init__(self, first: int, total: int, enabled: bool) -> None:
        self.first = first
        self.every = max(EVERY_MIN, total // PARTS)
        self.enabled = enabled
        self.taken: list[Snapshot] = []
        self.count = 0
        self.resumes = 0
        self.attaching = False
        self.also_at: int | None = None  # one point off the grid to take (a reverse command's window)
        self.holding = False
        gdb.events.gdb_exiting.connect(self.on_gdb_exiting)
        # attaching reads every library's symbols again: gdb's index cache
        # makes that a quarter of a second less (a directory of the session's)
        self.index_dir = tempfile.mkdtemp(prefix="det-gdb-index-")
        for cmd in (f"set index-cache directory {self.index_dir}", "set index-cache enabled on"):
            try:
                gdb.execute(cmd, to_string=True)
            except gdb.error:
                pass

    # --- taking ---------------------------------------------------------------
    def arm(self, after: int | None) -> None:
        """While det moves the program: the next snapshot at the first point
        of the grid (first event + k * every) past event `after` (None: at
        the first event). gdb's own continue and step take none (each fork
        would have gdb say it detached a child)."""
        if not self.enabled:
            return self.disarm()
        gdb.parse_and_eval(f"det_gdb_control.snap_every = {self.every}")
        gdb.parse_and_eval(f"det_gdb_control.snap_at = {self.next_point(after)}")

    def window_start(self, model, seq: int) -> int | None:
        """Where a reverse command's first window from event seq starts (None: at the program's start)."""
        i = model.index_of(seq) - WINDOW
        return model.seq_at(i) if i > 0 else None

    def next_point(self, after: int | None) -> int:
        """The first point past event `after` (None: from the first event)
        to take a snapshot at that no snapshot holds (one there would be
        killed as a duplicate: its fork is wasted): on the grid, or also_at."""
        at = self.first
        if after is not None:
            at += -(-(after + 1 - self.first) // self.every) * self.every
        held = {s.seq for s in self.taken}
        while at in held:
            at += self.every
        also = self.also_at
        if also is not None and also not in held and (after is None or also > after):
            at = min(at, also)
        return at

    def disarm(self) -> None:
        gdb.parse_and_eval(f"det_gdb_control.snap_at = {UINT64_MAX}")

    def on_snapshot(self, output: list[int]) -> bool:
        """libdet.so took one (breakpoint on det_gdb_snapshot): keep it."""
        pid = int(gdb.parse_and_eval("(int)$rdi"))
        seq = int(gdb.parse_and_eval("(unsigned long)$rsi"))
        if any(s.seq == seq for s in self.taken) or not self.enabled:
            kill(pid)
            return False
        self.count += 1
        self.taken.append(Snapshot(seq, pid, output, self.count))
        at = int(gdb.parse_and_eval("det_gdb_control.snap_at"))
        if at != UINT64_MAX:  # (libdet counted on from this one: back onto the grid)
            gdb.parse_and_eval(f"det_gdb_control.snap_at = {self.next_point(seq)}")
        while len(self.taken) > CAP:
            start = min(self.taken, key=lambda s: s.seq)
            old = min((s for s in self.taken if s is not start), key=lambda s: s.order)
            self.taken.remove(old)
            kill(old.pid)
        return False

    def refused(self) -> str | None:
        try:
            why = int(gdb.parse_and_eval("det_gdb_control.snap_refused"))
        except gdb.error:
            return None
        return REFUSALS.get(why, f"reason {why}") if why else None

    # --- resuming ---------------------------------------------------------------
    def nearest(self, seq: int) -> Snapshot | None:
        ok = [s for s in self.taken if s.seq <= seq]
        return max(ok, key=lambda s: s.seq) if ok else None

    @contextmanager
    def held(self) -> Iterator[None]:
        """Keep the program's symbol files open in a second, processless
        inferior while the body resumes snapshots (each kills the program
        and attaches to a snapshot). Worth it for two resumes or more (it
        costs about what one attach saves); nested: the outer one holds."""
        if self.holding or not self.enabled or not self.taken:
            yield
            return
        cur = gdb.selected_inferior()
        files = [o.filename for o in gdb.objfiles()
                 if o.is_valid() and o.owner is None and o.filename and os.path.isfile(o.filename)]
        holder = None
        quiet_cli = gdb.parameter("suppress-cli-notifications")  # (inferior switches print past to_string)
        gdb.execute("set suppress-cli-notifications on", to_string=True)
        try:
            gdb.execute("add-inferior -no-connection", to_string=True)
            holder = max(gdb.inferiors(), key=lambda i: i.num)
            gdb.execute(f"inferior {holder.num}", to_string=True)
            for f in files:
                gdb.execute(f"add-symbol-file {f}", to_string=True)
        except gdb.error:
            pass  # (without it each attach reads the symbols again: slower, not wrong)
        finally:
            if gdb.selected_inferior() != cur and cur.is_valid():
                gdb.execute(f"inferior {cur.num}", to_string=True)
            gdb.execute(f"set suppress-cli-notifications {'on' if quiet_cli else 'off'}", to_string=True)
        self.holding = True
        try:
            yield
        finally:
            self.holding = False
            if holder is not None and holder.is_valid():
                gdb.execute(f"remove-inferiors {holder.num}", to_string=True)

    def take_out(self, snap: Snapshot) -> None:
        self.taken.remove(snap)
        self.resumes += 1

    def on_gdb_exiting(self, _event) -> None:
        """gdb detaches from a program it attached to as it exits (and gdb 13
        trips on its own assertion doing so with threads): kill it, as gdb
        kills a program it started."""
        self.drop_all()
        shutil.rmtree(self.index_dir, ignore_errors=True)
        inf = gdb.selected_inferior()
        if self.resumes and inf is not None and inf.pid:
            try:
                gdb.execute("set confirm off", to_string=True)
                gdb.execute("kill", to_string=True)
            except gdb.error:
                kill(inf.pid)

    def drop_all(self) -> None:
        for s in self.taken:
            kill(s.pid)
        self.taken = []


def kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
