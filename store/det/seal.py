"""The seal of a trace: its content checksum, and the traces known to be valid.

Rules of this file:
  - det's own writers seal a trace (seal) after they wrote or changed a
    complete one: the content checksum (meta content_sum) covers everything
    replay enforces (the events' order, kinds, objects, results and aux
    values, the input data, the piped stdin, the threads and processes, the
    meta values and outcome replay uses); det.validate's full pass compares
    it, so a changed input value or schedule is refused. The checksum is
    over the stored tables (event_rows and calls, no join); their row lanes
    are summed in C (supervisor/sums.h): by the converter as it writes them,
    so detrec's seal reads no event again, else by one C scan of each.
  - The full pass runs once per content: the identity of a trace det wrote,
    or of one that passed (native.file_identity: all its bytes, 256 bits,
    read at memory speed), is kept in the user's cache
    ($XDG_CACHE_HOME/det/valid-traces: remember, known_valid).
  - Standard library only (gdb's Python imports it through det.validate),
    and libdetsup.so through det.native (ctypes), imported only when a sum
    or an identity is made.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import zlib
from pathlib import Path
from typing import Any

from .errors import DetError, TraceDamage
from .paths import user_cache

# ---------------------------------------------------------------- the content checksum

# Meta and outcome values replay uses: the checksum covers them.
SEALED_META = ("format_version", "mode", "argv", "env", "cwd", "binary", "binary_sha256", "stdin", "stdout", "stderr",
               "libraries")
SEALED_OUTCOME = ("status", "exit_code", "signal", "stdout_bytes", "stdout_sha256", "stderr_bytes",
                  "stderr_sha256", "events")
# The events and calls as stored: their lanes are summed in C
# (supervisor/sums.h), by the converter as it writes them, else by
# native.table_sums (one scan of each table, no join).
TableSums = tuple[list[Any], list[Any]]


def db_file(db: sqlite3.Connection) -> str:
    row = db.execute("PRAGMA database_list").fetchone()
    if row is None or not row[2]:
        raise TraceDamage("the trace is not a file (its checksum is read from the file)")
    return row[2]


def content_sum(db: sqlite3.Connection, sums: TableSums | None = None) -> str:
    """The checksum of everything replay enforces: the events' order, kinds,
    objects, results and aux values, the input data, the piped stdin, the
    threads and processes, the meta values and outcome replay uses. `sums`:
    the lanes of event_rows and calls as their writer summed them (the
    converter's); else they are read from db's (committed) file."""
    from . import native  # (gdb's Python imports this module: ctypes only when a sum is made)

    h = hashlib.sha256()
    if sums is None:
        sums = native.table_sums(db_file(db))

    def blob_sum(sql: str) -> list[Any]:
        # each row's checksums start from its key (and type), so bytes moved
        # to another row change the sum
        def row(k: Any, b: Any) -> int:
            key = f"{k}:{type(b).__name__}:".encode()
            data = b if isinstance(b, bytes) else str(b).encode()
            return zlib.crc32(data, zlib.crc32(key)) + (zlib.adler32(data, zlib.adler32(key)) << 32)

        rows = db.execute(sql).fetchall()
        return [len(rows), sum(row(k, b) for k, b in rows)]

    meta = {k: v for k, v in db.execute("SELECT key, value FROM meta") if k in SEALED_META}
    out = db.execute(f"SELECT {', '.join(SEALED_OUTCOME)} FROM outcome").fetchall()
    parts = [
        sorted(meta.items()),
        [list(r) for r in out],
        list(sums[0]),
        list(sums[1]),
        blob_sum("SELECT seq, bytes FROM data"),
        blob_sum("SELECT chunk, bytes FROM stdin"),
        [list(r) for r in db.execute("SELECT tid, parent, create_seq, obj, events, end_state, process "
                                     "FROM threads ORDER BY tid")],
        [list(r) for r in db.execute("SELECT process, parent, pid, create_seq, thread, status "
                                     "FROM processes ORDER BY process")],
        [list(r) for r in db.execute("SELECT obj, kind FROM objects ORDER BY obj")],
    ]
    h.update(json.dumps(parts, default=repr).encode())
    return h.hexdigest()


def sums_with(db: sqlite3.Connection, rows_sum: list[Any] | None) -> TableSums | None:
    """The checksum's table lanes, event_rows' from a scan already made."""
    from . import native

    return None if rows_sum is None else (rows_sum, native.table_sums(db_file(db), events=False)[1])


def seal(db: sqlite3.Connection, sums: TableSums | None = None) -> None:
    """Store the content checksum (det's own writers call this after they
    wrote or changed a complete trace; the converter's `sums` spare a scan,
    and it made the packed schedule with the rows). Without them the rows
    may be new: the packed schedule is made again from them, in the scan
    that sums them (a trace made before it existed goes on without one)."""
    from . import native

    db.commit()  # (the lanes are read from the file)
    if sums is None and db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schedule'"
                                   ).fetchone() is not None:
        sums = sums_with(db, native.schedule_build(db_file(db)))
    with db:
        db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('content_sum', ?)", (content_sum(db, sums),))


# ---------------------------------------------------------------- traces known to be valid


def _cache_file() -> Path | None:
    return user_cache("valid-traces")


def file_identity(path: Path) -> str | None:
    """The file's bytes, hashed (native.file_identity: every byte and the
    length, 256 bits, at memory speed, where SHA-256 cost a replay of a 60 MB
    trace 0.1 s; not cryptographic, and need not be: supervisor/identity.c says
    why); None while it is being written (its WAL holds part of it) or when
    it cannot be read."""
    from . import native  # (ctypes only here: gdb's Python imports this module)

    if Path(str(path) + "-wal").exists():
        return None
    try:
        return "i1:" + native.file_identity(path)
    except (OSError, DetError):
        return None


def known_valid() -> set[str]:
    """The identities of the trace files known to be valid (remember)."""
    f = _cache_file()
    if f is None:
        return set()
    try:
        return set(f.read_text().split())
    except (OSError, UnicodeDecodeError):
        return set()


def remember(path: str | os.PathLike[str]) -> None:
    """This version of the file is valid (det wrote it, or it passed)."""
    ident = file_identity(Path(path))
    f = _cache_file()
    if ident is None or f is None:
        return
    try:
        f.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        lines = f.read_text().split() if f.exists() and f.stat().st_size > 64 << 10 else None
        if lines is not None:  # keep it small (1000 traces): the newest half
            tmp = f.with_name(f.name + f".{os.getpid()}")
            tmp.write_text("\n".join(lines[len(lines) // 2:]) + "\n")
            os.replace(tmp, f)
        fd = os.open(f, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (ident + "\n").encode())
        finally:
            os.close(fd)
    except (OSError, UnicodeDecodeError):
        pass  # no cache: every open validates in full
