"""Trusting a trace before replaying it: a trace is a program to run.

detreplay runs the binary, arguments, environment and working directory a
trace names. Rules of this file:
  - A trace owned by another user is refused unless trusted explicitly
    (--trust, or DET_TRUST=1), as git refuses a repository another user
    owns; the refusal says in one line what the trace would run. So is a
    trace that others could change: one their group or everyone may write,
    or one in a directory another user owns or may write without the
    sticky bit (they could put another file in its place).
  - The tools that act on a trace for its user (detreplay, detdiff
    --bisect, detrec pack, scrub and salvage) make that check; packing a
    trusted foreign trace adds only files its owner could read themselves
    (readable_by), so a trace is never a way to read what its owner cannot.
  - The content seal (det.seal, checked by det.validate) finds damage and
    edits made without det; it is not a signature: anyone with det can seal
    a trace they wrote, so trust comes from who owns the file, never from
    its seal.
  - Every library the recording loaded is checked by hash, as the binary
    is: a changed libc, or a library swapped under the same path, is
    refused unless --force. A library the recorded environment preloads
    (LD_PRELOAD, LD_AUDIT) must be one the recording loaded.
  - The copies detrec keeps beside a trace (det.objects) are shown to the
    program instead of this machine's changed files only when they are the
    user's (or the trusted trace owner's) and no one else may write them,
    and their bytes are checked against the hashes the trace names.
  - Reading a trace (detrec info, detdiff) runs nothing and needs no trust.
Standard library only.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shlex
import stat
from collections.abc import Callable
from typing import Any

from .errors import DetError
from .tracefile import user_name

TRUST_ENV = "DET_TRUST"
PRELOAD_VARS = ("LD_PRELOAD", "LD_AUDIT")
SHOWN_ENV = ("LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH")


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_HASHED: dict[tuple[str, int, int, int, int, int], str] = {}


def sha256_recorded(path: str) -> str:
    """sha256_file for what a recording notes (its program, libdet.so, its
    libraries): each file is hashed once per process while its identity
    (device, inode, size, mtime, ctime) stays, since a hunt's runs record the
    same files again and again. Checks before a replay hash afresh."""
    st = os.stat(path)
    key = (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    digest = _HASHED.get(key)
    if digest is None:
        digest = _HASHED[key] = sha256_file(path)
    return digest


def what_it_runs(meta: dict[str, Any]) -> str:
    """One line: the command, where, and the environment entries that load code."""
    argv = meta.get("argv") or []
    env = meta.get("env") or {}
    cmd = shlex.join([str(meta.get("binary"))] + [str(a) for a in argv[1:]])
    if len(cmd) > 160:
        cmd = cmd[:157] + "..."
    loaders = [f"{k}={shlex.quote(env[k])}" for k in SHOWN_ENV if k in env]
    extra = f", with {' '.join(loaders)}" if loaders else ""
    return f"{cmd} in {meta.get('cwd')} with its recorded environment ({len(env)} variables{extra})"


def untrusted(path: str | os.PathLike[str]) -> str | None:
    """Why the file at path is not yours alone (a clause), or None."""
    try:
        st = os.stat(path)
        parent = os.path.dirname(os.path.abspath(path))
        dst = os.stat(parent)
    except OSError as e:
        raise DetError(f"{path}: {e.strerror}", status=2) from None
    me = os.geteuid()
    if st.st_uid != me:
        return f"belongs to {user_name(st.st_uid)}, not to you"
    if st.st_mode & 0o022:
        who = "anyone" if st.st_mode & 0o002 else "its group"
        return f"can be changed by {who} (mode {stat.S_IMODE(st.st_mode):04o})"
    if dst.st_uid not in (me, 0):
        return f"is in {parent}, which belongs to {user_name(dst.st_uid)}, who could put another file in its place"
    if dst.st_mode & 0o022 and not dst.st_mode & stat.S_ISVTX:
        return f"is in {parent}, where others may put another file in its place (mode {stat.S_IMODE(dst.st_mode):04o})"
    return None


def check_owner(path: str | os.PathLike[str], meta: dict[str, Any], trust: bool,
                doing: str | None = None) -> None:
    """Refuse to act on a trace that is not yours alone, unless trusted.
    doing: what acting on it would do (default: what replaying it runs)."""
    if trust or os.environ.get(TRUST_ENV) == "1":
        return
    why = untrusted(path)
    if why is None:
        return
    doing = doing or f"replaying it would run {what_it_runs(meta)}"
    raise DetError(f"{path} {why}: {doing}; if you trust it, use --trust (or {TRUST_ENV}=1)", status=2)


def readable_by(path: str, uid: int) -> bool:
    """Could user uid read the file at path themselves (search permission
    on every directory on the way, read permission on the file; by mode
    bits, as the kernel checks them without ACLs)? path is absolute and
    resolved (no symlink on the way)."""
    if uid == 0:
        return True
    try:
        name = user_name(uid)
        gids = set(os.getgrouplist(name, pwd.getpwuid(uid).pw_gid)) if not name.startswith("uid ") else set()
    except (KeyError, OSError):
        gids = set()

    def allows(st: os.stat_result, bit: int) -> bool:
        shift = 6 if st.st_uid == uid else 3 if st.st_gid in gids else 0
        return bool(st.st_mode & (bit << shift))

    parts = [p for p in path.split("/") if p]
    try:
        for i in range(len(parts)):
            if not allows(os.stat("/" + "/".join(parts[:i])), 0o1):
                return False
        return allows(os.stat(path), 0o4)
    except OSError:
        return False


def check_libraries(meta: dict[str, Any], force: bool, here: Callable[[str], str] = lambda p: p) -> None:
    """Every library the recording loaded is the same file now; a preloaded
    one is one of them. here: where this process finds a recorded path (a
    packed trace's view)."""
    libs = meta.get("libraries") or []
    known = {p for p, _ in libs}
    env = meta.get("env") or {}
    for var in PRELOAD_VARS:
        for lib in env.get(var, "").replace(":", " ").split():
            if os.path.basename(lib) == "libdet.so":
                continue
            if not any(k == lib or os.path.basename(k) == os.path.basename(lib) for k in known):
                raise DetError(f"the recorded environment's {var} names {lib}, which the recording did not "
                               f"load: the trace was edited; refusing to run it", status=2)
    if force:
        return
    for path, digest in libs:
        try:
            same = sha256_file(here(path)) == digest
        except OSError:
            same = False
        if not same:
            raise DetError(f"{path} changed since the recording loaded it (its sha256 differs, or it is gone); "
                           "--force replays anyway", status=2)


def library_hashes(modules: list[tuple[str, int]]) -> list[list[str]]:
    """[path, sha256] of the libraries a recording loaded (its modules but the
    program itself, listed first, and det's own libdet.so)."""
    out = []
    for path, _base in modules[1:]:
        if not path.startswith("/") or os.path.basename(path) == "libdet.so":
            continue
        try:
            out.append([path, sha256_recorded(path)])
        except OSError:
            continue
    return out
