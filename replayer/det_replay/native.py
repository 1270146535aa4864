"""ctypes binding to libdetsup.so's replay side (det_sup_replay_new, the
turns backend, the feeder): the Replayer, a shared region that enforces a
trace's schedule on the replayed program.

Rules: the SQL passed to the library comes from det.schema; everything else
of the library (loading it, the region) is det.native's; errors are
DetErrors of one line.
"""

from __future__ import annotations

import ctypes
import sqlite3
import threading
from pathlib import Path

from det import schema
from det.constants import DET_F_ALL_ORDERED, DET_F_RELAXED, DET_F_STRICT
from det.errors import DetError
from det.native import Region, c_string, lib, schedule_events
from det.tracefile import read_only


class Replayer(Region):
    def __init__(self, trace_path: Path, complete: bool, relaxed: bool, strict: bool = False,
                 backend: str = "futex", all_ordered: bool = False) -> None:
        """all_ordered: inputs too wait for their place in the order (under
        gdb, where a stop at event N must be at N)."""
        err = ctypes.create_string_buffer(512)
        threads_sql = schema.REPLAY_THREADS_COMPLETE if complete else schema.REPLAY_THREADS_COUNTED
        try:
            db = read_only(trace_path)
            try:
                procs = db.execute(schema.REPLAY_PROCESSES).fetchall()
                threads = db.execute(schema.REPLAY_THREAD_PROCESSES).fetchall()
                ran_last = db.execute(schema.REPLAY_RAN_LAST).fetchone()
                packed = db.execute(schema.REPLAY_SCHEDULE_ROWS).fetchone()
            finally:
                db.close()
        except sqlite3.Error as e:
            raise DetError(f"{trace_path}: cannot read its processes ({e})") from None
        # the packed schedule, when the trace has one (libdetsup.so reads the
        # rows when its event count is not the threads')
        events = schedule_events(packed[0] if packed else None)
        h = lib().det_sup_replay_new(
            c_string(trace_path), c_string(threads_sql), c_string(schema.REPLAY_MAX_OBJECT),
            c_string(schema.REPLAY_CALLS),
            c_string(schema.REPLAY_EVENTS), c_string(schema.REPLAY_SCHEDULE if events is not None else None),
            2**64 - 1 if events is None else events,
            c_string(schema.REPLAY_DATA_SIZE), c_string(schema.REPLAY_DATA),
            (DET_F_RELAXED if relaxed else 0) | (DET_F_STRICT if strict else 0)
            | (DET_F_ALL_ORDERED if all_ordered else 0), err, 512,
        )
        if not h:
            raise DetError(f"{trace_path}: {err.value.decode(errors='replace')}")
        super().__init__(h)
        try:
            self.set_processes(procs, threads, ran_last[0] if ran_last else None)
        except DetError as e:
            self.close()
            raise DetError(f"{trace_path}: cannot read its processes ({e})") from None
        if lib().det_sup_turns(self.h, backend.encode()) != 0:
            err = lib().det_sup_error(self.h).decode()
            self.close()
            raise DetError(err, status=2)
        # the schedule beyond the threads' first windows streams in as they go
        self.feeder = threading.Thread(target=lib().det_sup_feed_run, args=(h,), name="det-feed", daemon=True)
        self.feeder.start()

    def close(self) -> None:
        if self.h and getattr(self, "feeder", None) is not None:
            lib().det_sup_feed_stop(self.h)
            self.feeder.join()
            self.feeder = None
        super().close()

    def events_done(self) -> int:
        return lib().det_sup_events_done(self.h)

    @property
    def packed(self) -> bool:
        """Whether the schedule is read from the trace's packed schedule (else from event_rows)."""
        return bool(lib().det_sup_replay_packed(self.h))

    def turns_state(self) -> str:
        """The enforcement backend's own view of who waits ("" if it has none)."""
        buf = ctypes.create_string_buffer(1024)
        if lib().det_sup_turns_describe(self.h, buf, 1024) != 0:
            return ""
        return buf.value.decode(errors="replace")

    def set_processes(self, processes: list[tuple[int, int, int | None]],
                      threads: list[tuple[int, int, int, str | None]], ran_last: int | None = None) -> None:
        """The recording's (process, pid, wait status) and (thread, process,
        kernel thread id, end state): a strict thread that ended waiting for
        its turn stops after its last event in replay too; the one that ran
        last (meta ran_last) runs on alone past the schedule's end."""
        for idx, pid, status in processes:
            if lib().det_sup_replay_process(self.h, idx, pid, -1 if status is None else status) != 0:
                raise DetError(lib().det_sup_error(self.h).decode())
        for num, proc, ktid, end_state in threads:
            if lib().det_sup_replay_thread(self.h, num, proc, ktid, end_state == "waiting") != 0:
                raise DetError(lib().det_sup_error(self.h).decode())
        if ran_last is None:
            return
        if type(ran_last) is not int or ran_last < 0:
            raise DetError(f"meta ran_last is not a thread number ({ran_last!r})")
        if lib().det_sup_replay_ran_last(self.h, ran_last) != 0:
            raise DetError(lib().det_sup_error(self.h).decode())
