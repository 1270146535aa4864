"""What the replayed program sees of the file system: a packed trace's files
at their recorded paths, or a check of the host's files against the recording.

Rules:
  - A packed trace (`detrec pack`) replays in a private mount namespace
    (with a user namespace when not root: Linux allows both unprivileged):
    a tmpfs root that mirrors the host's / entry by entry through bind
    mounts, except along the packed paths, where the directories are the
    tmpfs's own and hold the packed files (unpacked, their SHA-256 checked,
    with their recorded mode and mtime) and symlinks. The program is
    chroot'ed there, so open(), exec, /proc/self/exe and the loader all
    find the recorded files at the recorded paths, and everything else
    (/proc, /dev, /tmp, the user's files) is the host's. The namespace is
    detreplay's own: nothing is mounted on the host.
  - A trace that is not packed replays the same way when a file the
    recording ran (its program, a library, the loader) differs here and
    its copy is kept beside the trace (det.objects): the view then shows
    the kept copies (their SHA-256 checked as they are copied in) at the
    host's paths of those files, and everything else as the host has it.
    The user asked for it by replaying their trace; --host-files does not.
  - detreplay enters the namespaces itself, before it starts any thread
    (unshare needs a single-threaded process), and only the program (or
    gdb's exec wrapper) chroots.
  - Whatever is missing is said in one line: namespaces (a kernel feature
    or a sysctl), a file not packed.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import signal
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from det import machine
from det.errors import DetError
from det.objects import kept_object, objects_dir, read_object, recorded_objects
from det.record.pack import read_blob, walk
from det.trace import Trace
from det.trust import sha256_file

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
PR_SET_DUMPABLE = 4
PR_SET_PDEATHSIG = 1
SYS_CAPGET = 125
SYS_CAPSET = 126
CAP_SYS_CHROOT = 18
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_RAISE = 2

_libc = ctypes.CDLL(None, use_errno=True)


def _check(r: int, what: str) -> None:
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")


def _mount(src: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: None if s is None else os.fsencode(s)  # noqa: E731
    _check(_libc.mount(enc(src), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {src or fstype} on {target}")


def is_packed(tr: Trace) -> bool:
    return bool(tr.q1("SELECT count(*) FROM sqlite_master WHERE name = 'packed'")) and \
        bool(tr.q1("SELECT count(*) FROM packed"))


def enter_namespaces() -> bool:
    """A mount namespace of this process's own, whose mounts never show up
    outside it; with a user namespace when not root (returns whether it is
    one this process is not root in)."""
    uid, gid = os.getuid(), os.getgid()
    if uid == 0:
        _unshare(CLONE_NEWNS, "a mount namespace")
        try:
            _mount(None, "/", None, MS_REC | MS_PRIVATE)
        except OSError as e:
            # EINVAL: a chroot whose root is not a mount point. The mount that
            # holds it may be shared with the outside, and from here its
            # propagation can be neither seen nor changed (nor can a user
            # namespace be made in a chroot, which would make it a slave).
            why = ("this process's root is not a mount point (a chroot?), so what a packed trace mounts could show "
                   "up outside it: make the root a mount point (mount --bind ROOT ROOT) before chroot'ing"
                   if e.errno == errno.EINVAL else f"cannot make this process's mounts private ({e})")
            raise DetError(f"{why}; or use --host-files", status=2) from None
        return False
    _unshare(CLONE_NEWUSER | CLONE_NEWNS, "unprivileged user and mount namespaces")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    try:
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
    except OSError as e:
        raise DetError(f"cannot make this process's mounts private ({e}); or use --host-files", status=2) from None
    return True


def _unshare(flags: int, what: str) -> None:
    if _libc.unshare(flags) != 0:
        e = ctypes.get_errno()
        hint = "" if os.getuid() == 0 else (" (kernel.unprivileged_userns_clone or user.max_user_namespaces may "
                                            "forbid them, and Linux does in a chroot; or run detreplay as root)")
        raise DetError(f"a packed trace (or one replaying kept copies) replays in a private mount namespace, "
                       f"and this system refused {what}: "
                       f"{os.strerror(e)}{hint}; --host-files replays with this machine's files instead", status=2)


def _drop_capabilities() -> None:
    """capset(2): none left, in any set."""
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()
    _check(_libc.syscall(SYS_CAPSET, header, data), "capset")


@dataclass
class Packed:
    path: str
    type: str
    mode: int
    mtime_ns: int
    sha256: str | None
    target: str | None
    kept: str | None = None  # a file: its kept copy (det.objects), else its content is in blobs


class PackedView:
    """The packed files at their recorded paths, under `root`, for a chroot
    (or the kept copies `entries` names)."""

    def __init__(self, tr: Trace, entries: dict[str, Packed] | None = None) -> None:
        self.entries = entries if entries is not None else {r[0]: Packed(*r) for r in tr.q(
            "SELECT path, type, mode, mtime_ns, sha256, target FROM packed ORDER BY path")}
        self.kept = [e.path for e in self.entries.values() if e.kept]
        self.db = tr.db
        self.root = ""
        self.mounts = 0
        self.userns = False
        self.unseen: list[str] = []  # host entries the program cannot see in the view
        self.holder: tuple[int, int] | None = None  # (pid, pipe fd)

    def build(self) -> None:
        self.userns = enter_namespaces()
        self.root = tempfile.mkdtemp(prefix="detreplay-root-")
        try:
            _mount("tmpfs", self.root, "tmpfs", 0, "mode=0755")
            tree: dict = {}
            for path in self.entries:
                node = tree
                for part in path.strip("/").split("/"):
                    node = node.setdefault(part, {})
            self._mirror("/", self.root, tree, "/")
            # the view's /tmp (bound from the host's) holds this very root again: hide it
            inner = os.path.join(self.root, self.root.lstrip("/"))
            if os.path.ismount(inner):
                _libc.umount2(os.fsencode(inner), MNT_DETACH)
        except OSError as e:
            self.close()
            raise DetError(f"cannot show the packed files to the program: {e}", status=2) from None

    def _mirror(self, host: str | None, view: str, node: dict, vpath: str) -> None:
        if host is not None:
            try:
                names = sorted(os.listdir(host))
            except OSError as e:  # (a directory this user may not list: the program sees only the packed files)
                self.unseen.append(f"{host} ({e.strerror})")
                names = []
            for name in names:
                if name not in node:
                    self._bind(os.path.join(host, name), os.path.join(view, name))
        for name, sub in node.items():
            here, there = os.path.join(vpath, name), os.path.join(view, name)
            e = self.entries.get(here)
            if e is not None and e.type == "file":
                with open(there, "wb") as f:
                    for chunk in (read_object(e.kept, e.sha256 or "") if e.kept
                                  else read_blob(self.db, e.sha256 or "")):
                        f.write(chunk)
                os.chmod(there, e.mode)
                os.utime(there, ns=(e.mtime_ns, e.mtime_ns))
            elif e is not None and e.type == "symlink":
                os.symlink(e.target or "", there)
            else:
                h = os.path.join(host, name) if host is not None else None
                if h is not None and (os.path.islink(h) or not os.path.isdir(h)):
                    h = None  # the recording had a directory here; this machine has something else
                os.mkdir(there, e.mode if e is not None else (stat.S_IMODE(os.stat(h).st_mode) if h else 0o755))
                self._mirror(h, there, sub, here)
                if e is not None and e.mtime_ns:
                    os.utime(there, ns=(e.mtime_ns, e.mtime_ns))

    def _bind(self, src: str, dst: str) -> None:
        """Show the host's src at dst; what cannot be shown is noted, not fatal."""
        try:
            st = os.lstat(src)
            if stat.S_ISLNK(st.st_mode):
                os.symlink(os.readlink(src), dst)
                return
            if stat.S_ISDIR(st.st_mode):
                os.mkdir(dst)
            else:
                os.close(os.open(dst, os.O_CREAT | os.O_WRONLY, 0o600))
            _mount(src, dst, None, MS_BIND | MS_REC)
            self.mounts += 1
        except OSError as e:
            self.unseen.append(f"{src} ({e.strerror})")

    def shm_holder(self, shm_fd: int) -> int | None:
        """The pid the program should open det's shared memory through, when
        not this process's. In a user namespace this process has every
        capability there, and the kernel lets a process open another's
        /proc/PID/fd only if it has at least the other's capabilities: so a
        child that dropped all of them holds the region (an inherited copy
        of shm_fd) for the program, until this process closes the pipe."""
        if not self.userns:
            return None
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the holder
            try:
                os.close(w)
                _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
                _drop_capabilities()
                _check(_libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")
                os.read(r, 1)
            finally:
                os._exit(0)
        os.close(r)
        self.holder = (pid, w)
        return pid

    def keep_chroot_across_exec(self) -> None:
        """In a user namespace, let the programs this process starts (gdb, its
        exec wrapper) keep the one capability chroot needs (an ambient one),
        though they are not root there."""
        if not self.userns:
            return
        header = (ctypes.c_uint32 * 2)(0x20080522, 0)
        data = (ctypes.c_uint32 * 6)()
        _check(_libc.syscall(SYS_CAPGET, header, data), "capget")
        data[2] |= 1 << CAP_SYS_CHROOT  # inheritable, first 32 capabilities
        _check(_libc.syscall(SYS_CAPSET, header, data), "capset")
        _check(_libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_SYS_CHROOT, 0, 0), "prctl(PR_CAP_AMBIENT)")

    def host_path(self, path: str) -> str:
        """Where this process finds what the program sees at `path`."""
        return os.path.join(self.root, path.lstrip("/"))

    def close(self) -> None:
        if self.holder is not None:
            pid, w = self.holder
            os.close(w)
            os.waitpid(pid, 0)
            self.holder = None
        if self.root:
            _libc.umount2(os.fsencode(self.root), MNT_DETACH)
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = ""


