"""How det opens, writes and locks trace files, so that nothing beside a
trace can change it.

Rules of this file (standard library only: gdb's Python imports it):
  - Readers open a trace immutable (SQLite's immutable=1, read_only()):
    SQLite then reads the file alone, takes no lock, never looks at a
    journal or WAL beside it and never writes one (no -shm either). A hot
    journal another user planted beside a trace is never rolled into it.
  - A -journal, -wal or -shm beside a trace is refused (check_side_files):
    one that the trace's owner did not write is somebody's attempt to
    change it; one the owner wrote means a change to the trace was cut
    short, which an immutable reader would not see.
  - Writers write SQLite files only inside a private work directory
    (WorkDir: mode 0700, made beside the destination) and rename the
    finished file into place: SQLite's own side files then live where no
    other user can create a file.
  - One writer per trace name: NAME.lock holds a POSIX lock for the whole
    write (TraceLock); a second writer is refused in one line, and readers
    that would read the files of a write in progress (the capture log,
    NAME.incomplete) ask the kernel who holds it (being_written) and stop.
"""

from __future__ import annotations

import fcntl
import glob
import os
import pwd
import shutil
import sqlite3
import stat
import struct
import tempfile
from pathlib import Path
from urllib.parse import quote

from .errors import DetError

INCOMPLETE = ".incomplete"
LOG_SUFFIX = ".log"
SQLITE_SIDE = ("-journal", "-wal", "-shm")
LOCK_SUFFIX = ".lock"
WORK_SUFFIX = ".det"


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


# ---------------------------------------------------------------- reading


def read_only(path: str | os.PathLike[str], check_same_thread: bool = True) -> sqlite3.Connection:
    """An immutable, read-only connection to the SQLite file at path."""
    return sqlite3.connect(f"file:{quote(os.path.abspath(path))}?immutable=1", uri=True,
                           check_same_thread=check_same_thread)


def check_side_files(path: Path, owner: int) -> None:
    """Refuse (DetError) a trace with a SQLite journal, WAL or shared-memory
    file beside it: one `owner` (the trace's owner) did not write may be
    an attempt to change the trace; one the owner wrote, a change cut short."""
    for suffix in SQLITE_SIDE:
        side = Path(str(path) + suffix)
        try:
            st = os.lstat(side)
        except FileNotFoundError:
            continue
        except OSError as e:
            raise DetError(f"{path}: cannot check {side.name} beside it ({e.strerror})") from None
        if not stat.S_ISREG(st.st_mode):
            raise DetError(f"{path}: {side.name} beside it is not a file (a link or other planted name); "
                           "det reads only traces nothing else can change: remove it if you know it")
        if st.st_uid != owner:
            raise DetError(f"{path}: {side.name} beside it belongs to {user_name(st.st_uid)}, not to the "
                           f"trace's owner {user_name(owner)}: it could change the trace when SQLite opens "
                           "it; refusing to read it (remove that file if you know it)")
        if st.st_size:
            raise DetError(f"{path}: {side.name} beside it holds a change to the trace that was cut short; "
                           "det reads only whole traces (move both files away and re-record, or remove "
                           f"{side.name} if the change does not matter)")


# ---------------------------------------------------------------- one writer per trace name


def trace_name(path: str | os.PathLike[str]) -> Path:
    """The trace a path belongs to: NAME for NAME, NAME.incomplete and
    NAME.incomplete.log."""
    p = Path(path)
    name = p.name
    for suffix in (INCOMPLETE + LOG_SUFFIX, INCOMPLETE):
        if name.endswith(suffix) and len(name) > len(suffix):
            return p.with_name(name[: -len(suffix)])
    return p


def lock_path(path: str | os.PathLike[str]) -> Path:
    p = trace_name(path)
    return p.with_name(p.name + LOCK_SUFFIX)


_FLOCK = "hhqqi4x"  # struct flock on x86-64 Linux: type, whence, start, len, pid


def _holder(fd: int) -> int | None:
    """The pid holding a write lock on the open file fd, or None (F_GETLK
    tests without taking a lock, so a reader never blocks a writer)."""
    req = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
    typ, _, _, _, pid = struct.unpack(_FLOCK, fcntl.fcntl(fd, fcntl.F_GETLK, req))
    return None if typ == fcntl.F_UNLCK else pid


def being_written(path: str | os.PathLike[str]) -> str | None:
    """'pid N (TOOL)' when a det process is writing the trace `path` belongs
    to, else None."""
    lock = lock_path(path)
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return _holder_said(fd)
    finally:
        os.close(fd)


def _holder_said(fd: int) -> str | None:
    """'pid N (TOOL)' for the holder of the lock file open at fd, or None
    when nobody holds it."""
    try:
        pid = _holder(fd)
        if pid is None:
            return None
        said = os.pread(fd, 200, 0).decode(errors="replace").split()
        tool = said[1] if len(said) > 1 and said[0] == str(pid) else "det"
        return f"pid {pid} ({tool})"
    except OSError:
        return None


