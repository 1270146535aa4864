"""How an event's result is said: by what the call returned (a descriptor,
a count, CPUs, 0), an errno name only for a failure. Every tool (detrec
dump, dettui, detdiff) says a result with result_text, and detdiff
compares results by it.

Rules: standard library only (gdb's Python imports this module). How a
kind encodes its result comes from events.def (its object kind and its
description), never from a list of kinds kept here by hand beyond the few
whose result is a word.
"""

from __future__ import annotations

import errno

from . import events as ev

# Kinds of these objects return as pthread functions do: 0, or an error
# number (positive); the exceptions below return something else.
_ERROR_NUMBER_OBJECTS = {"THREAD", "MUTEX", "COND", "RWLOCK", "SPIN", "OMP_LOCK", "BARRIER"}
# fork and posix_spawn: a pid, or -errno; a cancellation: calls counted;
# a preemption: no call; barrier_depart: -1 for the serial thread.
_NOT_ERROR_NUMBER = {ev.PROC_FORK, ev.PROC_SPAWN, ev.THREAD_CANCELED, ev.PREEMPT, ev.BARRIER_DEPART}
ERROR_NUMBER_KINDS = frozenset(e.number for e in ev.EVENTS
                               if e.objkind in _ERROR_NUMBER_OBJECTS and e.number not in _NOT_ERROR_NUMBER)
# Results that are a word.
_WORDS = {(ev.BARRIER_DEPART, -1): "serial", (ev.ONCE, 1): "ran the init routine"}
_BY_NAME = {e.name.lower(): e.number for e in ev.EVENTS}
# Kinds that return -errno on failure: their description says so (-errno,
# EAGAIN, -EINTR); semaphores (sem_wait's -1 and errno, kept as one
# number); the reads and sends described as others are. The others'
# results are values (sysconf's -1, a signal's si_code, a counter).
_SAYS_ERRNO = ("errno", "-error", "EAGAIN", "-EINTR")
MINUS_ERRNO_KINDS = frozenset(e.number for e in ev.EVENTS
                              if any(w in e.description for w in _SAYS_ERRNO) or e.objkind == "SEM"
                              or e.number in (ev.PIPE_READ, ev.SOCK_RECV, ev.SEND))


def error_name(code: int) -> str:
    return errno.errorcode.get(code, f"error {code}")


def failed(kind: int, result: int) -> bool:
    """The call failed: an error number (pthread style), or a negative
    result in -errno's range from a call that returns -errno on failure."""
    if kind in ERROR_NUMBER_KINDS:
        return result > 0
    return kind in MINUS_ERRNO_KINDS and -4095 <= result < 0


def result_text(kind: int | str, result: int) -> str:
    """The result of an event of this kind (its number, or its lowercase
    name) as its man page says it: `3`, `0`, `EBUSY`, `serial`."""
    k = _BY_NAME.get(kind, -1) if isinstance(kind, str) else kind
    word = _WORDS.get((k, result))
    if word is not None:
        return word
    if failed(k, result):
        return error_name(result if k in ERROR_NUMBER_KINDS else -result)
    return str(result)
