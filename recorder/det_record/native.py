"""ctypes binding to libdetsup.so's capture (det_sup_record_new,
det_capture_*): the Recorder, a shared region that a recorded program's
rings drain from into a capture log.

Rules: everything else of the library (loading it, the region, converting
a log) is det.native's; errors are DetErrors of one line.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

from det.errors import DetError
from det.native import CaptureStats, Region, c_string, lib


class Recorder(Region):
    def __init__(self, max_threads: int, rings: int, ring_entries: int, objects_cap: int) -> None:
        h = lib().det_sup_record_new(max_threads, rings, ring_entries, objects_cap)
        if not h:
            raise DetError("out of memory")
        super().__init__(h)
        err = lib().det_sup_error(h).decode()
        if err:
            self.close()
            raise DetError(f"cannot set up shared memory: {err}")

    def capture_open(self, log_path: Path, meta_json: str) -> None:
        if lib().det_capture_open(self.h, c_string(log_path), meta_json.encode()) != 0:
            raise DetError(lib().det_sup_error(self.h).decode())

    def capture_start(self) -> None:
        """Capture on a thread of libdetsup.so's until capture_finish."""
        if lib().det_capture_start(self.h) != 0:
            raise DetError(lib().det_sup_error(self.h).decode())

    def capture_failed(self) -> bool:
        """Has the capture ended on an error (the log could not be written)?
        The program's threads then wait for ring room for ever: stop it."""
        return bool(lib().det_capture_failed(self.h))

    def capture_finish(self) -> str | None:
        """Stop capturing (the program has ended) once everything is in the
        log; returns an error or None."""
        if lib().det_capture_finish(self.h) != 0:
            return lib().det_sup_error(self.h).decode()
        return None

    def capture_stopped(self) -> bool:
        """Has the capture found the program's rings corrupt (failed() says
        why)? Then the program is to be stopped."""
        return bool(lib().det_capture_stopped(self.h))

    def stats(self) -> CaptureStats:
        st = CaptureStats()
        lib().det_capture_stats(self.h, ctypes.byref(st))
        return st
