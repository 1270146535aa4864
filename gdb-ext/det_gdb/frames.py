"""Which frames are the program's, det's or a system library's, and where a
thread is in the program's code.

Rules of this file:
  - As every det_gdb module: no inferior function calls, standard library
    only; frames are classified by the file gdb says their pc is in.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import gdb

LIBDET = "libdet.so"
# Frames of the thread library below which a det frame is not "user code".
THREAD_ENTRY = {"start_thread", "clone", "clone3", "__clone", "__clone3"}


# Where the system's shared libraries live: their frames are neither det's
# nor the program's own code (libc's abort, libstdc++'s thread entry).
SYSTEM_DIRS = ("/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/libexec/")


def frame_kind(f: gdb.Frame) -> str:
    """"det" (libdet.so), "system" (a system library, the vDSO) or "program"."""
    try:
        pc = f.pc()
        name = f.name() or ""
    except gdb.error:
        return "system"
    return pc_kind(pc, name)


def pc_kind(pc: int, name: str = "") -> str:
    """frame_kind() of code at pc (in the function called name)."""
    try:
        path = gdb.solib_name(pc)
    except gdb.error:
        return "system"
    if path is None:
        # The executable itself, or the vDSO (no file either).
        return "system" if name.startswith("__vdso_") else "program"
    if os.path.basename(path) == LIBDET:
        return "det"
    return "system" if path.startswith(SYSTEM_DIRS) or "linux-vdso" in path else "program"


def in_det(f: gdb.Frame) -> bool:
    return frame_kind(f) == "det"


def in_user(f: gdb.Frame) -> bool:
    return not in_det(f) and (f.name() or "") not in THREAD_ENTRY


def det_caller_frame(limit: int = 64) -> gdb.Frame | None:
    """The frame that called into det (the first frame above det's frames), or None."""
    try:
        f = gdb.newest_frame()
    except gdb.error:
        return None
    seen_det = False
    for _ in range(limit):
        if f is None:
            return None
        if in_det(f):
            seen_det = True
        elif seen_det:
            return f
        f = f.older()
    return None


def user_frame(limit: int = 256) -> gdb.Frame | None:
    """The selected thread's innermost frame in the program's own code.

    Not det's frames, not a system library's (abort, raise): the line of the
    program a thread is at. A thread that has none yet (about to run its start
    routine, at its thread_start event) gets det's thread entry, the frame
    that calls the start routine."""
    try:
        f = gdb.newest_frame()
    except gdb.error:
        return None
    outer_det = None
    for _ in range(limit):
        if f is None:
            break
        kind = frame_kind(f)
        if kind == "program":
            return f
        if kind == "det":
            outer_det = f
        f = f.older()
    return outer_det or gdb.newest_frame()


def where(f: gdb.Frame | None) -> str:
    if f is None:
        return ""
    sal = f.find_sal()
    name = f.name() or "??"
    if sal.symtab is not None and sal.line:
        return f"{name} at {os.path.basename(sal.symtab.filename)}:{sal.line}"
    return name


@contextmanager
def on_thread(th: gdb.InferiorThread) -> Iterator[None]:
    """Run a block with th selected; the user's thread and frame come back after."""
    cur = gdb.selected_thread()
    try:
        frame = gdb.selected_frame()
    except gdb.error:
        frame = None
    try:
        th.switch()
        yield
    finally:
        cur.switch()
        if frame is not None and frame.is_valid():
            frame.select()


def thread_where(th: gdb.InferiorThread) -> str:
    """The program-code frame of another thread."""
    try:
        with on_thread(th):
            return where(user_frame())
    except gdb.error:
        return ""
