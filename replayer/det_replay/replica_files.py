"""A live replica's own view of the file system: the program it replays
writes the same paths as the program being recorded, at the same time (a
server's log and pid file, a database), and must not touch them. In the
replica's child, before the program starts: a mount namespace of its own
in which every writable file system (the root file system's top-level
directories, each other mount, /dev/shm) is an overlay whose lower layer is
the real one and whose upper layer is a tmpfs of the replica's: the replica
reads what is there and writes only its own copy, which goes when it ends.

Rules of this module:
 - It runs in the forked child (subprocess's preexec): no threads, only
   system calls through ctypes and plain file reads; every failure is a
   mount left shared, never an exception out of the child.
 - What stayed shared is written to a file the parent reads after the
   start (FILES_NOTE), so the replica can say so in one line.
 - Without the right to (not root: no CAP_SYS_ADMIN) nothing changes and
   the note says the whole file system is shared.
"""

from __future__ import annotations

import ctypes
import os

CLONE_NEWNS = 0x00020000
MS_REC, MS_PRIVATE = 0x4000, 0x40000
PSEUDO = {"proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "mqueue", "tracefs", "debugfs",
          "securityfs", "pstore", "bpf", "hugetlbfs", "fusectl", "configfs", "binfmt_misc", "autofs", "efivarfs",
          "rpc_pipefs", "nsfs", "selinuxfs", "ramfs"}
SYSTEM_DIRS = ("/proc", "/sys", "/dev")  # (but /dev/shm: named semaphores and shared memory are files there)
FILES_NOTE = "files.txt"


def _unescape(field: str) -> str:
    """mountinfo's octal escapes (\\040 for a space)."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 3 < len(field) and field[i + 1:i + 4].isdigit():
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def writable_mounts() -> list[str]:
    """Mount points of writable file systems that hold files, shallowest first."""
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, rest = left.split(), right.split()
            if len(fields) < 6 or len(rest) < 1:
                continue
            point, opts, fstype = _unescape(fields[4]), fields[5].split(","), rest[0]
            if "ro" in opts or fstype in PSEUDO:
                continue
            if point != "/dev/shm" and any(point == d or point.startswith(d + "/") for d in SYSTEM_DIRS):
                continue
            found.append(point)
    return sorted(set(found), key=lambda p: (p.count("/") if p != "/" else 0, p))


def _root_dirs() -> list[str]:
    """The root file system's own top-level directories (an overlay cannot
    take / itself: the process's root would stay the old one)."""
    dev = os.stat("/").st_dev
    out = []
    for name in sorted(os.listdir("/")):
        p = "/" + name
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if os.path.isdir(p) and not os.path.islink(p) and st.st_dev == dev and p not in SYSTEM_DIRS:
            out.append(p)
    return out


def private_files(upper: str) -> None:
    """In the replica's child: make every writable file system an overlay
    with its upper layer in a tmpfs mounted on `upper` (an empty directory
    of the replica's), then go back into the working directory through it."""
    libc = ctypes.CDLL(None, use_errno=True)
    shared: list[str] = []
    # (opened before the mounts: the note's directory is overlaid too, after)
    note = os.open(os.path.join(os.path.dirname(upper), FILES_NOTE), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = None
    targets = []
    for point in writable_mounts():
        targets += _root_dirs() if point == "/" else [point]
    if libc.unshare(CLONE_NEWNS) != 0 or libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0 \
            or libc.mount(b"tmpfs", upper.encode(), b"tmpfs", 0, b"mode=0700") != 0:
        _note(note, ["/ (the replica may not make mounts of its own: not root)"])
        return
    # every layer is opened before any overlay covers it
    lowers = {}
    for t in targets:
        try:
            lowers[t] = os.open(t, os.O_PATH | os.O_DIRECTORY)
        except OSError:
            shared.append(t)
    top = os.open(upper, os.O_PATH | os.O_DIRECTORY)
    for i, t in enumerate(t for t in targets if t in lowers):
        try:  # (by descriptor: `upper`'s path may lead into an overlay made already)
            os.mkdir(f"{i}u", dir_fd=top)
            os.mkdir(f"{i}w", dir_fd=top)
        except OSError:
            shared.append(t)
            continue
        opts = (f"lowerdir=/proc/self/fd/{lowers[t]},upperdir=/proc/self/fd/{top}/{i}u,"
                f"workdir=/proc/self/fd/{top}/{i}w").encode()
        if libc.mount(b"overlay", t.encode(), b"overlay", 0, opts) != 0:
            shared.append(t)
    for fd in [*lowers.values(), top]:
        os.close(fd)
    if cwd is not None:
        try:
            os.chdir(cwd)  # (the old directory is the real one: through the overlay now)
        except OSError:
            pass
    _note(note, shared)


def _note(fd: int, shared: list[str]) -> None:
    try:
        os.write(fd, "".join(p + "\n" for p in shared).encode())
    except OSError:
        pass
    os.close(fd)
