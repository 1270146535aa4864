#!/usr/bin/env python3
"""make bench, isolated mode (issue 27): pthreads vs detrun --isolated, side
by side.

Rules: medians of --runs runs, native and isolated alternating (the machine
is shared); the isolated figure is the program under libdetiso.so as detrun
--isolated starts it (LD_PRELOAD, LD_BIND_NOW), without detrun's Python
start-up, which `detrun` adds once (~0.3 s). Each isolated output is
checked against the native one where the program's output is
deterministic (pigz, the Phoenix kernels), and counted over the runs
otherwise. A report, not a test: targets are printed, never asserted.

The Phoenix kernels of the DTHREADS paper are built here from the public
Phoenix sources (--phoenix: a checkout or a git directory; never vendored):
the pthreads versions (phoenix-2.0/tests/*/*-pthread.c, and
sample_apps/reverse_index, the one kernel 2.0 lacks), with the flags of
Phoenix's Defines.mk, into a temporary directory, on synthetic inputs of the
format their downloadable datasets have, made from a fixed seed. Their
thread count is sysconf(_SC_NPROCESSORS_ONLN), as Phoenix's pthreads
versions do (printed in the header).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / "build" / "libdetiso.so"
SAMPLES = ROOT / "samples" / "bin"
PHOENIX_MIRROR = Path("/work/.mirror/kozyraki+phoenix/repo/.git")
PHOENIX_CFLAGS = ["-Wall", "-D_LINUX_", "-O3", "-D__x86_64__", "-w"]  # Defines.mk's (warnings off: old code)
# output lines that report wall-clock seconds (matrix_multiply, string_match, word_count)
TIMING_LINE = re.compile(rb"^.*(Completed time = |Completed |Sorting Completed )\d+$", re.M)


def run(cmd: list[str], isolated: bool, cwd: Path | None = None) -> tuple[float, bytes, str]:
    """Wall time, stdout (lines that report seconds left out), and how it
    failed ("" if it did not: a status the program chose, such as a racy
    sample's 1 when it sees its bug, is not a failure; a signal or det's
    own one-line refusal is)."""
    env = dict(os.environ)
    if isolated:
        env.update(LD_PRELOAD=str(LIB), LD_BIND_NOW="1")
    t = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, env=env, timeout=600, cwd=cwd)
    err = r.stderr.decode(errors="replace").strip().splitlines()
    failed = r.returncode < 0 or any(e.startswith("detrun --isolated:") for e in err)
    fail = f"status {r.returncode}: {err[-1] if err else ''}" if failed else ""
    return time.monotonic() - t, TIMING_LINE.sub(b"", r.stdout), fail


def row(name: str, cmd: list[str], runs: int, same_output: bool, cwd: Path | None = None) -> None:
    nat: list[float] = []
    iso: list[float] = []
    outs: set[str] = set()
    native_out, native_fail, out = b"", "", b""
    for _ in range(runs):
        w, native_out, native_fail = run(cmd, False, cwd)
        nat.append(w)
        w, out, fail = run(cmd, True, cwd)
        if fail:
            print(f"  {name:40} pthreads {nat[-1]:.3f} s | ISOLATED RUN FAILED ({fail})", flush=True)
            return
        iso.append(w)
        outs.add(hashlib.sha256(out).hexdigest())
    n, i = statistics.median(nat), statistics.median(iso)
    if not same_output:
        check = f"{len(outs)} distinct output(s) over {runs} runs"
    elif len(outs) > 1:
        check = f"ISOLATED OUTPUTS DIFFER ({len(outs)} over {runs} runs)"
    elif native_fail:  # (histogram: free() of an array inside a struct, after its output)
        check = (f"natively {native_fail}, after {len(native_out)} bytes of output: "
                 + ("isolated's begins with them" if out.startswith(native_out) else "ISOLATED'S DIFFER"))
    elif out == native_out:
        check = "output identical to native"
    elif sorted(out.splitlines()) == sorted(native_out.splitlines()):
        check = "same lines as native, in another order (its threads print)"
    else:
        check = "OUTPUT DIFFERS from native"
    print(f"  {name:40} pthreads {n:.3f} s | isolated {i:.3f} s ({i / n:.2f}x) | {check}", flush=True)


# --- Phoenix -------------------------------------------------------------------

def phoenix_tree(src: Path, into: Path) -> Path:
    """The Phoenix sources at src (a checkout, or a git directory read with
    git archive) as a tree under into."""
    if (src / "phoenix-2.0").is_dir():
        return src
    tree = into / "phoenix-src"
    tree.mkdir()
    archive = subprocess.run(["git", f"--git-dir={src}", "archive", "HEAD"], capture_output=True)
    if archive.returncode:
        sys.exit(f"bench: {src} is neither a Phoenix checkout nor its git directory: "
                 f"{archive.stderr.decode().strip()}")
    subprocess.run(["tar", "x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


def build_phoenix(tree: Path, into: Path) -> dict[str, Path]:
    """The pthreads versions, built with Defines.mk's flags (direct gcc lines)."""
    tests = tree / "phoenix-2.0" / "tests"
    include = tree / "phoenix-2.0" / "include"
    sources = {k: [tests / k / f"{k}-pthread.c"] for k in
               ("histogram", "kmeans", "linear_regression", "matrix_multiply", "pca", "string_match")}
    sources["word_count"] = [tests / "word_count" / "word_count-pthread.c", tests / "word_count" / "sort-pthread.c"]
    # reverse_index is in Phoenix 1's sample_apps only; its stddefines.h drops
    # every dprintf, so the copy built here prints its result with them (the
    # index, printed by main after the threads: "Link to" lines, then one
    # file a line), not its progress messages (threads', with addresses)
    ri = into / "reverse_index-src"
    shutil.copytree(tree / "sample_apps" / "reverse_index", ri)
    hdr = ri / "stddefines.h"
    hdr.write_text(hdr.read_text().replace("#define dprintf(...) //fprintf(stderr, __VA_ARGS__)", """
#include <stdarg.h>
#include <string.h>
static inline int det_bench_skip(FILE *f, const char *fmt, ...) { (void)f; (void)fmt; return 0; }
static inline int det_bench_result(const char *fmt, ...)
{
   if (strncmp(fmt, "\\nLink to", 8) != 0 && strcmp(fmt, "\\t%s\\n") != 0)
      return 0;
   va_list ap;
   va_start(ap, fmt);
   int n = vprintf(fmt, ap);
   va_end(ap);
   return n;
}
#define dprintf(first, ...) _Generic((first), FILE *: det_bench_skip, default: det_bench_result)(first, ##__VA_ARGS__)
"""))
    sources["reverse_index"] = [ri / "reverseindex-pthread.c"]
    bins: dict[str, Path] = {}
    for name, srcs in sources.items():
        out = into / f"{name}-pthread"
        # (Phoenix 1's headers use GNU89 inline functions)
        old = ["-fgnu89-inline"] if name == "reverse_index" else []
        cc = ["gcc", *PHOENIX_CFLAGS, *old, f"-I{include}", "-o", str(out), *map(str, srcs), "-pthread", "-lm"]
        r = subprocess.run(cc, capture_output=True)
        if r.returncode:
            sys.exit(f"bench: cannot build Phoenix's {name}: {r.stderr.decode().strip()[-300:]}")
        bins[name] = out
    return bins


