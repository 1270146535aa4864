"""Kept objects: copies of what a recording ran (its program, shared
libraries and loader), kept beside its trace so that a system update
(a new libc, a rebuilt library at the same path) does not stop the trace
replaying.

Rules of this file (standard library only):
  - A trace's objects live in `.det-objects/` in the trace's directory, one
    file per content, named by its SHA-256: traces in one directory share
    them, and a trace names them by the hashes it already holds (meta
    binary_sha256 and libraries, which its seal covers); the trace itself
    is not changed.
  - The directory is the user's, mode 0700; each object is the user's,
    mode 0600, written under a temporary name and renamed into place.
    An object is a reflink of the recorded file where the file system can
    make one (FICLONE: its blocks shared, no data copied), else a copy;
    never a hard link: the kernel refuses to link another user's file
    (fs.protected_hardlinks), the link would be that user's, and a write in
    place to the original (cp over it) would change the kept content.
  - A file whose content is no longer what the recording hashed is not
    kept (it changed between the recording and now).
  - An object is used only when it is a regular file of the user's (or the
    trace's owner's) that no one else may write, in such a directory; its
    content is checked against its name as it is read (read_object), so
    nothing but the bytes the trace's hashes name is ever shown to a program.
  - Keeping is the default; `detrec --no-keep-libs` or DET_KEEP_LIBS=0 opts
    out. `detrec rm` removes the objects no trace left in the directory
    names (prune), and the store once it is empty. Keeping and pruning hold
    the store's lock (flock on the directory), so a prune never removes what
    a recording that just ended is keeping.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import sqlite3
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import DetError
from .tracefile import read_only

OBJECTS_DIR = ".det-objects"
KEEP_ENV = "DET_KEEP_LIBS"
FICLONE = 0x40049409  # _IOW(0x94, 9, int)
CHUNK = 1 << 20
SHA256_NAME = re.compile("[0-9a-f]{64}")


def objects_dir(trace: str | os.PathLike[str]) -> Path:
    return Path(os.path.abspath(trace)).parent / OBJECTS_DIR


def recorded_objects(meta: dict[str, Any]) -> list[tuple[str, str]]:
    """(path, sha256) of what the recording ran: the program, then every
    library it loaded (the loader among them; det's own libdet.so is not
    there: the replaying det brings its own)."""
    out: list[tuple[str, str]] = []
    if meta.get("binary") and meta.get("binary_sha256"):
        out.append((str(meta["binary"]), str(meta["binary_sha256"])))
    for path, digest in meta.get("libraries") or []:
        out.append((str(path), str(digest)))
    # (a name in the store is a hash, never a path: a trace naming anything else names no object)
    return [(p, d) for p, d in out if SHA256_NAME.fullmatch(d)]


def trace_objects(trace: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """recorded_objects of the trace at `trace`, from its meta rows alone:
    a trace the recording just wrote, or one `detrec rm` weighs, need not
    be valid to name what it ran (a damaged one is refused by replay)."""
    db = read_only(trace)
    try:
        rows = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('binary', 'binary_sha256', 'libraries')"))
    except sqlite3.Error as e:
        raise DetError(f"{trace}: cannot read its meta ({e})") from None
    finally:
        db.close()
    try:
        libs = json.loads(rows.get("libraries") or "[]")
    except ValueError:
        raise DetError(f"{trace}: its meta libraries are damaged") from None
    return recorded_objects({**rows, "libraries": libs})


def _private(st: os.stat_result, owners: set[int], dir_mode: bool) -> bool:
    if st.st_uid not in owners:
        return False
    if dir_mode:
        return stat.S_ISDIR(st.st_mode) and not st.st_mode & 0o077
    return stat.S_ISREG(st.st_mode) and not st.st_mode & 0o022


@dataclass
class KeepReport:
    """What keeping a trace's objects did."""

    objects: int = 0          # distinct contents the trace needs, kept
    added: int = 0            # of them, new in the store
    added_bytes: int = 0      # what the new ones take (before any reflink sharing)
    reflinked: int = 0        # of the new ones, made without copying data
    not_kept: list[str] = field(default_factory=list)  # "path: why"


def keep(trace: str | os.PathLike[str]) -> KeepReport:
    """Keep what the recording of `trace` ran in its directory's store."""
    rep = KeepReport()
    ran = trace_objects(trace)
    d = objects_dir(trace)
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        pass
    except OSError as e:
        raise DetError(f"{d}: cannot make it ({e.strerror})") from None
    try:
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise DetError(f"{d}: {e.strerror}") from None
    try:
        if not _private(os.fstat(fd), {os.geteuid()}, True):
            raise DetError(f"{d} is not a directory of yours that only you may use (mode 0700): nothing kept there")
        fcntl.flock(fd, fcntl.LOCK_EX)
        _keep(d, ran, rep)
    finally:
        os.close(fd)
    return rep


