"""detrec pack TRACE: put into a trace what replay needs from this machine.

    detrec pack [-q] TRACE
    detrec --pack ... (the same, right after recording)

Rules:
  - What is packed comes from the trace: the program (meta binary), the
    `files` table (what its processes loaded, opened for reading or exec'd,
    as they named them), the working directory and a stdin file. Each path
    is walked component by component as the kernel would, so every symlink
    on the way is packed too (as the recording machine had it) and the file
    it leads to once.
  - Nothing is packed that is not what the program read: the program must
    have the recorded SHA-256; a file whose size or mtime changed since it
    was read is left out and named, unless it is one the recording ran
    (program, library, loader) whose copy detrec kept (det.objects): that
    copy is packed instead; so are machine state (/proc, /sys, /dev,
    /run) and det's own libdet.so (the replaying det brings its own).
  - Each distinct content is stored once (blobs, keyed by SHA-256), zlib
    compressed in chunks of at most 16 MiB (`raw` when that does not pay).
  - Packing again replaces the previous pack. The trace stays mode 0600,
    and its owner's.
  - A trace that is not yours alone is packed only when trusted (--trust;
    det.trust), and then with only the files its owner could read
    themselves: packing is never a way to read what the owner cannot.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sqlite3
import stat
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from det import __version__, tracedir
from det.errors import DetError
from det.objects import kept_object, recorded_objects
from det.trace import Trace
from det.tracefile import TraceLock, WorkDir, user_name
from det.trust import check_owner, readable_by, sha256_file

CHUNK = 16 << 20
MACHINE_STATE = ("/proc/", "/sys/", "/dev/", "/run/")
MAX_LINKS = 40


@dataclass
class Entry:
    path: str
    type: str            # file | symlink | dir
    mode: int
    mtime_ns: int
    size: int = 0
    sha256: str | None = None
    target: str | None = None
    source: str | None = None  # a file: where its content is read (its kept copy), else at path


@dataclass
class Plan:
    entries: dict[str, Entry] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)  # "path: why"


def walk(path: str, root: str = "") -> tuple[list[tuple[str, str]], str]:
    """Resolve an absolute path as the kernel does: ([(symlink, target)...] met
    on the way, the real path it leads to); under `root` as in a chroot there."""
    links: list[tuple[str, str]] = []
    todo = [c for c in path.split("/") if c]
    done = "/"
    hops = 0
    while todo:
        c = todo.pop(0)
        if c == ".":
            continue
        if c == "..":
            done = os.path.dirname(done.rstrip("/")) or "/"
            continue
        here = os.path.join(done, c)
        try:
            st = os.lstat(root + here)
        except OSError:
            return links, os.path.join(here, *todo)  # missing: the caller stats it and says so
        if stat.S_ISLNK(st.st_mode):
            hops += 1
            if hops > MAX_LINKS:
                raise OSError(f"{path}: too many levels of symbolic links")
            target = os.readlink(root + here)
            links.append((here, target))
            todo = [x for x in target.split("/") if x] + todo
            if target.startswith("/"):
                done = "/"
            continue
        done = here
    return links, done


def _is_det_runtime(path: str, meta: dict) -> bool:
    """det's own preloaded library: the replaying det brings its own."""
    if os.path.basename(path) != "libdet.so":
        return False
    if os.path.exists(os.path.join(os.path.dirname(path), "libdetsup.so")):
        return True
    try:
        return sha256_file(path) == meta.get("libdet_sha256")
    except OSError:
        return False


def plan_pack(tr: Trace, reader: int | None = None) -> Plan:
    """Everything the trace's program read, checked against the recording;
    with `reader` (a uid), only what that user could read themselves."""
    meta = tr.meta
    plan = Plan()
    wanted: list[tuple[str, tuple[int, int] | None, str | None]] = []  # (path, (size, mtime) then, sha256)
    exe = meta.get("binary")
    if not exe:
        raise DetError(f"{tr.path}: the trace does not name its program")
    wanted.append((exe, None, meta.get("binary_sha256")))
    stdin = meta.get("stdin") or {}
    if stdin.get("kind") == "file":
        wanted.append((stdin["path"], None, stdin.get("sha256")))
    has_files = tr.q1("SELECT count(*) FROM sqlite_master WHERE name = 'files'")
    rows = tr.q("SELECT path, how, size, mtime_ns, cut FROM files ORDER BY rowid") if has_files else []
    for path, how, size, mtime_ns, cut in rows:
        if cut:
            plan.left_out.append(f"{path}...: its path is too long to pack")
        elif how == "loaded" and _is_det_runtime(path, meta):
            continue
        else:
            wanted.append((path, (size, mtime_ns), None))
    if meta.get("files_lost"):
        plan.left_out.append(f"{meta['files_lost']} more files the program read: the recording could list "
                             "only the first ones")
    kept = {path: (digest, obj) for path, digest in recorded_objects(meta)
            if (obj := kept_object(tr.path, digest)) is not None}
    for path, then, sha in wanted:
        _add(plan, path, then, sha, exe, reader, kept)
    cwd = meta.get("cwd")
    if cwd:
        links, real = walk(cwd)
        for link, target in links:
            _add_link(plan, link, target)
        try:
            st = os.stat(real)
            plan.entries.setdefault(real, Entry(real, "dir", stat.S_IMODE(st.st_mode), st.st_mtime_ns))
        except OSError:
            plan.entries.setdefault(real, Entry(real, "dir", 0o755, 0))
    return plan


