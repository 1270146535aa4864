#!/usr/bin/env python3
"""Build the qemu guest's initramfs for det's kernel-module tests.

    initramfs.py OUT.cpio --ko detsched.ko --bin DIR --traces DIR --programs PATH...

Rules: the guest is a copy of what det needs, at the same absolute paths as
on the host, so traces recorded on the host replay there unchanged (same
binaries, same library paths, same working directory): busybox (static)
for the shell, Debian's own python3.11 with the part of its standard
library that det's tools import, det's Python package, libdet.so and
libdetsup.so, the sample binaries and every shared library they load
(found with ldd). Standard library only; the archive is an uncompressed
newc cpio (the kernel unpacks it faster than a compressed one under TCG).
"""

from __future__ import annotations

import argparse
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
HARNESS = Path(__file__).resolve().parent
PYTHON = Path("/usr/bin/python3.11")

# What det's tools import, found by running them (see python_closure).
EXERCISE = r"""
import atexit, os, subprocess, sys, sysconfig
def dump():
    with open(os.environ["DET_MODLIST"], "w") as f:
        for m in list(sys.modules.values()):
            p = getattr(m, "__file__", None)
            if p:
                f.write(p + "\n")
atexit.register(dump)
import det.record.cli, det.replay.cli, det.record.info, det.native, det.trace, det.launch
import concurrent.futures.thread, hashlib, json, sqlite3, ctypes, traceback, statistics, platform
hashlib.sha256(b"")
work = sys.argv[1]
rc = det.record.cli.main(["-q", "-o", work + "/t.db", "--", sys.argv[2]])
rc2 = det.replay.cli.main(["-q", work + "/t.db"])
if rc or rc2:
    sys.exit(f"exercise failed: detrec {rc}, detreplay {rc2}")
"""


def copy(src: Path, stage: Path, dest: Path | None = None) -> Path:
    """Copy src into stage at its own absolute path (or dest), keeping mtimes."""
    dest = dest or src
    out = stage / str(dest).lstrip("/")
    out.parent.mkdir(parents=True, exist_ok=True)
    if src.is_symlink() and dest == src:
        target = os.readlink(src)
        if not out.exists() and not out.is_symlink():
            os.symlink(target, out)
        copy(Path(target) if target.startswith("/") else src.parent / target, stage)
        return out
    if not out.exists():
        shutil.copy2(src, out)
    return out


def det_package(stage: Path) -> Path:
    """det's Python package laid out as setup.cfg maps it, under ROOT/py."""
    py = stage / str(ROOT).lstrip("/") / "py"
    pairs = ((ROOT / "store" / "det", py / "det"), (ROOT / "recorder" / "det_record", py / "det" / "record"),
             (ROOT / "hunt" / "det_hunt", py / "det" / "hunt"),
             (ROOT / "replayer" / "det_replay", py / "det" / "replay"),
             (ROOT / "check" / "det_check", py / "det" / "check"))  # detrec imports its quick part
    for src, dst in pairs:
        dst.mkdir(parents=True, exist_ok=True)
        for f in src.glob("*.py"):
            shutil.copy2(f, dst / f.name)
    return py


def python_closure(py: Path, probe: Path) -> list[Path]:
    """Standard library files det's tools load, from a real record and replay."""
    with tempfile.TemporaryDirectory(prefix="det-initramfs-") as work:
        modlist = Path(work) / "mods"
        env = dict(os.environ, PYTHONPATH=str(py), DET_MODLIST=str(modlist), DET_LIBDIR=str(ROOT / "build"))
        r = subprocess.run([str(PYTHON), "-S", "-c", EXERCISE, work, str(probe)], env=env, capture_output=True,
                           text=True)
        if r.returncode != 0:
            sys.exit(f"initramfs: running det's tools with {PYTHON} failed: {r.stderr.strip()[-800:]}")
        files = {Path(p) for p in modlist.read_text().split()}
    stdlib = Path("/usr/lib/python3.11")
    out = []
    for f in sorted(files):
        if stdlib in f.parents or f.parent.name == "lib-dynload":
            out.append(f)
            pyc = f.parent / "__pycache__" / f"{f.stem}.cpython-311.pyc"
            if f.suffix == ".py" and pyc.exists():
                out.append(pyc)
    return out


def elf_libs(paths: list[Path]) -> set[Path]:
    libs: set[Path] = set()
    for p in paths:
        r = subprocess.run(["ldd", str(p)], capture_output=True, text=True)
        if r.returncode != 0:
            continue  # static
        for line in r.stdout.splitlines():
            parts = line.split()
            if "=>" in parts and len(parts) >= 3 and parts[2].startswith("/"):
                libs.add(Path(parts[2]))
            elif parts and parts[0].startswith("/"):
                libs.add(Path(parts[0]))
    return libs


