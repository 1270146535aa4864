"""detreplay --gdb: replay a trace inside gdb, with det's extension loaded.

    detreplay --gdb [-g N] [--relaxed] [--force] TRACE [-- GDB ARGS...]

Rules: everything that can be wrong (the trace, the program, -g, gdb
missing) is found here, before gdb starts, and said in one `detreplay:`
line with a non-zero exit. The replay region is made here (libdetsup.so,
through det.native) and handed to gdb as an inherited fd; the program is
started by gdb through gdb-ext/det_exec.py with exactly the recording's
argv, environment (in order) and working directory, as det.launch.Program
starts it without gdb, with the recorded stdin (a recorded pipe is fed
again at every (re)start through a FIFO this process keeps filling). LD_PRELOAD
is never put in gdb's own environment. Exits with gdb's exit status.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
from pathlib import Path

from det import paths
from det.constants import DET_F_STDIN_FED
from det.errors import DetError
from det.launch import FED_KINDS, program_env
from det.trace import Trace
from det.trust import sha256_file

from .checks import check_binary, replay_order  # the same checks as a replay without gdb
from .native import Replayer
from .view import PackedView, open_view

EXT_DIR = paths.GDB_EXT_DIR


def find_gdb() -> str:
    """gdb's path, det's extension beside it checked."""
    name = os.environ.get("DET_GDB", "gdb")
    path = shutil.which(name)
    if not path:
        raise DetError(f"{name}: gdb is not installed (Debian: apt-get install gdb)", status=2)
    if not (EXT_DIR / "det_gdb" / "__init__.py").exists():
        raise DetError(f"{EXT_DIR}: det's gdb extension is missing", status=2)
    return path


def extension_config() -> dict[str, list[str]]:
    """What det_gdb's config needs in every form: where det's Python is, and
    det's own sources (not the user's: `step` does not enter them)."""
    return {"pythonpath": [str(EXT_DIR), str(paths.PYTHON_DIR)],
            "skip_files": [f"{src}/*" for src in paths.SOURCE_DIRS]}


def run_with_extension(gdb: str, d: Path, entry: str, config: Path, gdb_args: list[str],
                       first: str = "", gdb_opts: tuple[str, ...] = ()) -> int:
    """Run gdb with an init script (in d) that imports det_gdb and calls
    det_gdb.<entry>(config), after `first` (gdb commands); gdb handles
    Ctrl-C (it stops the program), this process only waits. gdb's exit status."""
    init = d / "init.gdb"
    init.write_text(first + "python\nimport sys\n"
                    f"sys.path.insert(0, {str(EXT_DIR)!r})\n"
                    "import det_gdb\n"
                    f"det_gdb.{entry}({str(config)!r})\n"
                    "end\n")
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        proc = subprocess.Popen([gdb, "-q", *gdb_opts, "-x", str(init), *gdb_args], preexec_fn=_default_sigint)
        return proc.wait()
    finally:
        signal.signal(signal.SIGINT, old)


def check_goto(tr: Trace, goto: int | None) -> None:
    if goto is None:
        return
    first, last = tr.q("SELECT min(seq), max(seq) FROM event_rows")[0]
    if first is None:
        raise DetError(f"-g {goto}: the trace has no events", status=2)
    if goto < 0 or goto > last + 1:
        raise DetError(f"-g {goto}: the trace has events {first} to {last} ({last + 1} is after the last)", status=2)
    if goto <= last and tr.q1("SELECT count(*) FROM event_rows WHERE seq = ?", (goto,)) == 0:
        raise DetError(f"-g {goto}: the trace has no event {goto} (its thread died before it was written)", status=2)


def run_gdb(trace_path: str, relaxed: bool = False, force: bool = False, goto: int | None = None,
            gdb_args: list[str] | None = None, trust: bool = False, host_files: bool = False) -> int:
    """Start gdb on the replaying program; returns gdb's exit status."""
    gdb = find_gdb()
    path = Path(trace_path).resolve()
    with contextlib.ExitStack() as cleanup:
        with Trace(path) as tr:
            view = open_view(tr, host_files)
            if view is not None:
                cleanup.callback(view.close)
            exe = check_binary(tr, force, trust, view)
            check_goto(tr, goto)
            meta = tr.meta
            complete = tr.complete
        here = view.host_path if view is not None else (lambda p: p)
        stdin = meta.get("stdin") or {"kind": "tty"}
        if stdin["kind"] == "file" and (not os.path.exists(here(stdin["path"]))
                                        or sha256_file(here(stdin["path"])) != stdin["sha256"]):
            raise DetError(f"{stdin['path']}: the file the program read as stdin is gone or changed since "
                           "recording", status=2)
        return _run_gdb(gdb, path, exe, meta, complete, stdin, relaxed, goto, gdb_args, view)


def _run_gdb(gdb: str, path: Path, exe: str, meta: dict, complete: bool, stdin: dict, relaxed: bool,
             goto: int | None, gdb_args: list[str] | None, view: PackedView | None) -> int:
    here = view.host_path if view is not None else (lambda p: p)
    relaxed, strict = replay_order(meta, relaxed)
    rep = Replayer(path, complete, relaxed, strict, all_ordered=True)
    try:
        env = program_env(meta["env"], rep.fd, view.shm_holder(rep.fd) if view is not None else None)
        with tempfile.TemporaryDirectory(prefix="detreplay-gdb-") as d:
            spec = Path(d) / "program.json"
            program = {"exe": exe, "argv": meta["argv"], "env": list(env.items()), "cwd": meta["cwd"],
                       "root": view.root if view is not None else None}
            if stdin["kind"] in FED_KINDS:  # (a recorded pty is fed as a pipe under gdb)
                rep.add_flags(DET_F_STDIN_FED)
                program["stdin_fifo"] = str(feed_stdin(path, Path(d) / "stdin"))
            elif stdin["kind"] == "file":
                program["stdin_file"] = [here(stdin["path"]), int(stdin.get("offset", 0))]
            spec.write_text(json.dumps(program))
            site = sysconfig.get_paths()
            config = Path(d) / "config.json"
            config.write_text(json.dumps({
                "trace": str(path),
                "relaxed": relaxed,
                "mode": "strict" if strict else "relaxed" if relaxed else "all-ordered",  # det_gdb_model.REPLAY_MODES
                "goto": goto,
                "binary": here(exe),
                "exec_wrapper": [sys.executable, "-I", "-S", str(EXT_DIR / "det_exec.py"), str(spec)],
                "site_packages": sorted({site["purelib"], site["platlib"]}),
                **extension_config(),
            }))
            if view is not None:
                view.keep_chroot_across_exec()  # gdb's exec wrapper chroots the program
            # a packed trace: gdb reads the program's libraries where the program sees them
            first = f"set sysroot {view.root}\n" if view is not None else ""
            return run_with_extension(gdb, Path(d), "start_or_say", config, gdb_args or [], first)
    finally:
        rep.close()


def feed_stdin(trace: Path, fifo: Path) -> Path:
    """A FIFO that gives every (re)started program the recorded stdin again."""
    os.mkfifo(fifo, 0o600)

    def pump() -> None:
        while True:
            try:
                with open(fifo, "wb") as w, Trace(trace) as tr:  # blocks until a run opens it
                    for chunk in tr.stdin_chunks():
                        w.write(chunk)
            except (OSError, DetError):
                pass  # the run ended before reading everything: the next one starts over

    threading.Thread(target=pump, daemon=True).start()
    return fifo


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