def _add_link(plan: Plan, link: str, target: str) -> None:
    if link not in plan.entries:
        st = os.lstat(link)
        plan.entries[link] = Entry(link, "symlink", 0o777, st.st_mtime_ns, target=target)


def _add(plan: Plan, path: str, then: tuple[int, int] | None, sha: str | None, exe: str,
         reader: int | None, kept: dict[str, tuple[str, str]]) -> None:
    if path.startswith(MACHINE_STATE):
        return
    try:
        links, real = walk(path)
    except OSError as e:
        plan.left_out.append(f"{path}: {e}")
        return
    if real.startswith(MACHINE_STATE):
        return
    try:
        st = os.stat(real)
    except OSError as e:
        if _add_kept(plan, path, links, real, then, kept):
            return
        if path == exe:
            raise DetError(f"{path}: the recorded program is gone ({e.strerror}); pack on the machine that "
                           "recorded it, before it changes") from None
        plan.left_out.append(f"{path}: gone since it was read")
        return
    if not stat.S_ISREG(st.st_mode):
        return
    if reader is not None and not all(readable_by(p, reader) for p in [real] + [link for link, _ in links]):
        plan.left_out.append(f"{path}: the trace's owner ({user_name(reader)}) could not read it")
        return
    if then is not None and (st.st_size, st.st_mtime_ns) != then:
        if _add_kept(plan, path, links, real, then, kept):
            return
        plan.left_out.append(f"{path}: changed since the program read it")
        return
    for link, target in links:
        _add_link(plan, link, target)
    if real in plan.entries:
        return
    digest = sha256_file(real)
    if sha is not None and digest != sha:
        if _add_kept(plan, path, links, real, then, kept):
            return
        if path == exe:
            raise DetError(f"{path} changed since it was recorded (its sha256 differs): cannot pack it")
        plan.left_out.append(f"{path}: changed since the program read it")
        return
    plan.entries[real] = Entry(real, "file", stat.S_IMODE(st.st_mode), st.st_mtime_ns, st.st_size, digest)


def _add_kept(plan: Plan, path: str, links: list[tuple[str, str]], real: str, then: tuple[int, int] | None,
              kept: dict[str, tuple[str, str]]) -> bool:
    """`path` differs here: pack its kept copy at the path this machine
    resolves it to, if there is one."""
    if path not in kept:
        return False
    if real in plan.entries:
        return True
    digest, obj = kept[path]
    for link, target in links:
        _add_link(plan, link, target)
    try:
        mode = stat.S_IMODE(os.stat(real).st_mode)
    except OSError:
        mode = 0o755
    st = os.stat(obj)
    plan.entries[real] = Entry(real, "file", mode, then[1] if then else st.st_mtime_ns, st.st_size, digest,
                               source=obj)
    return True


def _chunks(path: str) -> Iterator[tuple[str, int, bytes]]:
    """(codec, uncompressed size, stored bytes) for each chunk of the file."""
    with open(path, "rb") as f:
        for data in iter(lambda: f.read(CHUNK), b""):
            packed = zlib.compress(data, 6)
            if len(packed) < len(data):
                yield "zlib", len(data), packed
            else:
                yield "raw", len(data), data


def read_blob(db: sqlite3.Connection, sha256: str) -> Iterator[bytes]:
    """A packed file's content, chunk by chunk, checked against its SHA-256."""
    h = hashlib.sha256()
    for codec, size, data in db.execute("SELECT codec, size, bytes FROM blobs WHERE sha256 = ? ORDER BY chunk",
                                        (sha256,)):
        try:
            out = zlib.decompress(data) if codec == "zlib" else bytes(data)
        except (zlib.error, TypeError) as e:
            raise DetError(f"packed file {sha256[:12]}: cannot unpack it ({e}): the trace is damaged") from None
        if len(out) != size:
            raise DetError(f"packed file {sha256[:12]}: a chunk has {len(out)} bytes, the trace says {size}")
        h.update(out)
        yield out
    if h.hexdigest() != sha256:
        raise DetError(f"packed file {sha256[:12]}: its content does not match its SHA-256: the trace is damaged")


@dataclass
class PackReport:
    files: int
    links: int
    bytes: int            # the files' total size
    stored: int           # what their distinct contents take in the trace
    distinct: int
    left_out: list[str]


