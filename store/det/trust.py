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
import time
from collections.abc import Callable
from typing import Any

from .errors import DetError
from .paths import user_cache
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


_HASHED: _HashCache | None = None
_HASH_CACHE = "file-hashes"
_HASH_CACHE_MAX = 256 << 10
# A file changed within the timestamp granularity of its last change keeps
# its identity: only files unchanged for this long are remembered (git's
# "racily clean" rule).
SETTLED_NS = 2_000_000_000


def _hash_key(path: str, st: os.stat_result) -> tuple[str, int, int, int, int, int]:
    return (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class _HashCache:
    """The user's file-hash cache, lines `SHA256 DEV INO SIZE MTIME CTIME PATH`
    (the last line of a key counts), read once and searched per key: a
    recording asks for a few files, and parsing the whole file (up to
    _HASH_CACHE_MAX, ~1500 lines) cost every start-up ~4-7 ms."""

    def __init__(self, text: str) -> None:
        self.text = text if text.endswith("\n") or not text else text + "\n"
        self.added: dict[tuple[str, int, int, int, int, int], str] = {}

    def get(self, key: tuple[str, int, int, int, int, int]) -> str | None:
        if key in self.added:
            return self.added[key]
        tail = " " + " ".join(str(v) for v in key[1:]) + " " + key[0] + "\n"
        end = len(self.text)
        while (i := self.text.rfind(tail, 0, end)) >= 0:
            start = self.text.rfind("\n", 0, i) + 1
            if i - start == 64 and " " not in self.text[start:i]:
                return self.text[start:i]
            end = i + len(tail) - 1  # (a longer line ending the same way: look before it)
        return None

    def __setitem__(self, key: tuple[str, int, int, int, int, int], digest: str) -> None:
        self.added[key] = digest


def _load_hashes() -> _HashCache:
    """The user's file-hash cache (empty when it cannot be read)."""
    f = user_cache(_HASH_CACHE)
    try:
        return _HashCache(f.read_text() if f is not None else "")
    except (OSError, UnicodeDecodeError):
        return _HashCache("")


def _save_hash(key: tuple[str, int, int, int, int, int], digest: str) -> None:
    f = user_cache(_HASH_CACHE)
    if f is None or "\n" in key[0]:
        return
    try:
        f.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if f.exists() and f.stat().st_size > _HASH_CACHE_MAX:  # keep it small: the newest half
            lines = f.read_text().splitlines()
            tmp = f.with_name(f"{f.name}.{os.getpid()}")
            tmp.write_text("".join(ln + "\n" for ln in lines[len(lines) // 2:]))
            os.replace(tmp, f)
        fd = os.open(f, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (" ".join([digest, *(str(v) for v in key[1:]), key[0]]) + "\n").encode())
        finally:
            os.close(fd)
    except (OSError, UnicodeDecodeError):
        pass  # no cache: the next recording hashes again


def sha256_recorded(path: str) -> str:
    """sha256_file for what a recording notes (its program, libdet.so, its
    libraries): each file is hashed once while its identity (device, inode,
    size, mtime, ctime: ctime changes with any write, and cannot be set back)
    stays (a file changed in the last SETTLED_NS is hashed every time),
    remembered in the user's cache ($XDG_CACHE_HOME/det/file-hashes),
    since every recording, and each of a hunt's runs, notes the same files
    (hashing them cost detrec's start-up ~20 ms). Checks before a replay
    hash afresh."""
    global _HASHED
    if _HASHED is None:
        _HASHED = _load_hashes()
    st = os.stat(path)
    key = _hash_key(path, st)
    digest = _HASHED.get(key)
    if digest is None:
        digest = sha256_file(path)
        if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) >= SETTLED_NS:
            _HASHED[key] = digest
            _save_hash(key, digest)
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
