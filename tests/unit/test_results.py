"""Results said by value (det.results): a descriptor, a count, CPUs, 0;
an errno name only for a failure, as each kind encodes it in events.def
(pthread style: the error number; -errno; a value that is never an error).
detdiff and dettui say results with the same function."""

from __future__ import annotations

import errno

from det import events as ev
from det.compare.difftext import result_text as diff_result_text
from det.results import ERROR_NUMBER_KINDS, MINUS_ERRNO_KINDS, result_text


def test_successful_results_are_values() -> None:
    assert result_text(ev.SYSCONF, 2) == "2"           # CPUs (was ENOENT)
    assert result_text(ev.FD_OPEN, 3) == "3"           # a descriptor (was ESRCH)
    assert result_text(ev.CC_YIELD, 2) == "2"          # a counter
    assert result_text(ev.READ, 16) == "16"            # a count
    assert result_text(ev.SYSCONF, -1) == "-1"         # sysconf's "no limit": a value
    assert result_text(ev.SIGNAL, -6) == "-6"          # a signal's si_code


def test_failures_are_errno_names() -> None:
    assert result_text(ev.FD_OPEN, -errno.EMFILE) == "EMFILE"
    assert result_text(ev.MUTEX_TRYLOCK, errno.EBUSY) == "EBUSY"
    assert result_text(ev.SEM_TIMEDWAIT, -errno.ETIMEDOUT) == "ETIMEDOUT"
    assert result_text(ev.WRITE, -errno.EAGAIN) == "EAGAIN"
    assert result_text(ev.BARRIER_DEPART, -1) == "serial"
    assert result_text(ev.ONCE, 1) == "ran the init routine"


def test_every_kind_is_classified_once_and_tools_share_it() -> None:
    assert not ERROR_NUMBER_KINDS & MINUS_ERRNO_KINDS
    for e in ev.EVENTS:
        assert result_text(e.name.lower(), 0) == "0"
        assert diff_result_text(e.name.lower(), 3) == result_text(e.number, 3)
