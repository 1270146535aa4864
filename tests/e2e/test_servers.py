"""Real servers, recorded under a bounded load and replayed (issue 22):
nginx (thread pool; master + two workers) and memcached (tests/servers.py
starts, loads and stops them). Each recording is replayed in the default,
relaxed and strict modes and under gdb, and every replay must reach the
recorded end with the recorded outcome. `make stress` replays them many
more times (tests/stress)."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import pytest
from servers import SERVERS, check_recording, record, replays_to_the_end, server_dir

from conftest import gdb_batch, marks, outcome

REPLAYS = {"default": 3, "relaxed": 2, "strict": 2}


@pytest.fixture(scope="module", params=sorted(SERVERS))
def recorded(request: pytest.FixtureRequest) -> dict[str, Path]:
    """The server recorded in the default mode and in strict mode."""
    srv = SERVERS[request.param]
    stack = ExitStack()
    request.addfinalizer(stack.close)
    out = {}
    for mode in ("default", "strict"):
        d = stack.enter_context(server_dir(f"{srv.name}-{mode}"))
        trace, took = record(srv, d, *(["--strict"] if mode == "strict" else []))
        check_recording(srv, d, trace, took)
        out[mode] = trace
    return out


@pytest.mark.parametrize("mode", sorted(REPLAYS))
def test_server_replays(recorded: dict[str, Path], mode: str) -> None:
    trace = recorded["strict" if mode == "strict" else "default"]
    for _ in range(REPLAYS[mode]):
        replays_to_the_end(trace, *(["--relaxed"] if mode == "relaxed" else []))


def test_server_under_gdb_goes_into_a_request(recorded: dict[str, Path]) -> None:
    """det goto an event in the middle of the load (a request being served),
    then on to the recorded end."""
    for mode in ("default", "strict"):
        trace = recorded[mode]
        mid = outcome(trace)["events"] // 2
        out = gdb_batch(trace, f"det goto {mid}", 'printf "@ev %d %d\\n", $det_event, $det_thread', "bt 3",
                        "det goto end", 'printf "@ev %d %d\\n", $det_event, $det_thread', timeout=600)
        evs = marks(out, "ev")
        assert len(evs) == 2 and evs[0][0] == mid, out[-3000:]
        assert "divergence" not in out, out[-3000:]