def open_view(tr: Trace, host_files: bool) -> PackedView | None:
    """The view a replay of `tr` runs in: None for the host's files."""
    if host_files:
        return None
    entries = None if is_packed(tr) else kept_entries(tr)
    if entries == {}:
        return None
    view = PackedView(tr, entries)
    view.build()
    return view


def kept_entries(tr: Trace) -> dict[str, Packed]:
    """The files the recording ran that differ here (or are gone) and have a
    kept copy, at the path this machine resolves theirs to."""
    if not objects_dir(tr.path).is_dir():
        return {}
    has_files = tr.q1("SELECT count(*) FROM sqlite_master WHERE name = 'files'")
    mtimes = dict(tr.q("SELECT path, mtime_ns FROM files WHERE how != 'opened'")) if has_files else {}
    out: dict[str, Packed] = {}
    for path, digest in recorded_objects(tr.meta):
        try:
            _links, real = walk(path)
        except OSError:
            continue
        try:
            st = os.stat(real)
            if stat.S_ISREG(st.st_mode) and sha256_file(real) == digest:
                continue
            mode = stat.S_IMODE(st.st_mode)
        except OSError:
            mode = 0o755
        obj = kept_object(tr.path, digest)
        if obj is not None and real not in out:
            mtime = mtimes.get(path) or os.stat(obj).st_mtime_ns
            out[real] = Packed(real, "file", mode, mtime, digest, None, obj)
    return out