def check_not_being_written(path: str | os.PathLike[str]) -> None:
    """Refuse (DetError) to read the files of a recording still being made."""
    who = being_written(path)
    if who is not None:
        raise DetError(f"{trace_name(path)} is being recorded by {who}: what it has written so far is not a "
                       "trace yet; wait for it to end (or stop it), then read it", status=2)


_HELD: dict[str, int] = {}  # lock file -> fd, of the locks this process holds (POSIX locks are per process)


class TraceLock:
    """The exclusive right to write the trace `path` (NAME.lock beside it),
    from acquire() until release(); a second writer is refused in one line.
    The file goes when the lock is released (a killed holder leaves it
    unlocked; the next writer takes it over)."""

    def __init__(self, path: str | os.PathLike[str], tool: str = "detrec") -> None:
        self.trace = trace_name(path)
        self.path = lock_path(path)
        self.tool = tool
        self.fd = -1
        self.nested = False

    def acquire(self) -> TraceLock:
        key = os.path.abspath(self.path)
        if key in _HELD:  # this process holds it already (detrec --pack packs what it recorded)
            self.nested = True
            return self
        self._take()
        _HELD[key] = self.fd
        return self

    def _take(self) -> None:
        for _ in range(100):  # (only when a holder removes the file between our open and our lock)
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
            except OSError as e:
                raise DetError(f"{self.trace}: cannot take {self.path.name} ({e.strerror}): another user's file "
                               "there, or a directory det cannot write in; choose another name", status=2) from None
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                os.close(fd)
                raise DetError(f"{self.trace}: {self.path.name} beside it belongs to {user_name(st.st_uid)}: "
                               "another user is writing this name, or planted it; choose another name", status=2)
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                who = _holder_said(fd)
                os.close(fd)
                if who is None:
                    continue  # its holder let go between our lockf and our look: try again
                raise DetError(f"{self.trace} is being written by {who}; wait for it to end, or choose another "
                               "name", status=2) from None
            try:
                now = os.stat(self.path, follow_symlinks=False)
            except FileNotFoundError:
                now = None
            if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
                os.close(fd)  # its holder removed it meanwhile: take the name's new lock
                continue
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()} {self.tool}\n".encode(), 0)
            self.fd = fd
            remove_stale_work(self.trace)
            return
        raise DetError(f"{self.trace}: cannot take {self.path.name}: it keeps being replaced", status=2)

    def release(self) -> None:
        if self.nested or self.fd < 0:
            return
        _HELD.pop(os.path.abspath(self.path), None)
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(self.fd)
        self.fd = -1

    def __enter__(self) -> TraceLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


# ---------------------------------------------------------------- writing


def is_work_dir(name: str) -> bool:
    """Is this a name WorkDir gives its directories?"""
    return name.startswith(".") and name.endswith(WORK_SUFFIX)


def _work_glob(dest: Path, pid: int | None = None) -> str:
    who = str(pid) if pid is not None else "*"
    return str(dest.parent / f".{glob.escape(dest.name)}.{who}.*{WORK_SUFFIX}")


class WorkDir:
    """A private directory (mode 0700, this user's) beside `dest`, where a
    writer makes its SQLite files; publish() renames one into place."""

    def __init__(self, dest: Path) -> None:
        try:
            self.path = Path(tempfile.mkdtemp(prefix=f".{dest.name}.{os.getpid()}.", suffix=WORK_SUFFIX,
                                              dir=dest.parent if str(dest.parent) else "."))
        except OSError as e:
            raise DetError(f"cannot write in {dest.parent}: {e.strerror}", status=2) from None

    def file(self, name: str) -> Path:
        return self.path / name

    def publish(self, file: Path, dest: Path) -> Path:
        os.replace(file, dest)
        return dest

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def remove_stale_work(dest: Path, pid: int | None = None) -> None:
    """Work directories a killed writer of dest left (pid: only that
    process's). Called under dest's lock, or by det's watchdog for the
    detrec it watched: no live writer uses them."""
    me = os.geteuid()
    for d in glob.glob(_work_glob(dest, pid)):
        try:
            st = os.lstat(d)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == me:
            shutil.rmtree(d, ignore_errors=True)


def private_dir(path: Path, what: str) -> Path:
    """The directory at path, made if missing, refused (DetError) unless it
    is this user's own real directory; made private (mode 0700)."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(path)
    except OSError as e:
        raise DetError(f"{path}: cannot make the directory for the {what} ({e.strerror})", status=2) from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        why = f"belongs to {user_name(st.st_uid)}" if stat.S_ISDIR(st.st_mode) else "is not a directory"
        raise DetError(f"{path}: {why}; refusing to use it for the {what}", status=2)
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)
    return path
