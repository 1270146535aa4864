"""det's gdb extension: step threads through a recorded interleaving.

Loaded by `detreplay --gdb` (replayer/det_replay/gdb.py), which starts gdb
with an init script that imports this package and calls
`start_or_say(CONFIG.json)`; by `detreplay --follow --gdb`
(replayer/det_replay/follow_gdb.py), which attaches gdb to a live replica
and calls `attach_or_say(CONFIG.json)` (det_gdb.live). It defines the `det` commands (`help det`),
stops the replaying program at recorded events and keeps gdb's own commands
(breakpoints, watchpoints, continue, next, bt, info threads) working inside
the enforced schedule.

The package: session (the replay under gdb and how it moves the program),
live (gdb attached to a live replica),
frames (whose code a frame is in), output (the program's output, shown
once), args (the commands' arguments), pointers
(names for heap objects), reexec (going back by re-execution), snapshots
(the snapshots a re-execution resumes), registry
(@command: the one list of commands), commands/ (one module per command);
det_gdb_model (beside it) is what needs no gdb.
This file: start-up and the hooks gdb's own commands run.

Rules of this package:
  - No inferior function calls, ever: they fail under gdb 13 on CPUs with
    AMX ("Couldn't write extended state status") and would perturb the
    replay. Only memory reads and writes through gdb expressions.
  - Standard library and det's stdlib-only modules only (gdb's Python is the
    system python3); capstone and pyelftools are optional, for `det disas`
    (det.disasm).
  - Every user error is a gdb.GdbError with one line; no traceback reaches
    the user.
  - No module of the package takes a name from this file (it starts
    everything): gdb's hooks call det_gdb.step_hook() and
    det_gdb.after_thread_command() by name.
"""

from __future__ import annotations

import json
import os
import shlex
import sys

import gdb

from det_gdb import commands, live, session
from det_gdb.frames import frame_kind, user_frame, where
from det_gdb.output import Relay
from det_gdb.pointers import pointer_expression
from det_gdb.session import model_module


def after_thread_command() -> None:
    """Run by gdb's hookpost-thread: `thread N` selects N's frame in the program's code."""
    s = session.SESSION
    if s is None or not s.alive():
        return
    try:
        if frame_kind(gdb.selected_frame()) != "det":
            return
        f = user_frame()
    except gdb.error:
        return
    if f is not None and f != gdb.selected_frame():
        f.select()
        num = s.det_num()
        who = f"T{num}" if num is not None else "this thread"
        print(f"det: {who} is in {where(f)} (frame #{f.level()}; `set det show-frames on` shows det's frames)")
        print(gdb.execute("frame", to_string=True).rstrip("\n"))


def _stop_handler(event: gdb.StopEvent) -> None:
    if session.SESSION is not None:
        session.SESSION.on_stop(event)


def _exit_handler(event) -> None:
    if session.SESSION is not None:
        session.SESSION.on_exited(event)


def step_hook() -> None:
    """Run by gdb's hook-next/hook-step/hook-until/hook-advance (see start)."""
    if session.SESSION is not None:
        session.SESSION.step_out_of_det()
    elif live.REPLICA is not None:
        live.step_out_of_det()


def gdb_quote(s: str) -> str:
    return s if s and all(c.isalnum() or c in "/._-+,:@" for c in s) else '"' + s.replace('"', '\\"') + '"'