def pack_trace(path: Path, quiet: bool = False, trust: bool = False) -> PackReport:
    """Pack `path` (its lock held: one writer per trace); returns what was
    done (and says it unless quiet). The packed trace is written in a
    private work directory and takes the trace's place (det.tracefile),
    with the trace's owner."""
    with TraceLock(path, "detrec pack"):
        return _pack(path, quiet, trust)


def _pack(path: Path, quiet: bool, trust: bool) -> PackReport:
    with Trace(path) as tr:
        check_owner(tr.path, tr.meta, trust, doing="packing it would copy files you can read into a file its "
                    "owner can read (only those they could read themselves would be packed)")
        if not tr.complete:
            raise DetError(f"{path}: the trace is incomplete; only a finished recording can be packed")
        if not tr.q1("SELECT count(*) FROM sqlite_master WHERE name = 'packed'"):
            raise DetError(f"{path}: this trace format has no room for packed files")
        owner = os.stat(path).st_uid
        plan = plan_pack(tr, None if owner == os.geteuid() else owner)
    work = WorkDir(path)
    tmp = work.file(path.name)
    try:
        shutil.copyfile(path, tmp)
        os.chmod(tmp, 0o600)
        db = sqlite3.connect(tmp)
        try:
            with db:
                db.execute("DELETE FROM packed")
                repacked = db.execute("DELETE FROM blobs").rowcount > 0
                stored = 0
                seen: set[str] = set()
                for e in sorted(plan.entries.values(), key=lambda e: e.path):
                    db.execute("INSERT INTO packed(path, type, mode, mtime_ns, size, sha256, target) "
                               "VALUES (?,?,?,?,?,?,?)",
                               (e.path, e.type, e.mode, e.mtime_ns, e.size, e.sha256, e.target))
                    if e.type != "file" or e.sha256 in seen:
                        continue
                    seen.add(e.sha256)
                    if sha256_file(e.source or e.path) != e.sha256:
                        raise DetError(f"{e.source or e.path} changed while it was being packed")
                    for i, (codec, size, data) in enumerate(_chunks(e.source or e.path)):
                        db.execute("INSERT INTO blobs(sha256, chunk, codec, size, bytes) VALUES (?,?,?,?,?)",
                                   (e.sha256, i, codec, size, data))
                        stored += len(data)
            if repacked:
                db.execute("VACUUM")  # give back what the previous pack took
        finally:
            db.close()
        if owner != os.geteuid():
            os.chown(tmp, owner, -1)
        work.publish(tmp, path)
    except sqlite3.Error as e:
        raise DetError(f"{path}: cannot write the pack ({e})") from None
    except OSError as e:
        raise DetError(f"{path}: cannot write the pack ({e.strerror})") from None
    finally:
        work.remove()
    files = [e for e in plan.entries.values() if e.type == "file"]
    rep = PackReport(len(files), sum(1 for e in plan.entries.values() if e.type == "symlink"),
                     sum(e.size for e in files), stored, len(seen), plan.left_out)
    if not quiet:
        say = lambda m: print(f"detrec pack: {m}", file=sys.stderr)  # noqa: E731
        say(f"{path}: packed {rep.files} files ({rep.distinct} distinct, {rep.bytes / 1e6:.1f} MB) and "
            f"{rep.links} symlinks; they take {rep.stored / 1e6:.1f} MB in the trace, now "
            f"{path.stat().st_size / 1e6:.1f} MB")
        for why in rep.left_out:
            say(f"  not packed: {why}")
    return rep


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="detrec pack",
        description="Put into a trace what replay needs from the recording machine: the program, its shared "
                    "libraries and loader (dlopen'ed ones too), and the regular files it read, each checked "
                    "against the recording and stored once, compressed. detreplay then replays the trace on "
                    "another machine of the same architecture, showing the program those files at their "
                    "recorded paths.",
        epilog="Pack on the machine that recorded, before the files change: a file changed since the program "
               "read it is left out, and named.",
    )
    tracedir.trace_argument(p, "trace", nargs="?", metavar="TRACE",
                            help="a trace path, or a name listed by `detrec ls` (default: the latest)")
    p.add_argument("-q", "--quiet", action="store_true", help="say nothing but errors")
    p.add_argument("--trust", action="store_true",
                   help="pack a trace that is not yours alone (then only files its owner could read go in)")
    p.add_argument("--version", action="version", version=f"%(prog)s (det) {__version__}")
    return p


def main(argv: list[str]) -> int:
    ns = build_parser().parse_args(argv)
    try:
        pack_trace(tracedir.resolve(ns.trace) if ns.trace else tracedir.latest(), quiet=ns.quiet, trust=ns.trust)
    except DetError as e:
        print(f"detrec pack: {e}", file=sys.stderr)
        return e.status
    return 0
