"""detdiff --bisect PASS FAIL: the smallest reordering of a failing run that
makes it pass, found by replaying hybrid schedules for real.

A library: det.compare.cli and dettui both call bisect_traces() and get a
BisectResult of plain dataclasses; nothing here prints. One job per module:

  result.py  the results (Step, Move, BisectResult), the verdicts, BisectError
  model.py   the hybrid's events (Ev) and the model of the pthread objects
             that says which event could happen next (Model, State)
  hybrid.py  building hybrids: FAIL's events, PASS's borrowed ones, orders
             completed by the model (Scheduler), counting reorderings
  runner.py  writing an order as a trace file and replaying it with the real
             detreplay; its verdict (Runner, classify)
  search.py  the search: candidate pairs, each tried as one swap of B
  report.py  the result as text (detdiff's rendering)

The rules of the method:
Rules:
 - Standard library and det modules only. Events and objects are matched
   across the two traces by det.compare.diff (thread + index in the thread; objects
   by what they are); this module never matches on its own.
 - Both traces must be complete strict recordings (detrec --strict) of one
   program, PASS passed (exit 0) and FAIL failed. In strict mode a thread's
   code between two of its events runs in the turn of the later one, so a
   total order of the events describes a whole run, data races included,
   and replay enforces it.
 - The events of a hybrid are FAIL's, plus, for a thread the failure cut
   short (FAIL's events of it are the beginning of PASS's), its next events
   from PASS, up to its first output, join, thread creation, input or
   signal, as far as they could run after FAIL's end. In FAIL's own order
   they come last, where FAIL's end cuts them off.
 - Every verdict comes from a real replay: a hybrid is a copy of FAIL (an
   SQLite file, mode 0600, in a private temporary directory) with its events
   renumbered (and PASS's extra events added), replayed by the real
   detreplay. It "fails" when detreplay says the outcome matches FAIL's;
   anything else does not fail, and the report says what happened (another
   path, a call that could not return what was recorded, another outcome, a
   stall). The same order is never replayed twice.
 - Hybrids are built to be possible: a model of the pthread objects (mutex
   owners, rwlocks, barrier rounds, semaphore counts, thread creation order,
   joins, once, condition signals) lets an event run only when the call
   could return what was recorded. The model only chooses orders; replays
   decide.
 - The search, within 10 replays (the control, B as recorded, included):
   candidate pairs (Z, X), Z first in B, from accesses of one object by two
   threads and from code segments (turns) of two threads; those A runs the
   other way round first, then those at a thread's first divergence from
   A, then the rest, each class nearest B's end first; each tried as B with only that pair swapped (B up to Z, X's
   thread's events from there up to X, the rest in B's order as far as the
   model allows). The first that passes is the pair, shrunk to the
   earliest access of its object that must move. When none passes, one
   replay of B's events in A's order says why: the answer is "no single
   pair flips it", with the reason and the closest candidate, or
   inconclusive when the budget ran out first. A "critical pair" is
   reported only when its swap passed.
 - "Stacks" are the recorded call sites (return addresses of the interposed
   calls) of each thread's last events, not unwound stacks.
"""

from __future__ import annotations

from .hybrid import Borrowed, Scheduler, inversions, load_fail
from .model import Ev, Model, State
from .result import (
    ANOTHER_PATH,
    FAILS,
    IMPOSSIBLE,
    OTHER_OUTCOME,
    PASSES,
    STALLED,
    STOPPED,
    VERDICTS,
    BisectError,
    BisectResult,
    Move,
    Step,
)
from .runner import Runner, Verdict, classify, detreplay_command
from .search import Progress, bisect_traces

# The old single module's name, kept for callers (and tests) that use it.
_load_fail = load_fail

__all__ = [
    "ANOTHER_PATH", "FAILS", "IMPOSSIBLE", "OTHER_OUTCOME", "PASSES", "STALLED", "STOPPED", "VERDICTS",
    "BisectError", "BisectResult", "Borrowed", "Ev", "Model", "Move", "Progress", "Runner", "Scheduler", "State",
    "Step", "Verdict", "bisect_traces", "classify", "detreplay_command", "inversions", "load_fail",
]
