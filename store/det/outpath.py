"""Where det may write: the one check every tool makes before it writes a file.

Rules: a tool calls check_trace_output() (a trace it will create or replace)
or check_output_dir() (a directory it will fill) for every path it writes,
before it starts any program, and refuses in one line (a DetError) when the
path is not safe to write. A path is safe when nothing is there, or when it
is a det trace (which may be replaced: the tools' --help says so). Anything
else (a device such as /dev/null, a directory, a symbolic link, the program
being recorded, any other file) is never touched. Standard library only.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import DetError
from .tracefile import is_work_dir

SQLITE_MAGIC = b"SQLite format 3\x00"
APPLICATION_ID = 0x64657431  # schema.APPLICATION_ID, read here from the file header without SQLite
WAL_MAGIC = (0x377F0682, 0x377F0683)
# What is kept beside a trace being written (trace.TraceWriter: NAME.incomplete, its
# capture log NAME.incomplete.log, and what SQLite keeps beside a database).
SIDE_FILES = (".incomplete", ".incomplete.log", ".incomplete-journal", ".incomplete-wal", ".incomplete-shm")
LOG_MAGIC = b"DETLOG\r\n"  # recorder/logfmt.h: a capture log's first bytes


def is_det_trace_file(path: str | os.PathLike[str]) -> bool:
    """Does the file begin like a det trace (an SQLite database whose
    application id is det's)? Reads 100 bytes, opens nothing else."""
    try:
        with open(path, "rb") as f:
            head = f.read(100)
    except OSError:
        return False
    return (len(head) >= 72 and head.startswith(SQLITE_MAGIC)
            and int.from_bytes(head[68:72], "big") == APPLICATION_ID)


def file_kind(st: os.stat_result) -> str:
    """What a file is, in words ("a named pipe"), for refusals."""
    m = st.st_mode
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a named pipe"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(m):
            return name
    return "a file"


def _existing(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise DetError(f"{path}: {e.strerror}", status=2) from None


def _same_file(st: os.stat_result, others: list[str]) -> str | None:
    for o in others:
        try:
            ost = os.stat(o)
        except OSError:
            continue
        if (ost.st_dev, ost.st_ino) == (st.st_dev, st.st_ino):
            return o
    return None


def check_trace_output(path: str | os.PathLike[str], program: list[str] | None = None,
                       what: str = "output") -> Path:
    """Refuse (DetError) a trace output path det must not write; returns it.

    `program`: files the run uses (the program itself), named in the refusal
    when the path is one of them. The side files SQLite uses while the trace
    is written (NAME.incomplete, -wal, -shm) are checked too.
    """
    p = Path(path)
    if not p.name or p.name in (".", ".."):
        raise DetError(f"{path}: not a file name for the {what}", status=2)
    parent = p.parent if str(p.parent) else Path(".")
    pst = _existing(parent)
    if pst is None:
        raise DetError(f"{path}: the directory {parent} does not exist", status=2)
    if not stat.S_ISDIR(os.stat(parent).st_mode):
        raise DetError(f"{path}: {parent} is not a directory", status=2)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise DetError(f"{path}: cannot write in {parent} (permission denied)", status=2)
    for candidate in [p] + [p.with_name(p.name + s) for s in SIDE_FILES]:
        st = _existing(candidate)
        if st is None:
            continue
        same = _same_file(st, program or [])
        if same is not None:
            raise DetError(f"{candidate}: is the program being recorded ({same}); "
                           f"refusing to write the {what} over it", status=2)
        if not stat.S_ISREG(st.st_mode):
            raise DetError(f"{candidate}: is {file_kind(st)}, not a det trace; refusing to replace it "
                           f"with the {what}", status=2)
        if candidate.name.endswith("-shm"):
            continue  # SQLite's shared-memory index has no header to check; it goes with its trace
        if candidate.name.endswith("-wal"):
            ok = st.st_size == 0 or _wal(candidate)
        elif candidate.name.endswith(".log"):
            ok = _starts_with(candidate, LOG_MAGIC)
        elif candidate.name.endswith("-journal"):
            ok = True  # SQLite's rollback journal: it goes with its trace
        else:
            ok = st.st_size == 0 and candidate != p or is_det_trace_file(candidate)
        if not ok:
            raise DetError(f"{candidate}: exists and is not a det trace; refusing to replace it with the "
                           f"{what} (remove it, or choose another name with -o)", status=2)
    return p


def _starts_with(path: Path, magic: bytes) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(magic)) == magic
    except OSError:
        return False


def _wal(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError:
        return False
    return len(head) == 4 and int.from_bytes(head, "big") in WAL_MAGIC


def check_output_dir(path: str | os.PathLike[str], what: str, owned_names: tuple[str, ...] = ()) -> Path:
    """Refuse (DetError) a directory det would create or fill, unless it is
    missing, or a real directory (not a link) that holds nothing but det
    traces and files whose names start with one of `owned_names`."""
    p = Path(path)
    st = _existing(p)
    if st is None:
        parent = p.parent if str(p.parent) else Path(".")
        if not os.path.isdir(parent):
            raise DetError(f"{path}: the directory {parent} does not exist", status=2)
        if not os.access(parent, os.W_OK | os.X_OK):
            raise DetError(f"{path}: cannot write in {parent} (permission denied)", status=2)
        return p
    if not stat.S_ISDIR(st.st_mode):
        raise DetError(f"{path}: is {file_kind(st)}, not a directory; refusing to use it for the {what}", status=2)
    if not os.access(p, os.W_OK | os.X_OK):
        raise DetError(f"{path}: cannot write in it (permission denied)", status=2)
    for entry in os.scandir(p):
        if entry.name.startswith(owned_names) and entry.is_file(follow_symlinks=False):
            continue
        if is_work_dir(entry.name) and entry.is_dir(follow_symlinks=False):
            continue  # a killed writer's (det.tracefile.WorkDir)
        if entry.is_file(follow_symlinks=False) and is_det_trace_file(entry.path):
            continue
        raise DetError(f"{path}: holds {entry.name}, which is not det's; refusing to use it for the {what}",
                       status=2)
    return p
