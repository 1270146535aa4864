"""How a det command's process ends: without the interpreter's teardown.

Freeing every module and object at exit costs a command ~10-25 ms of CPU
(measured on `detrec -q -- /bin/true`, issue 25's start-up target), for
nothing: the process is about to go. end_command() does what an exit must
(threads that are not daemons joined, atexit handlers, which also remove
tempfile's directories; the standard streams flushed) and leaves with os._exit.

Rules: only a command's console entry point calls it, with the status its
main() returned (a main() called in-process, as tests do, returns as
before). Nothing det writes is left to a destructor: files are written in
`with` blocks. A stream that cannot be flushed (a closed pipe) is
left to the interpreter's usual end, which reports it as it always did.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import NoReturn


def end_command(status: int) -> NoReturn:
    """Exit with status (a command's main()'s), skipping the interpreter's teardown."""
    if not isinstance(status, int):  # (what sys.exit makes of anything else, it makes)
        sys.exit(status)
    # as the interpreter's end does, in its order: wait for the threads that are not daemons
    # (and a thread pool's workers, threading's own exit callbacks), then the atexit handlers
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()
    atexit._run_exitfuncs()
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        sys.exit(status)
    os._exit(status)
