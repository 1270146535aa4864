"""det.hunt.escalate: a hunt's modes in order of strength, its runs shared
among them, and the one line that says what to try next when none failed.

Rules of this module:
 - One plan for dethunt and detrec --until-fail (det.record.huntcli,
   det.record.cli): parallel chaos first (seeded delays: cheap, finds most
   bugs between events within a few runs), then PCT (strict, one thread at a
   time: finds what needs a preemption at one point, and every trace it
   keeps replays, data races included). Each stage is a hunt of its own;
   the first stage that fails ends the escalation.
 - The shares come from bench/hunt.py's figures (bench/README.md): parallel
   chaos found each bug it finds within 6 runs, PCT needed up to 20;
   so chaos gets a quarter of the runs, PCT the rest.
 - Nothing here records: the stages' options are the caller's
   (dataclasses.replace of det.record's Options).
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
from dataclasses import dataclass

from det import paths
from det.symbols import main_source

CHAOS_SHARE = 4  # parallel chaos gets 1/CHAOS_SHARE of the runs (at least one), PCT the rest
DET_CC_MARK = b"det_cc_built_memory"  # the symbol det-cc --sched-points=memory leaves in a program


@dataclass(frozen=True)
class Stage:
    name: str    # as said to the user: "parallel chaos", "PCT depth 3"
    strict: bool
    runs: int


def plan(runs: int, depth: int) -> list[Stage]:
    """The stages of an escalating hunt of `runs` runs."""
    chaos = max(1, -(-runs // CHAOS_SHARE))
    stages = [Stage("parallel chaos", False, chaos)]
    if runs > chaos:
        stages.append(Stage(f"PCT depth {depth}", True, runs - chaos))
    return stages


def describe(stages: list[Stage]) -> str:
    """`parallel chaos (25 runs), then PCT depth 3 (75 runs)`"""
    return ", then ".join(f"{s.name} ({s.runs} run{'s' if s.runs != 1 else ''})" for s in stages)


def built_with_memory_points(exe: str) -> bool:
    try:
        st = os.stat(exe)
    except OSError:
        return False
    return _marked(exe, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@functools.lru_cache(maxsize=64)
def _marked(exe: str, *identity: int) -> bool:
    """The file's search for det-cc's mark, once per identity of the file
    (every PCT run of a hunt asks: reading the program each time cost a run
    most of a millisecond, more for a large one)."""
    try:
        with open(exe, "rb") as f:
            return DET_CC_MARK in f.read()
    except OSError:
        return False


def det_cc(source: str) -> str:
    """How to call det-cc (det-c++ for C++) here: on PATH, else the
    checkout's llvm/."""
    name = "det-c++" if source.endswith((".cpp", ".cc", ".cxx", ".C")) else "det-cc"
    if shutil.which(name) or paths.INSTALLED or not (paths.REPO_DIR / "llvm" / name).exists():
        return name
    return _short(str(paths.REPO_DIR / "llvm" / name))


def _short(path: str) -> str:
    """A path as the user would type it: relative when below the current directory."""
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else path


def next_step(exe: str, argv: list[str], runs: int, tried: str, depth: int, tool: str, stronger: str = "") -> str:
    """One line after a hunt in which no run failed: what it tried, and the
    next thing to try (a stronger mode not tried yet; det-cc memory points
    when the program is not built with them, naming the exact command when
    its source is at hand; else a deeper PCT; and more runs)."""
    def hunt_cmd(prog: str, n: int) -> str:
        cmd = [prog, *argv[1:]]
        head = f"dethunt --runs {n}" if tool == "dethunt" else f"detrec --until-fail {n} --"
        return f"{head} " + " ".join(shlex.quote(a) for a in cmd)

    more = hunt_cmd(argv[0], runs * 4)
    said = f"no failure in {runs} run(s) ({tried}); next:" + (f" {stronger}; or" if stronger else "")
    if not built_with_memory_points(exe):
        src = main_source(exe)
        if src:
            out = f"{argv[0]}.mem"
            build = (f"{det_cc(src)} --sched-points=memory -O2 -g -pthread -o {shlex.quote(out)} "
                     f"{shlex.quote(_short(src))}")
            return (f"{said} a bug between two plain accesses needs det-cc's memory points: {build} && "
                    f"{hunt_cmd(out, runs)}; or more runs: {more}")
        return (f"{said} a bug between two plain accesses needs the program built with det-cc --sched-points=memory "
                f"(docs/det-cc.md); or more runs: {more}")
    return f"{said} a deeper PCT (--depth {min(depth + 1, 9)}) or more runs: {more}"
