"""Damaged traces: 1000 seeded mutations of real traces through every tool
(tests/fuzz/fuzz_traces.py; `make fuzz` runs 100000). No traceback, no
hang, and no "matches" or "Identical" on a mutation that changed what replay
enforces."""

from __future__ import annotations

import fuzz_traces

MUTATIONS = 1000
SEED = 8


def test_thousand_mutations_through_every_tool() -> None:
    s = fuzz_traces.run(MUTATIONS, SEED, jobs=2, gdb_every=125, quiet=True)
    assert s.mutations == MUTATIONS
    # The mutations must reach both sides: traces that replay (what they
    # changed is not enforced) and traces refused, and changes of enforced
    # content (which must never replay as a match).
    assert s.changed > MUTATIONS // 5 and s.refused > MUTATIONS // 5 and s.replayed > MUTATIONS // 10, \
        fuzz_traces.report(s, SEED)
    assert not s.findings, fuzz_traces.report(s, SEED)