def write_cpio(stage: Path, out: Path) -> None:
    """An uncompressed newc archive of stage (files, directories, symlinks)."""
    ino = 1

    def header(name: str, mode: int, size: int, mtime: int) -> bytes:
        nonlocal ino
        ino += 1
        fields = [ino, mode, 0, 0, 1, mtime, size, 0, 0, 0, 0, len(name) + 1, 0]
        h = b"070701" + b"".join(b"%08X" % v for v in fields) + name.encode() + b"\0"
        return h + b"\0" * (-len(h) % 4)

    with open(out, "wb") as f:
        for dirpath, dirnames, filenames in os.walk(stage):
            dirnames.sort()
            for name in [*sorted(dirnames), *sorted(filenames)]:
                p = Path(dirpath) / name
                rel = str(p.relative_to(stage))
                st = p.lstat()
                if stat.S_ISLNK(st.st_mode):
                    data = os.readlink(p).encode()
                elif stat.S_ISREG(st.st_mode):
                    data = p.read_bytes()
                else:
                    data = b""
                f.write(header(rel, st.st_mode, len(data), int(st.st_mtime)))
                f.write(data + b"\0" * (-len(data) % 4))
        f.write(header("TRAILER!!!", 0, 0, 0))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--ko", type=Path, required=True)
    ap.add_argument("--bin", type=Path, required=True, help="the harness's own programs (fuzz, killtest)")
    ap.add_argument("--traces", type=Path, required=True, help="traces recorded on the host")
    ap.add_argument("--programs", nargs="+", type=Path, required=True, help="samples and benchmarks, by path")
    ns = ap.parse_args()

    for tool in (PYTHON, Path("/bin/busybox")):
        if not tool.exists():
            sys.exit(f"initramfs: {tool} is missing (run tools/setup.sh as root)")
    stage = ns.out.parent / "stage"
    shutil.rmtree(stage, ignore_errors=True)
    for d in ("bin", "dev", "proc", "sys", "tmp", "etc", "usr/local/bin"):
        (stage / d).mkdir(parents=True, exist_ok=True)

    if subprocess.run(["ldd", "/bin/busybox"], capture_output=True).returncode == 0:
        sys.exit("initramfs: /bin/busybox is linked dynamically: install busybox-static")
    busybox = copy(Path("/bin/busybox"), stage)
    applets = subprocess.run([str(busybox), "--list"], capture_output=True, text=True, check=True).stdout.split()
    for a in applets:
        link = stage / "bin" / a
        if not link.exists():
            os.symlink("busybox", link)

    py = det_package(stage)
    subprocess.run([str(PYTHON), "-m", "compileall", "-q", "-s", str(stage), "-p", "/", str(py)], check=True)
    elves: list[Path] = [PYTHON]
    copy(PYTHON, stage)
    for f in python_closure(py, Path("/bin/true")):
        copy(f, stage)
        if f.suffix == ".so":
            elves.append(f)
    copy(Path("/usr/lib/python3.11/os.py"), stage)  # the landmark python looks for
    for lib in ("libdet.so", "libdetsup.so"):
        elves.append(ROOT / "build" / lib)
        copy(ROOT / "build" / lib, stage)
    for prog in ns.programs:
        elves.append(prog.resolve())
        copy(prog.resolve(), stage)
    for b in sorted(ns.bin.iterdir()):
        elves.append(b)
        copy(b, stage, Path("/bin") / b.name)
    for lib in sorted(elf_libs(elves)):
        copy(lib, stage)
    copy(ns.ko, stage, Path("/detsched.ko"))
    for t in sorted(ns.traces.glob("*.db")):
        copy(t, stage, Path("/traces") / t.name)
    for f in ("init", "guest.py"):
        copy(HARNESS / f, stage, Path("/") / f)
    (stage / "init").chmod(0o755)
    for tool, mod in (("detrec", "det.record.cli"), ("detreplay", "det.replay.cli")):
        w = stage / "usr/local/bin" / tool
        w.write_text(f"#!/bin/sh\nexec {PYTHON} -S -c 'import sys; from {mod} import main; sys.exit(main())' \"$@\"\n")
        w.chmod(0o755)
    (stage / "etc" / "det-root").write_text(f"{ROOT}\n{ROOT / 'py'}\n")
    write_cpio(stage, ns.out)
    size = ns.out.stat().st_size
    print(f"initramfs: {ns.out} ({size / 1e6:.1f} MB, {len(elves)} programs and libraries with their dependencies)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