def phoenix_inputs(d: Path, scale: int) -> dict[str, list[str]]:
    """Synthetic inputs in the formats of Phoenix's datasets, from a fixed
    seed; the arguments of each kernel."""
    rnd = random.Random(27)
    # histogram: a 24-bit BMP (the kernel reads the bits per pixel at 28 and
    # the data offset at 10)
    w, h = 4096, 4096 // scale
    pixels = rnd.randbytes(w * h * 3)
    bmp = d / "image.bmp"
    header = (b"BM" + (54 + len(pixels)).to_bytes(4, "little") + bytes(4) + (54).to_bytes(4, "little") +
              (40).to_bytes(4, "little") + w.to_bytes(4, "little") + h.to_bytes(4, "little") +
              (1).to_bytes(2, "little") + (24).to_bytes(2, "little") + bytes(24))
    bmp.write_bytes(header + pixels)
    # linear_regression: (char x, char y) points
    points = d / "points.bin"
    points.write_bytes(rnd.randbytes(100_000_000 // scale))
    # text: words of a fixed vocabulary, Zipf-like frequencies
    vocab = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 10)))
             for _ in range(20000)]
    cum = list(itertools.accumulate(1 / (k + 1) for k in range(len(vocab))))

    def text(n_words: int) -> list[str]:
        return rnd.choices(vocab, cum_weights=cum, k=n_words)
    words = d / "words.txt"
    ws = text(2_000_000 // scale)
    words.write_text("\n".join(" ".join(ws[k:k + 12]) for k in range(0, len(ws), 12)) + "\n")
    # string_match: one word a line, with the kernel's four keys in it
    keys = d / "keys.txt"
    ks = text(4_000_000 // scale)
    for k, key in enumerate(("Helloworld", "howareyou", "ferrari", "whotheman")):
        ks[(k + 1) * len(ks) // 5] = key
    keys.write_text("\n".join(ks) + "\n")
    # reverse_index: a directory of HTML files with <a href> links
    html = d / "html"
    for k in range(200 // scale):
        sub = html / f"dir{k % 8}"
        sub.mkdir(parents=True, exist_ok=True)
        body = []
        for _ in range(300):
            body.append(" ".join(text(8)))
            body.append(f'<a href="http://site{rnd.randint(0, 20)}.example/{rnd.choice(vocab[:500])}.html">link</a>')
        (sub / f"page{k}.html").write_text("<html><body>\n" + "\n".join(body) + "\n</body></html>\n")
    # matrix_multiply: two square matrices of ints 0..10, in its working
    # directory, where it opens them by name
    side = 600 // (2 if scale > 1 else 1)
    for name in ("matrix_file_A.txt", "matrix_file_B.txt"):
        (d / name).write_bytes(b"".join(bytes((v % 11, 0, 0, 0)) for v in rnd.randbytes(side * side)))
    return {
        "histogram": [str(bmp)],
        "kmeans": ["-d", "3", "-c", "50", "-p", str(20_000 // scale), "-s", "1000"],
        "linear_regression": [str(points)],
        "matrix_multiply": [str(side)],
        "pca": ["-r", str(500 // scale), "-c", str(500 // scale), "-s", "1000"],
        "reverse_index": [str(html)],
        "string_match": [str(keys)],
        "word_count": [str(words)],
    }


def phoenix_rows(src: Path, runs: int, scale: int) -> None:
    with tempfile.TemporaryDirectory(prefix="det-bench-phoenix-") as t:
        d = Path(t)
        bins = build_phoenix(phoenix_tree(src, d), d)
        args = phoenix_inputs(d, scale)
        print(f"# Phoenix pthreads kernels, {os.cpu_count()} threads (sysconf), synthetic inputs; "
              "target <= 1.5x each, < 1x on linear_regression")
        for name, prog in bins.items():
            row(name, [str(prog), *args[name]], runs, True, cwd=d)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--phoenix", type=Path, default=PHOENIX_MIRROR if PHOENIX_MIRROR.exists() else None,
                   help="the Phoenix sources: a checkout or its git directory")
    p.add_argument("--only", choices=("phoenix", "others"), help="only the Phoenix rows, or only the others")
    ns = p.parse_args()
    if not LIB.exists():
        sys.exit(f"bench: {LIB} is missing: run make")
    scale = 10 if ns.quick else 1
    print("## isolated mode (issue 27: <= 1.5x pthreads on the Phoenix kernels at 2 threads; racy samples "
          "identical over 100 runs)")
    if ns.only != "others":
        if ns.phoenix:
            phoenix_rows(ns.phoenix, ns.runs, scale)
        else:
            print("# the Phoenix rows need the Phoenix sources: git clone https://github.com/kozyraki/phoenix, "
                  "then --phoenix DIR")
    if ns.only == "phoenix":
        return 0
    with tempfile.TemporaryDirectory(prefix="det-bench-iso-") as d:
        big = Path(d) / "big.txt"
        with open(big, "wb") as f:
            block = hashlib.sha256(b"det").hexdigest().encode() * 32
            for k in range(20_000_000 // scale // len(block)):
                f.write(block[k % 64:] + block[:k % 64] + b"\n")
        pigz = shutil.which("pigz")
        if not pigz:
            sys.exit("bench: pigz is not installed (tools/setup.sh installs it)")
        row(f"pigz -p 2 -c on {big.stat().st_size // 1_000_000} MB", [pigz, "-p", "2", "-c", str(big)],
            ns.runs, True)
    for name, args in (("racy_counter", ["20000"]), ("flag_handoff", ["2000"]), ("bank_check_then_act", ["50"]),
                       ("dining_philosophers", ["5", "500"]), ("pingpong_ok", ["2000"])):
        row(f"{name} {' '.join(args)}", [str(SAMPLES / name), *args], ns.runs, False)
    print("# the samples synchronize every few instructions: each pthreads call is a round (all threads "
          "stop, commit in turn, drop their pages), ~100 us here")
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