def _keep(d: Path, ran: list[tuple[str, str]], rep: KeepReport) -> None:
    seen: set[str] = set()
    for path, digest in ran:
        if digest in seen:
            continue
        seen.add(digest)
        target = d / digest
        try:
            if _private(os.lstat(target), {os.geteuid()}, False):
                rep.objects += 1
                continue
            os.unlink(target)  # not one this user could have made: made again
        except FileNotFoundError:
            pass
        try:
            size, cloned = _copy_checked(path, d, digest)
        except _Changed:
            rep.not_kept.append(f"{path}: changed since the recording loaded it")
            continue
        except OSError as e:
            rep.not_kept.append(f"{path}: {e.strerror}")
            continue
        rep.objects += 1
        rep.added += 1
        rep.added_bytes += size
        rep.reflinked += cloned


class _Changed(Exception):
    pass


def _copy_checked(src: str, d: Path, digest: str) -> tuple[int, bool]:
    """Put src's content into d as `digest`, if it is that content: (its
    size, whether it is a reflink)."""
    tmp = d / f".{digest}.{os.getpid()}"
    fd_in = os.open(src, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fd_out = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            h = hashlib.sha256()
            size = 0
            try:
                fcntl.ioctl(fd_out, FICLONE, fd_in)
                cloned = True
                with os.fdopen(os.dup(fd_out), "rb") as f:
                    for chunk in iter(lambda: f.read(CHUNK), b""):
                        h.update(chunk)
                        size += len(chunk)
            except OSError:  # (EOPNOTSUPP, EXDEV, EINVAL: the file system cannot share blocks)
                cloned = False
                with os.fdopen(os.dup(fd_in), "rb") as f, os.fdopen(os.dup(fd_out), "wb") as out:
                    for chunk in iter(lambda: f.read(CHUNK), b""):
                        h.update(chunk)
                        out.write(chunk)
                        size += len(chunk)
        finally:
            os.close(fd_out)
        if h.hexdigest() != digest:
            raise _Changed
        os.rename(tmp, d / digest)
        return size, cloned
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    finally:
        os.close(fd_in)


def kept_object(trace: str | os.PathLike[str], digest: str) -> str | None:
    """The kept copy of `digest` for `trace`, if there is one it may use."""
    if not SHA256_NAME.fullmatch(digest):
        return None
    d = objects_dir(trace)
    try:
        owners = {os.geteuid(), os.stat(trace).st_uid}
        if not _private(os.lstat(d), owners, True):
            return None
        path = d / digest
        return str(path) if _private(os.lstat(path), owners, False) else None
    except OSError:
        return None


def read_object(path: str, digest: str) -> Iterator[bytes]:
    """A kept object's content, chunk by chunk, checked against its name."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            h.update(chunk)
            yield chunk
    if h.hexdigest() != digest:
        raise DetError(f"{path}: its content does not match its name (SHA-256): the kept copy is damaged")


def prune(d: str | os.PathLike[str]) -> int:
    """Remove the objects in d's store that no det trace in d names (all of
    them, and the store, when d holds none); returns how many. A trace that
    cannot be read keeps every object (it may need any of them)."""
    from .outpath import is_det_trace_file

    store = Path(d) / OBJECTS_DIR
    try:
        fd = os.open(store, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        if not _private(os.fstat(fd), {os.geteuid()}, True):
            return 0
        fcntl.flock(fd, fcntl.LOCK_EX)
        needed: set[str] = set()
        for p in Path(d).iterdir():
            if p.name.startswith(".") or not p.is_file() or not is_det_trace_file(p):
                continue
            try:
                needed.update(digest for _path, digest in trace_objects(p))
            except DetError:
                return 0
        removed = 0
        for obj in store.iterdir():
            if obj.name not in needed:
                obj.unlink()
                removed += 1
        if not needed:
            store.rmdir()
        return removed
    finally:
        os.close(fd)


def keep_wanted(opt_out: bool) -> bool:
    """Keep unless the user opted out (--no-keep-libs, or DET_KEEP_LIBS=0)."""
    return not opt_out and os.environ.get(KEEP_ENV, "1") not in ("0", "no", "false", "off")
