"""det_exec: gdb's exec-wrapper for a det replay.

    python3 -I -S det_exec.py SPEC.json [--out PATH] [--err PATH] [anything gdb appends]

gdb (with `set startup-with-shell on` and `set exec-wrapper`) runs this
between its shell and the program. It starts the recorded program exactly
as det.launch.Program does: the recorded argv (argv[0] included), the
recorded environment in its recorded order followed by det's variables, the
recorded working directory, the recorded binary (for a packed trace, in the
root detreplay made, chroot'ed there). gdb itself can do none of
these exactly: without a shell it splits arguments at spaces and passes its
own path as argv[0]; its inferior environment gains LINES and COLUMNS and
loses nothing that is unset before; the shell adds PWD, SHLVL and `_`.

Rules of this file:
  - Standard library only, no site import (-S): it runs on every (re)start.
  - Exactly one exec and no fork (gdb counts the execs of its start-up
    sequence and traces this process), no output unless the exec fails.
  - Whatever gdb appends to the command line (the program and the `run`
    arguments) is ignored: the spec is the only source of truth.
  - --out/--err: the program's stdout/stderr (det_gdb/output.py's channels,
    which show the program's output once however often a replay goes back).
"""

from __future__ import annotations

import json
import os
import sys


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("det_exec: usage: det_exec.py SPEC.json", file=sys.stderr)
        return 127
    try:
        with open(argv[1], encoding="utf-8") as f:
            spec = json.load(f)
        # The recorded stdin: a file at its recorded offset, or the FIFO
        # detreplay fills with what the program read from a pipe.
        if "stdin_file" in spec:
            path, offset = spec["stdin_file"]
            fd = os.open(path, os.O_RDONLY)
            os.lseek(fd, offset, os.SEEK_SET)
            os.dup2(fd, 0)
            os.close(fd)
        elif "stdin_fifo" in spec:
            fd = os.open(spec["stdin_fifo"], os.O_RDONLY)
            os.dup2(fd, 0)
            os.close(fd)
        # The output channels (opened before a chroot hides them).
        rest = argv[2:]
        while len(rest) >= 2 and rest[0] in ("--out", "--err"):
            fd = os.open(rest[1], os.O_WRONLY | os.O_NOCTTY)
            os.dup2(fd, 1 if rest[0] == "--out" else 2)
            os.close(fd)
            rest = rest[2:]
        # A packed trace: the program sees its packed files at their recorded
        # paths in this root (det.replay.view), where cwd and exe are.
        if spec.get("root"):
            os.chroot(spec["root"])
        os.chdir(spec["cwd"])
        # A list of pairs keeps the recorded order (json objects would too,
        # but pairs say so).
        env = {k: v for k, v in spec["env"]}
        os.execve(spec["exe"], spec["argv"], env)
    except (OSError, ValueError, KeyError) as e:
        print(f"det_exec: cannot start the recorded program: {e}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv))
