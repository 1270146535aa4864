"""dethunt on a Dask cluster that the test starts itself: a scheduler and
two workers on localhost (ports chosen by the system). Every seed gives the
same run on the cluster as on this machine (merged by seed: same kinds,
same schedule hashes), the kept traces come back and replay, and the
workers' scratch directories are gone afterwards."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import BIN, detreplay, outcome, program, run

DASK = BIN / "dask"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Path]:
    if not DASK.exists():
        pytest.fail(f"{DASK} is missing: Dask distributed is a dev dependency (run `make`)", pytrace=False)
    sched_file = tmp_path / "scheduler.json"
    logs = tmp_path / "logs"
    logs.mkdir()
    procs: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> None:
        log = open(logs / f"{name}.log", "wb")  # noqa: SIM115 (closed with the process)
        procs.append(subprocess.Popen([str(DASK), *args], stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True))

    try:
        start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
              "--scheduler-file", str(sched_file))
        deadline = time.monotonic() + 60
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sched_file.exists(), (logs / "scheduler.log").read_text()
        for i in (1, 2):
            start(f"worker{i}", "worker", "--scheduler-file", str(sched_file), "--host", "127.0.0.1",
                  "--nthreads", "1", "--no-dashboard", "--name", f"w{i}")
        workers = [logs / f"worker{i}.log" for i in (1, 2)]
        while time.monotonic() < deadline and not all(b"Registered to" in w.read_bytes() for w in workers):
            time.sleep(0.2)
        assert all(b"Registered to" in w.read_bytes() for w in workers), [w.read_text() for w in workers]
        yield sched_file
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def test_hunt_on_a_local_dask_cluster(tmp_path: Path, cluster: Path) -> None:
    once = tmp_path / "once"
    env = dict(os.environ, FAIL_ONCE=str(once))
    args = ["--strict", "--runs", "40", "--seed", "1", "--pct-k", "20"]
    before = set(Path(tempfile.gettempdir()).glob("det-hunt-*"))
    remote = tmp_path / "remote"
    r = run([BIN / "dethunt", "--cluster-file", cluster, "-o", remote, *args, program("fail_kinds")],
            env=env, timeout=600)
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert "2 Dask worker(s)" in err, err
    rs = json.loads((remote / "summary.json").read_text())
    assert rs["runs"] == 40, err

    once.unlink()
    local = tmp_path / "local"
    r = run([BIN / "dethunt", "-j", "2", "-o", local, *args, program("fail_kinds")], env=env, timeout=600)
    ls = json.loads((local / "summary.json").read_text())
    assert r.returncode == 1, r.stderr.decode()

    # merged by seed: the same runs, whichever machine ran them, but for the
    # one run of each hunt that found FAIL_ONCE's file missing (exit 4): the
    # runs under way at once race for it
    def by_seed(s: dict) -> dict[int, tuple]:
        return {x["seed"]: (x["kind"], x["schedule"], x["events"]) for x in s["by_seed"]}

    r_seeds, l_seeds = by_seed(rs), by_seed(ls)
    r_once = [seed for seed, v in r_seeds.items() if v[0] == "exit 4"]
    l_once = [seed for seed, v in l_seeds.items() if v[0] == "exit 4"]
    assert len(r_once) == 1 and len(l_once) == 1, (r_once, l_once)
    assert r_seeds.keys() == l_seeds.keys() == set(range(1, 41))
    others = r_seeds.keys() - set(r_once) - set(l_once)
    assert {s: r_seeds[s] for s in others} == {s: l_seeds[s] for s in others}
    assert rs["distinct_schedules"] > 1 and ls["distinct_schedules"] > 1
    # the kept traces came back from the workers, with a passing partner each;
    # each kind's is its lowest seed's
    for name, k in rs["kinds"].items():
        fail, passing = Path(k["trace"]), Path(k["passing"])
        assert fail.parent == remote and (fail.stat().st_mode & 0o777) == 0o600
        assert outcome(passing)["exit_code"] == 0
        assert k["first_seed"] == min(s for s, v in r_seeds.items() if v[0] == name)
        if name != "exit 4":
            once.touch()
            for _ in range(3):
                rr = detreplay(fail, env=env)
                assert "outcome matches" in rr.stderr.decode(), rr.stderr.decode()
    # nothing left behind on the workers (same machine: same temp directory)
    assert set(Path(tempfile.gettempdir()).glob("det-hunt-*")) == before


def test_cluster_errors_are_one_line(tmp_path: Path) -> None:
    r = run([BIN / "dethunt", "--cluster", "tcp://127.0.0.1:1", "--runs", "2", "-o", tmp_path / "h",
             program("fail_kinds")], timeout=120)
    err = r.stderr.decode()
    assert r.returncode != 0 and "cannot reach the Dask scheduler" in err and "Traceback" not in err, err
