"""The capture log's block checksum (recorder/logfmt.h): the SSE4.2 path and
the portable one give the same value, so a log written on one CPU checks on
any other (qemu's TCG guest of make check-kmod has no SSE4.2)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_checksum_is_the_same_with_and_without_sse42(tmp_path: Path) -> None:
    exe = tmp_path / "log_check"
    subprocess.run(["gcc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-I", ROOT / "include", "-I",
                    ROOT / "recorder", "-o", exe, ROOT / "tests" / "unit" / "c" / "log_check.c"], check=True)
    r = subprocess.run([exe], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == "same\n", r.stdout + r.stderr


def test_log_space_is_reserved_ahead_and_given_back(tmp_path: Path) -> None:
    """The capture reserves the disk space of a log past 1 MB ahead of its
    writes (recorder/capture.c reserve_log: appending block by block cost
    the capture most of its kernel time) without changing its size, and
    gives back what it did not write when it ends; a small log (most of a
    hunt's runs) is not reserved for: its reserved blocks made ending and
    removing it cost milliseconds."""
    import json
    import time

    from det import native
    from det.record.native import Recorder

    for name, meta, reserved in (("small", {}, False), ("large", {"pad": "x" * (2 << 20)}, True)):
        rec = Recorder(4, 4, 1024, 1024)
        log = tmp_path / f"{name}.incomplete.log"
        try:
            rec.capture_open(log, json.dumps(meta))  # (the META chunk makes the log large)
            rec.capture_start()
            time.sleep(0.05)
            st = os.stat(log)
            assert st.st_size < 3 << 20, st.st_size
            if reserved:
                assert st.st_blocks * 512 >= 16 << 20, (st.st_size, st.st_blocks)  # reserved past the end
            else:
                assert st.st_blocks * 512 < 1 << 20, (st.st_size, st.st_blocks)
            assert rec.capture_finish() is None
        finally:
            rec.close()
        st = os.stat(log)
        assert st.st_blocks * 512 < (st.st_size + (1 << 20)), (st.st_size, st.st_blocks)  # given back
        assert native.log_digest(log).complete == 1  # and it reads to its END chunk


def test_the_tests_own_reading_of_a_log_checks_as_dets(tmp_path: Path) -> None:
    """tests/caplog.py (what the tests craft logs with, the checksum written
    from docs/TRACE_FORMAT.md) takes a real log apart into every chunk with
    the same checksums, and a log it puts back together reads to its END
    chunk: else the fuzz's edits 'with the checksum made right' would only
    be cut."""
    import caplog

    from det import native
    from det.record.engine import Options, capture_run

    exe = str(ROOT / "tests" / "bin" / "api_tour")
    log = capture_run(exe, [exe], tmp_path / "t.db", Options()).writer.log
    header, chunks, tail = caplog.read(log)
    assert tail == b"" and {c.type for c in chunks} == set(range(caplog.META, caplog.END + 1))
    assert all(c.check == caplog.checksum(c.payload, c.type, c.bytes) for c in chunks)
    again = tmp_path / "again.log"
    caplog.write(again, header, [caplog.chunk(c.type, c.payload, c.thread) for c in chunks])
    assert again.read_bytes() == log.read_bytes()
    assert native.log_digest(again).complete == 1
