"""Replaying an order for real: a copy of FAIL (mode 0600, in a private
directory) with its events renumbered, replayed by the real detreplay, and
the verdict on what it said.

Rules: an order is never replayed twice (the first verdict is reused). A
replay runs in its own session: when it has to be stopped (its time is up,
or the caller cancels), its program is stopped with it.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from det import schema
from det.constants import DET_EXIT_STOPPED
from det.seal import seal
from det.trace import Trace

from .hybrid import Borrowed
from .model import KIND_BY_NAME, OBJKIND, SYNC_OBJECTS, Ev
from .result import ANOTHER_PATH, FAILS, IMPOSSIBLE, OTHER_OUTCOME, STALLED, STOPPED, BisectError


def detreplay_command() -> list[str]:
    """The real detreplay: the one installed beside this Python, else on PATH, else its module."""
    here = Path(sys.executable).parent / "detreplay"
    if here.exists():
        return [str(here)]
    found = shutil.which("detreplay")
    if found:
        return [found]
    return [sys.executable, "-m", "det.replay.cli"]


@dataclass
class Verdict:
    verdict: str
    detail: str
    exit_status: int


_OUTCOME_DIFFERS = re.compile(r"the outcome differs: (.*)$")
_RESULT_DIVERGENCE = re.compile(r": (\w+)\(.*?\) at .*: the operation returned something else")


def classify(returncode: int, lines: list[str], fail_status: int) -> Verdict | None:
    """What detreplay's lines (without the `detreplay: ` prefix) say about a
    replay; None when detreplay did not replay at all."""
    text = " ".join(lines)
    key = next((ln for ln in reversed(lines) if "divergence" in ln or "outcome" in ln or "diverge" in ln
                or "det stopped" in ln or "recorded event" in ln), None)
    last = key or (lines[-1] if lines else f"detreplay exited {returncode}")
    if "impossible order at event" in text:
        # det.validate refused the hybrid before running it: a lock taken
        # while held, a join before the exit, ...
        return Verdict(IMPOSSIBLE, last, returncode)
    if "outcome matches the recording" in text:
        return Verdict(FAILS if returncode == fail_status else OTHER_OUTCOME, last, returncode)
    if "replay stalled" in text:
        return Verdict(STALLED, last, returncode)
    m = next((m for m in map(_OUTCOME_DIFFERS.search, lines) if m), None)
    if m:
        # Only the output differs: the program ended as FAIL did (the same
        # exit status or signal), so it still fails, in other words.
        same_end = not any(p.startswith(("recorded ", "the recording was stopped")) for p in m.group(1).split("; "))
        return Verdict(FAILS if same_end else OTHER_OUTCOME, last, returncode)
    if "det stopped the program" in text:
        return Verdict(STOPPED, last, returncode)
    m = _RESULT_DIVERGENCE.search(last)
    if m:
        # A lock, wait or join that cannot return what was recorded: the
        # order is impossible. Output or input that returns something else:
        # the program went another way.
        kind = KIND_BY_NAME.get(m.group(1))
        sync = kind is not None and OBJKIND.get(kind) in SYNC_OBJECTS
        return Verdict(IMPOSSIBLE if sync else ANOTHER_PATH, last, returncode)
    if returncode == DET_EXIT_STOPPED and key is not None:
        return Verdict(ANOTHER_PATH, last, returncode)
    return None


@dataclass
class ReplaySettings:
    """How hybrids are replayed."""

    workdir: Path                       # where their trace files are written
    keep: bool                          # keep the files (else each is removed after its replay)
    stall: float                        # seconds without an event: the replay stalled
    command: list[str] | None = None    # how to run detreplay (default: detreplay_command())
    cancel: threading.Event | None = None   # set: stop the replay under way, raise BisectError


# How often a replay under way looks at its cancel event (seconds).
CANCEL_POLL = 0.2


class Runner:
    """Writes orders as trace files and replays them."""

    def __init__(self, fail: Trace, evs: list[Ev], borrowed: Borrowed, fail_status: int, workdir: Path,
                 keep: bool, stall: float, command: list[str] | None = None,
                 cancel: threading.Event | None = None) -> None:
        self.fail = fail
        self.evs = evs
        self.borrowed = borrowed
        self.fail_status = fail_status
        self.workdir = workdir
        self.keep = keep
        self.stall = stall
        self.cancel = cancel
        self.command = command or detreplay_command()
        self.replays = 0
        self.seen: dict[tuple[int, ...], tuple[Verdict, int]] = {}
        self.kept: list[Path] = []

    def judge(self, order: list[int], name: str) -> tuple[Verdict, int, bool]:
        """The verdict on an order, the number of the replay that gave it, and
        whether that was an earlier replay of the same order."""
        key = tuple(order)
        if key in self.seen:
            return (*self.seen[key], True)
        self.replays += 1
        path = self.workdir / f"{self.replays:03d}-{name}.db"
        self.write(order, path)
        v = self.replay(path)
        self.seen[key] = (v, self.replays)
        if self.keep:
            self.kept.append(path)
        else:
            path.unlink(missing_ok=True)
        return v, self.replays, False

    def write(self, order: list[int], path: Path) -> None:
        """A copy of FAIL whose events run in `order` (base positions)."""
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with open(self.fail.path, "rb") as src, os.fdopen(fd, "wb") as dst:
                    fd = -1
                    shutil.copyfileobj(src, dst, 1 << 20)
            finally:
                if fd >= 0:
                    os.close(fd)
        except OSError as e:
            raise BisectError(f"cannot write {path}: {e.strerror}") from None
        n = len(self.evs) - len(self.borrowed.events)
        new_seq = [0] * len(order)
        for new, p in enumerate(order):
            new_seq[p] = new
        # FAIL's rows, old seq -> new seq, through negative values, so that
        # no two rows ever share a key while they move.
        remap = [(-1 - self.evs[p].seq, new_seq[p]) for p in range(n)]
        b = self.borrowed
        try:
            db = sqlite3.connect(path)
            # every event as (tid, call, result, ts) by its new seq: the rows
            # are written again in the new order, with each thread's ts deltas
            # and the marks recomputed
            old: dict[int, tuple[int, int, int, int]] = {}
            now: dict[int, int] = {}
            for seq, tid, call, result, dts in db.execute("SELECT seq, tid, call, result, dts FROM event_rows "
                                                          "ORDER BY seq"):
                now[tid] = now.get(tid, 0) + dts
                old[seq] = (tid, call, result, now[tid])
            calls = {(k, o, a, st): c for c, k, o, a, st in db.execute("SELECT call, kind, obj, aux, site FROM calls")}
            next_call = max(calls.values(), default=0) + 1
            new_calls: list[tuple[int, int, int, int, int]] = []
            rows: list[tuple[int, int, int, int]] = [(0, 0, 0, 0)] * len(order)
            for p in range(n):
                rows[new_seq[p]] = old[self.evs[p].seq]
            for e, (tid, _idx, kind, o, result, aux, site, ts) in zip(b.events, b.rows, strict=True):
                key = (kind, o, aux, site)
                if key not in calls:
                    calls[key] = next_call
                    new_calls.append((next_call, *key))
                    next_call += 1
                rows[new_seq[e.pos]] = (tid, calls[key], result, ts)
            out: list[tuple[int, int, int, int, int]] = []
            marks: list[tuple[int, int, int, int]] = []
            last_ts: dict[int, int] = {}
            count: dict[int, int] = {}
            marked: set[tuple[int, int]] = set()
            for seq, (tid, call, result, ts) in enumerate(rows):
                win = seq // schema.MARK_WINDOW
                if (win, tid) not in marked:
                    marked.add((win, tid))
                    marks.append((win, tid, count.get(tid, 0), ts))
                out.append((seq, tid, call, result, ts - last_ts.get(tid, 0)))
                last_ts[tid] = ts
                count[tid] = count.get(tid, 0) + 1
            with db:
                db.execute("CREATE TEMP TABLE remap(old INTEGER PRIMARY KEY, new INTEGER NOT NULL)")
                db.executemany("INSERT INTO remap(old, new) VALUES (?, ?)", remap)
                db.execute("UPDATE data SET seq = -1 - seq")
                db.execute("UPDATE data SET seq = (SELECT new FROM remap WHERE old = data.seq)")
                db.execute("UPDATE objects SET first_seq = coalesce("
                           "(SELECT new FROM remap WHERE old = -1 - objects.first_seq), first_seq)")
                db.execute("UPDATE threads SET create_seq = coalesce("
                           "(SELECT new FROM remap WHERE old = -1 - threads.create_seq), create_seq)")
                db.execute("DELETE FROM event_rows")
                db.execute("DELETE FROM marks")
                # A's recorded schedule digest is not the hybrid's: readers hash its rows (Trace.schedule_digest)
                db.execute("DELETE FROM meta WHERE key = 'schedule_digest'")
                db.executemany("INSERT INTO calls(call, kind, obj, aux, site) VALUES (?,?,?,?,?)", new_calls)
                db.executemany("INSERT INTO event_rows(seq, tid, call, result, dts) VALUES (?,?,?,?,?)", out)
                db.executemany("INSERT INTO marks(win, tid, idx, ts) VALUES (?,?,?,?)", marks)
                if b.events:
                    db.executemany("INSERT INTO objects(obj, kind, address, first_seq) VALUES (?,?,?,?)",
                                   [(o, k, addr, 0) for o, k, addr in b.new_objects])
                    db.execute("UPDATE objects SET first_seq = (SELECT min(e.seq) FROM event_rows e JOIN calls c "
                               "ON c.call = e.call WHERE c.obj = objects.obj) "
                               f"WHERE obj IN ({','.join(str(o) for o, _, _ in b.new_objects) or '0'})")
                    db.executemany("INSERT INTO sites(site, address) VALUES (?,?)", b.new_sites)
                    db.executemany("UPDATE threads SET events = events + ? WHERE tid = ?",
                                   [(k, t) for t, k in b.per_thread.items()])
                    db.execute("UPDATE outcome SET events = (SELECT count(*) FROM event_rows)")
            seal(db)  # a hybrid is a trace det made: its checksum covers the new order
            db.close()
        except sqlite3.Error as e:
            raise BisectError(f"cannot write a hybrid trace in {path.parent}: {e}") from None

    def replay(self, path: Path) -> Verdict:
        cmd = [*self.command, "--stall", f"{self.stall:g}", str(path)]
        limit = 60 + 4 * self.stall
        try:
            # Its own session: if it has to be stopped, so is the program it runs.
            p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 start_new_session=True)
        except OSError as e:
            raise BisectError(f"cannot run detreplay ({cmd[0]}): {e.strerror}") from None
        try:
            err = self._wait(p, limit)
            if err is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.communicate()
                return Verdict(STALLED, f"detreplay did not finish in {limit:g} s", 124)
        except BaseException:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            raise
        lines = [ln.removeprefix("detreplay: ") for ln in err.decode(errors="replace").splitlines()
                 if ln.startswith("detreplay: ")]
        v = classify(p.returncode, lines, self.fail_status)
        if v is None:
            why = (f"detreplay was killed by signal {-p.returncode}" if p.returncode < 0
                   else lines[-1] if lines else f"detreplay exited {p.returncode}")
            raise BisectError(f"detreplay could not replay a hybrid trace ({path.name}): {why}")
        return v

    def _wait(self, p: subprocess.Popen, limit: float) -> bytes | None:
        """detreplay's stderr when it ends, None when it did not end within
        limit seconds; BisectError when the caller cancelled."""
        waited = 0.0
        while True:
            step = limit - waited if self.cancel is None else min(CANCEL_POLL, limit - waited)
            try:
                return p.communicate(timeout=step)[1]
            except subprocess.TimeoutExpired:
                waited += step
                if self.cancel is not None and self.cancel.is_set():
                    raise BisectError("the bisection was cancelled") from None
                if waited >= limit:
                    return None