def start(config_path: str) -> None:
    """Set gdb up for the replay described by config_path and stop at the first event."""
    with open(config_path, encoding="utf-8") as f:
        cfg = json.load(f)
    for p in reversed(cfg.get("pythonpath", [])):
        if p not in sys.path:
            sys.path.insert(0, p)
    try:
        s = session.Session(cfg)
    except Exception as e:  # noqa: BLE001 - det.errors.DetError and sqlite/OS errors: one line, no traceback
        raise gdb.GdbError(f"det: {e}") from None
    session.SESSION = s
    s.model.names.live = pointer_expression
    # (gdb 13's gdb.parameter("inferior-tty") says '' for a --tty given on the command line)
    said = gdb.execute("show inferior-tty", to_string=True)
    tty = said[said.find('"') + 1:said.rfind('"')] if said.count('"') >= 2 else ""
    try:
        shown_on = os.open(tty, os.O_WRONLY | os.O_NOCTTY) if tty else None
    except OSError as e:
        raise gdb.GdbError(f"det: {tty}: cannot show the program's output there ({e.strerror})") from None
    s.output = Relay(shown_on)
    if shown_on is not None:
        os.close(shown_on)  # (the relay keeps its own copy)
    args = [*cfg["exec_wrapper"], "--out", s.output.stdout_path, "--err", s.output.stderr_path]
    wrapper = " ".join(shlex.quote(a) for a in args)
    for cmd in ("set startup-with-shell on", f"set exec-wrapper {wrapper}", "set breakpoint pending on",
                f"file {gdb_quote(cfg['binary'])}"):
        gdb.execute(cmd, to_string=True)
    # det's own sources are not the user's: `step` does not enter them.
    for pat in cfg.get("skip_files", []):
        gdb.execute(f"skip -gfile {pat}", to_string=True)
    for cmd in ("next", "step", "until", "advance"):
        gdb.execute(f"define hook-{cmd}\npython det_gdb.step_hook()\nend", to_string=True)
    gdb.execute("define hookpost-thread\npython det_gdb.after_thread_command()\nend", to_string=True)
    gdb.events.stop.connect(_stop_handler)
    gdb.events.exited.connect(_exit_handler)
    gdb.events.gdb_exiting.connect(lambda _event: s.output.drain())
    commands.register()
    s.make_breakpoints()
    m = s.model
    print(f"det: replaying {cfg['trace']}: {m.meta.get('binary')}, {m.total} events, {len(m.threads)} threads, "
          f"{s.mode} replay; recorded: {m.recorded_end()}")
    print(f"det: {s.mode} replay: {model_module().REPLAY_MODES.get(s.mode, s.mode)}")
    print("det: `help det` lists det's commands")
    env = m.meta.get("env")
    sites = env.get("_DET_ATOMIC_SITES") if isinstance(env, dict) else None  # check/det_check/patch.py SITES_ENV
    if sites:
        # under gdb det traps them with ud2 (preload/trapped_atomics.c): its SIGILLs go to det unseen
        gdb.execute("handle SIGILL nostop noprint pass", to_string=True)
        n = sites.count(",") + 1
        print(f"det: the program's {n} atomic instruction{'s' if n != 1 else ''} of its own code are det's events: "
              "under gdb det traps each with SIGILL, which gdb passes on without stopping (a SIGILL of the "
              "program's own too: `handle SIGILL stop` to see one)")
    goto = cfg.get("goto")
    if goto is None:
        s.resume(session.Goal("the first event", seq=m.first, first=True, honor=False) if m.total
                 else session.Goal("the start", first=True, end=True, honor=False))
    else:
        s.goto(int(goto))


def start_or_say(config_path: str) -> None:
    """start(), with any failure said in one line (the init script's entry)."""
    try:
        start(config_path)
    except gdb.GdbError as e:
        print(str(e) if str(e).startswith("det:") else f"det: {e}", file=sys.stderr)
    except (OSError, ValueError, KeyError) as e:
        print(f"det: cannot start the replay: {e}", file=sys.stderr)


def attach_or_say(config_path: str) -> None:
    """The init script's entry when gdb attached to a live replica: det's
    commands defined, where the replica is said; a failure in one line."""
    try:
        with open(config_path, encoding="utf-8") as f:
            cfg = json.load(f)
        for p in reversed(cfg.get("pythonpath", [])):
            if p not in sys.path:
                sys.path.insert(0, p)
        commands.register()
        live.start(cfg)
    except gdb.GdbError as e:
        print(str(e) if str(e).startswith("det:") else f"det: {e}", file=sys.stderr)
    except (OSError, ValueError, KeyError, gdb.error) as e:
        print(f"det: cannot look at the replica: {e}", file=sys.stderr)
