"""detrec --follow's last line about its replica says what the replica
did: all the recorded events, or how many of them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from det.record.replica import Replica


def finished_replica(tmp_path: Path, status: dict[str, object], standby: float = 0.0) -> Replica:
    """A Replica whose detreplay has ended with this status (a stand-in
    process that exited 0: none is started); with standby, one that holds
    (a stand-in that sleeps)."""
    rep = object.__new__(Replica)
    rep.dir = tmp_path / "follow"
    rep.dir.mkdir()
    rep.status_path = rep.dir / "status.json"
    rep.status_path.write_text(json.dumps(status))
    rep.standby = standby
    rep.proc = subprocess.Popen(["sleep", "30"] if standby else ["true"])
    if not standby:
        rep.proc.wait()
    rep.said = False
    rep.at_end = None
    return rep


LAG = {"max_lag_events": 3, "max_lag_s": 0.01, "mean_lag_s": 0.005}


def test_a_replica_that_did_every_event_followed_all(tmp_path: Path) -> None:
    rep = finished_replica(tmp_path, {"state": "done", "done": 6, "captured": 6, "returncode": 0, **LAG})
    assert rep.finish(0).startswith("replica followed all 6 events: lag at most 3 events")


def test_a_replica_that_did_fewer_events_says_how_many(tmp_path: Path) -> None:
    rep = finished_replica(tmp_path, {"state": "done", "done": 5, "captured": 6, "returncode": 0, **LAG})
    line = rep.finish(0)
    assert line.startswith("replica ended after 5 of 6 events: it did not follow them all"), line


def test_a_standby_that_holds_a_crash_says_how_to_look_at_it(tmp_path: Path) -> None:
    status = {"state": "holding", "done": 6, "captured": 6, "held_at": "fault", "fault_thread": 1,
              "fault_signal": "SIGSEGV", **LAG}
    rep = finished_replica(tmp_path, status, standby=600)
    try:
        pid = rep.proc.pid
        assert rep.finish(-11) == (
            "replica holds the program's state at the recording's last event (T1 stopped at the SIGSEGV the program "
            f"died of), 6 of 6 events: `detreplay --follow --gdb {pid}` attaches gdb to it; it ends in 600 s, or "
            f"with `kill {pid}`")
        assert rep.proc.poll() is None and rep.status_path.exists()  # (left holding, its directory kept)
    finally:
        rep.proc.kill()
        rep.proc.wait()


def test_a_standby_of_a_program_that_ended_well_is_an_ordinary_end(tmp_path: Path) -> None:
    rep = finished_replica(tmp_path, {"state": "done", "done": 6, "captured": 6, "returncode": 0, **LAG})
    rep.standby = 600
    assert rep.finish(0).startswith("replica followed all 6 events: lag at most 3 events")
