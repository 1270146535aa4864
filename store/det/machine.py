"""What a recording depends on in the machine itself: the architecture, the
CPU's features and the kernel; compared at replay on another machine.

Rules: standard library only; reading never fails (an unreadable
/proc/cpuinfo gives no flags, and then nothing is claimed about them).
"""

from __future__ import annotations

import functools
import os  # (os.uname(), not platform: platform costs detrec start-up time)
from typing import Any


def cpu() -> tuple[str, list[str]]:
    """(model name, feature flags) of the first CPU in /proc/cpuinfo."""
    model, flags = _cpu()
    return model, list(flags)


@functools.cache
def _cpu() -> tuple[str, tuple[str, ...]]:
    """Read once per process (a hunt records many runs on one machine)."""
    model, flags = "", []
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and not model:
                    model = value.strip()
                elif key == "flags":
                    flags = sorted(value.split())
                    break
    except OSError:
        pass
    return model, tuple(flags)


def describe() -> dict[str, Any]:
    """The trace's meta keys for this machine."""
    model, flags = cpu()
    return {"machine": os.uname().machine, "cpu_model": model, "cpu_flags": " ".join(flags)}


def differences(meta: dict[str, Any]) -> list[str]:
    """What this machine lacks, or has differently, compared with the recording's (one phrase each)."""
    out = []
    here = describe()
    arch = meta.get("machine")
    if arch and arch != here["machine"]:
        out.append(f"recorded on {arch}, this machine is {here['machine']}")
    rec_flags = set((meta.get("cpu_flags") or "").split())
    missing = sorted(rec_flags - set(here["cpu_flags"].split())) if here["cpu_flags"] else []
    if missing:
        shown = " ".join(missing[:12]) + (f" and {len(missing) - 12} more" if len(missing) > 12 else "")
        out.append(f"this CPU ({here['cpu_model'] or '?'}) lacks features the recording CPU "
                   f"({meta.get('cpu_model') or '?'}) had: {shown}; code that uses them dies of SIGILL, and "
                   "libraries that pick their code by CPU (glibc's string functions) may take other paths")
    kernel = meta.get("kernel")
    if kernel and kernel != os.uname().release:
        out.append(f"recorded on Linux {kernel}, replaying on {os.uname().release}")
    return out
