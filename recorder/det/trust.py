"""Trusting a trace before replaying it: a trace is a program to run.

detreplay runs the binary, arguments, environment and working directory a
trace names. Rules of this file:
  - A trace owned by another user is refused unless trusted explicitly
    (--trust, or DET_TRUST=1), as git refuses a repository another user
    owns; the refusal says in one line what the trace would run.
  - Every library the recording loaded is checked by hash, as the binary
    is: a changed libc, or a library swapped under the same path, is
    refused unless --force. A library the recorded environment preloads
    (LD_PRELOAD, LD_AUDIT) must be one the recording loaded.
  - Reading a trace (detrec info, detdiff) runs nothing and needs no trust.
Standard library only.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import shlex
from collections.abc import Callable
from typing import Any

from .errors import DetError

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


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def check_owner(path: str | os.PathLike[str], meta: dict[str, Any], trust: bool) -> None:
    """Refuse to run another user's trace unless trusted."""
    if trust or os.environ.get(TRUST_ENV) == "1":
        return
    try:
        uid = os.stat(path).st_uid
    except OSError as e:
        raise DetError(f"{path}: {e.strerror}", status=2) from None
    if uid == os.geteuid():
        return
    raise DetError(f"{path} belongs to {_user(uid)}, not to you: replaying it would run {what_it_runs(meta)}; "
                   f"if you trust it, replay with --trust (or {TRUST_ENV}=1)", status=2)


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
