"""How big packed traces are: `detrec --pack` on pigz and on a threaded
python3, the programs and inputs tests/e2e/test_real_programs.py uses.

    .venv/bin/python bench/pack_sizes.py [--json FILE]

For each: the trace before and after packing, the files packed (program and
libraries apart from the data files it read) with their size on disk and
what their distinct contents take in the trace, and how long packing took.
Sizes are deterministic; the time is one run on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DETREC = ROOT / ".venv" / "bin" / "detrec"
sys.path.insert(0, str(ROOT / "tests"))
from real_inputs import write_big_text, write_threads_py  # noqa: E402 - after its path


def inputs(d: Path) -> None:
    write_big_text(d / "big.txt")  # as the tests use
    write_threads_py(d / "threads.py")


def measure(name: str, cmd: list[str], work: Path, out: Path) -> dict[str, object]:
    trace = out / f"{name}.db"
    r = subprocess.run([DETREC, "-q", "-o", trace, "--", *cmd], cwd=work, capture_output=True)
    if r.returncode != 0:
        sys.exit(f"{name}: detrec failed: {r.stderr.decode()}")
    before = trace.stat().st_size
    t0 = time.monotonic()
    r = subprocess.run([DETREC, "pack", trace], capture_output=True)
    took = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"{name}: detrec pack failed: {r.stderr.decode()}")
    db = sqlite3.connect(trace)

    def part(where: str) -> tuple[int, int, int]:
        files, size = db.execute(f"SELECT count(*), coalesce(sum(size), 0) FROM packed WHERE type = 'file' {where}"
                                 ).fetchone()
        stored = db.execute(f"SELECT coalesce(sum(length(bytes)), 0) FROM blobs WHERE sha256 IN "
                            f"(SELECT sha256 FROM packed WHERE type = 'file' {where})").fetchone()[0]
        return files, size, stored

    data = f"AND path LIKE '{work}/%'"
    row = {
        "trace": name, "command": " ".join(cmd), "trace_bytes_unpacked": before,
        "trace_bytes_packed": trace.stat().st_size, "pack_seconds": round(took, 2),
        "links": db.execute("SELECT count(*) FROM packed WHERE type = 'symlink'").fetchone()[0],
    }
    for key, where in (("all", ""), ("program_and_libraries", f"AND NOT path LIKE '{work}/%'"), ("data", data)):
        files, size, stored = part(where)
        row[key] = {"files": files, "bytes": size, "stored_bytes": stored}
    db.close()
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", help="also write the figures here")
    ns = p.parse_args()
    pigz = shutil.which("pigz")
    if not pigz:
        sys.exit("pigz is not installed: tools/setup.sh installs it")
    with tempfile.TemporaryDirectory(prefix="det-pack-sizes-") as tmp:
        work, out = Path(tmp) / "work", Path(tmp) / "traces"
        work.mkdir()
        out.mkdir()
        inputs(work)
        rows = [measure("pigz", [pigz, "-p", "2", "-c", "big.txt"], work, out),
                measure("python3", ["/usr/bin/python3", "threads.py"], work, out)]
    mb = lambda n: f"{n / 1e6:.1f} MB"  # noqa: E731
    for r in rows:
        libs, data = r["program_and_libraries"], r["data"]
        print(f"{r['trace']}: {r['command']}")
        print(f"  trace {mb(r['trace_bytes_unpacked'])} -> {mb(r['trace_bytes_packed'])} packed "
              f"(packing took {r['pack_seconds']} s)")
        print(f"  program and libraries: {libs['files']} files, {mb(libs['bytes'])} -> {mb(libs['stored_bytes'])}; "
              f"data it read: {data['files']} files, {mb(data['bytes'])} -> {mb(data['stored_bytes'])}; "
              f"{r['links']} symlinks")
    if ns.json:
        Path(ns.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
