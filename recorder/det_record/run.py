"""detrun: run a program deterministically, in logical time, keeping no trace.

    detrun [--seed S] [--timeout S] [--] PROGRAM [ARGS...]
    detrun --isolated [--timeout S] [--] PROGRAM [ARGS...]

Threads run in parallel and synchronize in an order fixed by logical clocks
(replayer/logical.c): the same program with the same input synchronizes the
same way, and prints the same, on every run; --seed S picks another order,
again the same on every run. It is `detrec --logical` without the trace: the
runtime's log is never read, so it costs no drain (to keep a trace, for
replay, stepping or diffing, use `detrec --logical`).

--isolated runs each thread as a process with a private copy of the
program's globals and heap, committed at every pthreads call in a fixed
turn order (DTHREADS; isolated/, build/libdetiso.so preloaded instead of
libdet.so): racy programs too print the same on every run, and two threads
writing one byte between the same two commits is reported ("race: ...").
To keep a trace of such a run (replay, dump, diff, dettui): detrec --isolated.

Rules: the program's output goes where it would natively; detrun prints
only its own errors. Exit status: the program's, as a shell reports it; 124
when --timeout stopped it; 125 when det had to stop it; 2 for bad usage.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time

from det import __version__
from det.constants import DET_F_LOGICAL, DET_F_NOTRACE, DET_F_STRICT
from det.errors import DetError
from det.launch import EXIT_STOPPED, EXIT_TIMEOUT, Program, describe_status, resolve_program, shell_status
from det.native import libdir

from .atomics import patched_env
from .engine import INTERRUPT, Options
from .native import Recorder

NOTRACE_RING = 1024  # entries per thread: the rings are written and never read


def run_logical(exe: str, argv: list[str], opts: Options) -> int:
    """Run the program in logical time with no trace; its exit status, as a
    shell reports it (124: timeout, 125: det stopped it)."""
    rec = Recorder(opts.max_threads, opts.max_threads, NOTRACE_RING, opts.objects)
    try:
        rec.add_flags(DET_F_STRICT | DET_F_LOGICAL | DET_F_NOTRACE)
        rec.schedule(opts.quantum, opts.watchdog_ms, opts.seed, opts.delay_us)
        prog = Program(exe, argv, dict(opts.env or os.environ), os.getcwd(), rec.fd, True, None)
        prog.region = rec
        with INTERRUPT.lock:
            INTERRUPT.programs.add(prog)
        deadline = None if opts.timeout is None else time.monotonic() + opts.timeout
        rc = None
        timed_out = False
        while rc is None:
            rc = prog.wait(0.2 if deadline is None else max(0.0, min(0.2, deadline - time.monotonic())))
            if rc is None and deadline is not None and time.monotonic() >= deadline:
                timed_out = True
                prog.kill()
                rc = prog.wait()
        prog.wait_others(lambda: timed_out or INTERRUPT.signal is not None)
        prog.outputs()
        failure = rec.failed()
    finally:
        rec.close()
    if failure:
        say(f"det stopped the program: {failure}")
        return EXIT_STOPPED
    if timed_out:
        say(f"timeout after {opts.timeout:g} s")
        return EXIT_TIMEOUT
    if rc < 0 and INTERRUPT.signal is None:
        say(describe_status(rc))
    return shell_status(rc)


def run_isolated(exe: str, argv: list[str], timeout: float | None) -> int:
    """Run the program under libdetiso.so (isolated/): its exit status, as a
    shell reports it (124: timeout)."""
    lib = libdir() / "libdetiso.so"
    if not lib.exists():
        raise DetError(f"{lib} is missing: run `make` first", status=2)
    env = dict(os.environ)
    prior = env.pop("LD_PRELOAD", "")
    env["LD_PRELOAD"] = str(lib) + (":" + prior if prior else "")
    env["LD_BIND_NOW"] = "1"  # no lazy binding: the GOT is in the isolated globals
    # its own process group: a timeout ends every thread-process
    proc = subprocess.Popen([exe] + argv[1:], executable=exe, env=env, process_group=0, stderr=subprocess.PIPE)
    names = threading.Thread(target=name_race_sites, args=(proc.stderr, exe), daemon=True)
    names.start()
    try:
        rc = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        names.join(5)
        say(f"timeout after {timeout:g} s")
        return EXIT_TIMEOUT
    except KeyboardInterrupt:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    names.join(5)
    if rc < 0:
        say(describe_status(rc))
    return shell_status(rc)


EXE_SITE = re.compile(rb"\S*\{exe:(0x[0-9a-f]+)\}")


def name_race_sites(stream, exe: str) -> None:
    """Copy the program's stderr to ours, line by line, with each place in
    the program's code libdetiso.so names ("racer+0x3d{exe:0x11d9}") given
    its function and source line (det.symbols, addr2line)."""
    sym: list = []  # made at the first race line (det.symbols: imported only then)

    def site(m: re.Match[bytes]) -> bytes:
        if not sym:
            from det.symbols import Symbolizer

            sym.append(Symbolizer([(exe, 0)]))
        return sym[0].one(int(m.group(1), 16), False).long().encode()

    for line in iter(stream.readline, b""):
        if EXE_SITE.search(line):
            line = EXE_SITE.sub(site, line)
        sys.stderr.buffer.write(line)
        sys.stderr.buffer.flush()


def say(msg: str) -> None:
    print(f"detrun: {msg}", file=sys.stderr, flush=True)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="detrun",
        description="Run a multithreaded program deterministically (logical time), keeping no trace.",
        epilog="Exit status: the program's (128+N for signal N), 124 when --timeout stopped it, 125 when det "
               "stopped it, 2 for bad usage.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s (det) {__version__}")
    p.add_argument("--isolated", action="store_true",
                   help="threads as processes with private memory, committed in a fixed order at each pthreads "
                        "call (DTHREADS); write-write races reported")
    p.add_argument("--seed", type=int, metavar="S", help="another deterministic order (a positive number)")
    p.add_argument("--timeout", type=float, metavar="S", help="stop the program after S seconds")
    p.add_argument("--no-patch-atomics", action="store_true",
                   help="leave the atomic instructions of the program's own code to the CPU (by default each is an "
                        "event in the logical order; a program that synchronizes with them is deterministic only so)")
    p.add_argument("--max-threads", type=int, default=4096, metavar="N", help="threads a run may create (default 4096)")
    p.add_argument("program", help="the program to run").complete = "command"
    p.add_argument("args", nargs=argparse.REMAINDER, help="its arguments")
    return p


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = build_parser()
    ns = p.parse_args(argv)
    if ns.seed is not None and ns.seed <= 0:
        p.error("--seed must be a positive number")
    if ns.isolated and ns.seed is not None:
        p.error("--isolated has one order: --seed does not apply")
    if ns.timeout is not None and ns.timeout <= 0:
        p.error("--timeout needs a positive number of seconds")
    if not 1 <= ns.max_threads <= 65535:
        p.error("--max-threads must be between 1 and 65535")
    return ns


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        ns = parse_args(argv)
        exe = resolve_program(ns.program)
        if ns.isolated:
            return run_isolated(exe, [ns.program] + ns.args, ns.timeout)
        opts = Options(timeout=ns.timeout, max_threads=ns.max_threads, strict=True, logical=True, seed=ns.seed or 0)
        opts.env = patched_env(exe, ns.program, "logical", opts.env, say, opt_out=ns.no_patch_atomics,
                               quiet=True) or opts.env
        INTERRUPT.install()
        return run_logical(exe, [ns.program] + ns.args, opts)
    except DetError as e:
        say(str(e))
        return e.status
    except KeyboardInterrupt:
        say("interrupted")
        return 130

if __name__ == "__main__":
    sys.exit(main())