def host_differences(tr: Trace, view: PackedView | None) -> list[str]:
    """One line each for what this machine lacks for the replay: CPU features,
    and the program's files that are gone or differ (the ones not packed)."""
    lines = [f"note: {d}" for d in machine.differences(tr.meta)
             if "lacks features" in d or tr.meta.get("host") not in (None, os.uname().nodename)]
    if view is not None and view.kept:
        lines.append(f"note: what the recording ran differs here or is gone ({_few(view.kept)}): replaying the "
                     f"copies kept in {objects_dir(tr.path)}")
    if view is not None and view.unseen:
        lines.append(f"note: the replay cannot show the program these files of this machine: {_few(view.unseen)}")
    has_files = tr.q1("SELECT count(*) FROM sqlite_master WHERE name = 'files'")
    rows = tr.q("SELECT path, how, size, mtime_ns FROM files WHERE cut = 0") if has_files else []
    gone, changed = [], []
    for path, how, size, mtime_ns in rows:
        if view is not None and _in_view(view, path):
            continue
        if Path(path).name == "libdet.so":
            continue
        try:
            st = os.stat(path)
        except OSError:
            gone.append(path)
            continue
        if how != "opened" and (st.st_size, st.st_mtime_ns) != (size, mtime_ns):
            changed.append(path)
    if gone or changed:
        parts = ([f"gone here: {_few(gone)}"] if gone else []) + ([f"changed: {_few(changed)}"] if changed else [])
        where = "not packed, and " if view is not None and not view.kept else ""
        hint = ("" if view is not None and not view.kept else "; the trace carries them: replay without --host-files"
                if is_packed(tr) else "; `detrec pack` on the recording machine carries them with the trace")
        lines.append(f"warning: files the program read are {where}{'; '.join(parts)}{hint}")
    return lines


def _in_view(view: PackedView, path: str) -> bool:
    """Does `path` lead to a packed file in the view?"""
    try:
        _links, real = walk(path, view.root)
    except OSError:
        return False
    e = view.entries.get(real)
    return e is not None and e.type == "file"


def _few(paths: list[str]) -> str:
    return ", ".join(paths[:4]) + (f" and {len(paths) - 4} more" if len(paths) > 4 else "")
