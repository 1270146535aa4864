"""Before a recording starts: the atomic instructions of the program's own
code, patched to be events (preload/trapped_atomics.c) unless the user
opts out, found by detcheck's quick part (det.check.quick, cached per
build); and the one line for what the mode will not see. detrec, dethunt
and detrun share it.

Rules: never fails a recording unless the user asked for the patching by
name (--patch-atomics) and it cannot be done; says at most two lines, none
when quiet.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from det.errors import DetError


def patched_env(exe: str, program: str, mode: str, env: dict[str, str] | None, say: Callable[[str], None], *,
                opt_out: bool = False, asked: bool = False, quiet: bool = False) -> dict[str, str] | None:
    """The environment to record exe in (env, or this process's), with its
    atomic sites in it; None when there are none to patch (env stands).
    mode: "default", "strict" or "logical", for the line; say: the
    command's own way to say a line."""
    from det.check.quick import known, patch_sites, unseen_line

    found = known(exe)
    if found is None and asked:
        raise DetError("--patch-atomics needs capstone to find the program's atomic instructions", status=2)
    sites = [] if opt_out else patch_sites(found, xchg=asked)
    out = None
    if sites:
        from det.check.patch import SITES_ENV, sites_value

        out = dict(os.environ if env is None else env)
        out[SITES_ENV] = sites_value(sites)
        if not quiet:
            n = len(sites)
            say(f"{program}: {n} atomic instruction{'s' if n != 1 else ''} of its own code patched to be events "
                 "(--no-patch-atomics leaves them to the CPU)")
    left = int(found.get("atomics") or 0) - len(sites) if found else 0
    if not quiet and (line := unseen_line(found, program, mode, left, opt_out)):
        say(line)
    return out
