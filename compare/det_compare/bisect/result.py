"""The results of a bisection: plain dataclasses, the verdicts of a replay,
and the error every refusal raises.

Rules: data only; det.compare.bisect.report turns a BisectResult into text, and
to_json() into detdiff --json's object.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from det.errors import DetError

from ..diff import EventRef, TraceSummary

# Verdicts of one replay.
FAILS = "fails"                   # the outcome matches FAIL's: the bug happened
ANOTHER_PATH = "another path"     # a thread did something else than its next recorded event
IMPOSSIBLE = "impossible"         # a synchronization call could not return what FAIL recorded
OTHER_OUTCOME = "other outcome"   # the recorded events, but another exit status or output
STALLED = "stalled"               # no event for too long
STOPPED = "stopped"               # det stopped the program
VERDICTS = (FAILS, ANOTHER_PATH, IMPOSSIBLE, OTHER_OUTCOME, STALLED, STOPPED)
# The verdicts of a replay that ran its events to an end other than FAIL's:
# only these pass. A stalled or stopped replay, or an impossible order, is
# neither a pass nor a failure, and never confirms a pair.
PASSES = (ANOTHER_PATH, OTHER_OUTCOME)


class BisectError(DetError):
    """The traces cannot be bisected."""


@dataclass
class Step:
    """One schedule judged."""

    label: str               # what the schedule is
    stage: str               # control | H | G | move
    replay: int              # the replay that judged it (numbered from 1, as the kept files)
    repeated: bool           # the same order as that earlier replay: not replayed again
    verdict: str             # one of VERDICTS
    detail: str              # what detreplay said
    exit_status: int


@dataclass
class Move:
    """B with one pair swapped: the confirmation of the pair.

    The schedule is B up to Z, then X's thread's events from Z's position on
    up to X, then the rest in B's order as far as the objects allow."""

    label: str
    moved: list[EventRef]    # the events that move
    direction: str           # "before" or "after" ...
    anchor: EventRef         # ... this event
    jumped: int              # events they move over
    pairs_reordered: int     # pairs of events ordered differently from B (1: one adjacent swap)
    verdict: str
    detail: str


@dataclass
class BisectResult:
    a: TraceSummary          # PASS
    b: TraceSummary          # FAIL
    events: int              # events in the hybrids: B's, plus A's borrowed ones
    borrowed: dict[str, int]  # "T0" -> events borrowed from A for a thread B cut short
    fail_status: int         # B's exit status: what detreplay exits with when a hybrid fails
    replays: int             # real detreplay runs
    steps: list[Step]
    found: bool              # a pair was isolated: B with it swapped passes, B as recorded fails (both replayed)
    confirmed: bool          # the same as found (kept for readers of older results)
    answer: str              # "pair": found; "none": no single pair flips it (message says why);
                             # "inconclusive": the replay budget ran out first
    first: EventRef | None   # the critical pair in B's order: this runs first in B ...
    second: EventRef | None  # ... and running this before it makes the run pass
    move: Move | None
    pass_order: str | None   # how A orders the same two operations
    stacks: dict[str, list[EventRef]]   # "T1" -> its last events up to its critical one (recorded call sites)
    message: str
    closest: list[EventRef] = field(default_factory=list)   # no pair found: the nearest candidate tried (Z, X)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
