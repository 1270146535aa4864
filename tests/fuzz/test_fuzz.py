"""Damaged traces: 1000 seeded mutations of real traces through every tool
(tests/fuzz/fuzz_traces.py; `make fuzz` runs 100000). No traceback, no
hang, and no "matches" or "Identical" on a mutation that changed what replay
enforces. Damaged capture logs: 80 seeded mutations of real logs through
every tool that reads one (tests/fuzz/fuzz_logs.py; `make fuzz` runs
10000). No traceback, crash or hang, errors in one line, no log lost."""

from __future__ import annotations

import fuzz_logs
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


LOG_MUTATIONS = 80


def test_log_mutations_through_every_tool() -> None:
    # (the tools that salvage by themselves take turns: every one reads a log
    # that way, and the run stays short)
    s = fuzz_logs.run(LOG_MUTATIONS, SEED, jobs=2, quiet=True, every_tool=False)
    assert s.mutations == LOG_MUTATIONS
    # The mutations must reach both sides, and past the chunks' checksums:
    # logs salvaged, and logs refused for their META chunk and for what a
    # chunk holds.
    assert s.salvaged > LOG_MUTATIONS // 4 and s.why.get("META", 0) and s.why.get("contents", 0), \
        fuzz_logs.report(s, SEED)
    assert not s.findings, fuzz_logs.report(s, SEED)
