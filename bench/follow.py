#!/usr/bin/env python3
"""bench/follow.py (make bench, bench/run.py --only follow): detrec --follow,
a live replica beside the recording (issue 29). For a lock loop, and for
memcached and nginx with a thread pool under the tests' own clients
(tests/servers.py, bounded load): the program's speed natively, recorded,
and recorded with a replica, and the replica's lag (the most, the mean,
where it stood when the load ended and when the program ended).

Rules: as bench/run.py's: medians of alternating runs, targets printed and
never asserted. The servers run twice: nothing pinned (the program, the
replica, detrec's capture and the client share both cores of this machine:
what a replica costs without a core of its own), and pinned apart (server,
detrec and the client, the bench's own threads and ab, on CPU 0, the
replica alone on CPU 1: the target's case, a replica with a core of its
own; every mode of the row runs so, native too).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DETREC = ROOT / ".venv" / "bin" / "detrec"
sys.path.insert(0, str(ROOT / "tests"))
from servers import SERVERS, ab_load, free_port, memcached_load, server_dir, wait_port  # noqa: E402 - after its path

LAG = re.compile(r"replica followed all (\d+) events: lag at most (\d+) events / ([\d.]+) s \(mean ([\d.]+) s\)"
                 r"(?:; (\d+) events / ([\d.]+) s behind when the program ended)?")


def lag_of(stderr: str) -> dict[str, float] | None:
    m = LAG.search(stderr)
    if not m:
        return None
    return {"max_events": int(m[2]), "max_s": float(m[3]), "mean_s": float(m[4]),
            "end_events": int(m[5] or 0), "end_s": float(m[6] or 0)}


def program_s(trace: Path) -> float:
    db = sqlite3.connect(trace)
    (ns,) = db.execute("SELECT duration_ns FROM outcome").fetchone()
    db.close()
    return ns / 1e9


def lock_loop(runs: int, tmp: Path, iters: int) -> None:
    prog = [str(ROOT / "bench" / "bin" / "mutex_counter"), str(iters)]
    times: dict[str, list[float]] = {"native": [], "record": [], "follow": []}
    lags, diverged = [], 0
    for i in range(runs):
        a = time.monotonic()
        subprocess.run(prog, capture_output=True, check=True)
        times["native"].append(time.monotonic() - a)
        for mode in ("record", "follow"):
            trace = tmp / f"lock-{mode}-{i}.db"
            r = subprocess.run([DETREC, *(["--follow"] if mode == "follow" else []), "-o", trace, "--", *prog],
                               capture_output=True)
            if r.returncode != 0:
                sys.exit(f"bench: detrec {mode} failed: {r.stderr.decode()[-400:]}")
            times[mode].append(program_s(trace))
            if mode == "follow":
                lag = lag_of(r.stderr.decode())
                if lag is None:
                    diverged += 1
                else:
                    lags.append(lag)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"  native {med['native']:.3f} s | recorded {med['record']:.3f} s | recorded with a replica "
          f"{med['follow']:.3f} s ({med['record'] / med['follow']:.2f}x the speed without)")
    _say_lag(lags, runs, diverged)


def _say_lag(lags: list[dict[str, float]], runs: int, diverged: int) -> None:
    if lags:
        print(f"  replica lag: at most {statistics.median([x['max_s'] for x in lags]):.3f} s / "
              f"{statistics.median([x['max_events'] for x in lags]):.0f} events (median of runs), mean "
              f"{statistics.median([x['mean_s'] for x in lags]):.3f} s; behind when the program ended "
              f"{statistics.median([x['end_s'] for x in lags]):.3f} s / "
              f"{statistics.median([x['end_events'] for x in lags]):.0f} events")
    print(f"  replica followed to the end in {len(lags)} of {runs} runs" + (f" ({diverged} did not)" if diverged
                                                                            else ""), flush=True)


def _tree(pid: int) -> list[int]:
    """pid and its descendants."""
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out


def pin_replica_apart(detrec_pid: int) -> bool:
    """The replica (detreplay --follow and its program, every thread) on
    CPU 1; detrec and the recorded program stay on CPU 0 (started so, as
    the bench's client runs)."""
    replicas = [p for p in _tree(detrec_pid) if b"--follow\0/dev/fd/" in _cmdline(p)]
    for r in replicas:
        for p in _tree(r):
            for tid in os.listdir(f"/proc/{p}/task") if os.path.isdir(f"/proc/{p}/task") else []:
                try:
                    os.sched_setaffinity(int(tid), {1})
                except OSError:
                    pass
    return bool(replicas)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def server(name: str, runs: int, load, work: int, unit: str, pinned: bool) -> None:
    """A server (tests/servers.py's recipe) natively, recorded, and recorded
    with a replica, under the same bounded load: its rate, and the lag."""
    srv = SERVERS[name]
    rates: dict[str, list[float]] = {"native": [], "record": [], "follow": []}
    lags, diverged, mid = [], 0, []
    for _ in range(runs):
        for mode in ("native", "record", "follow"):
            with server_dir(f"bench-{name}") as d:
                port = free_port()
                if srv.files is not None:
                    srv.files(d, port)
                cmd = srv.argv(d, port)
                if mode != "native":
                    cmd = [str(DETREC), *(["--follow"] if mode == "follow" else []), "-o", str(d / "s.db"), "--",
                           *cmd]
                p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                wait_port(port, p)
                time.sleep(0.3)
                if mode == "follow" and pinned and not pin_replica_apart(p.pid):
                    print("  (no replica found to pin)")
                a = time.monotonic()
                load(d, port)
                rates[mode].append(work / (time.monotonic() - a))
                if mode == "follow":
                    os.kill(p.pid, signal.SIGUSR1)  # the lag at the end of the load
                    time.sleep(0.2)
                p.send_signal(signal.SIGINT if mode != "native" else signal.SIGTERM)
                _, err = p.communicate(timeout=120)
                if mode == "follow":
                    text = err.decode(errors="replace")
                    if m := re.search(r"replica following: \d+ of \d+ events done, (\d+) events / ([\d.]+) s behind",
                                      text):
                        mid.append((int(m[1]), float(m[2])))
                    lag = lag_of(text)
                    if lag is None:
                        diverged += 1
                        said = [x for x in text.splitlines() if "replica" in x and "following:" not in x]
                        why = [x for x in said if x.startswith("detreplay: replica")]  # (the replica's own word)
                        print(f"  ({(why or said)[-1] if said else 'no replica line'})")
                    else:
                        lags.append(lag)
    med = {k: statistics.median(v) for k, v in rates.items()}
    print(f"  native {med['native']:.0f} {unit} | recorded {med['record']:.0f} {unit} "
          f"({med['record'] / med['native']:.2f}x) | recorded with a replica {med['follow']:.0f} {unit} "
          f"({med['follow'] / med['record']:.2f}x of recorded without one, {med['follow'] / med['native']:.2f}x "
          "native)")
    if mid:
        print(f"  replica lag as the load ended (SIGUSR1): {statistics.median([m[1] for m in mid]):.3f} s / "
              f"{statistics.median([m[0] for m in mid]):.0f} events")
    _say_lag(lags, runs, diverged)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--quick", action="store_true")
    ns = p.parse_args()
    scale = 10 if ns.quick else 1
    print("## detrec --follow: a live replica (issue 29)")
    with tempfile.TemporaryDirectory(prefix="det-bench-follow-") as d:
        iters = 1000000 // scale
        print(f"# mutex_counter {iters} (2 threads), {ns.runs} runs each", flush=True)
        lock_loop(ns.runs, Path(d), iters)
        conns, ops = 16, 600 // scale
        for pinned in (False, True):
            how = ("server, detrec and the client on CPU 0, the replica on CPU 1" if pinned else "nothing pinned")
            os.sched_setaffinity(0, {0} if pinned else range(os.cpu_count() or 1))  # (the client: this process)
            print(f"# memcached -t 4 under the tests' client: {conns} connections x {ops} set+get, {ns.runs} runs "
                  f"each; {how}", flush=True)
            server("memcached", ns.runs, lambda d, port: memcached_load(d, port, conns=conns, ops=ops),
                   2 * conns * ops, "ops/s", pinned)
            print(f"# nginx, one worker with a thread pool (aio threads), under ab: 3 files x 400 requests, "
                  f"-c 16, {ns.runs} runs each; {how}", flush=True)
            server("nginx_pool", ns.runs, ab_load, 3 * 400, "requests/s", pinned)
    print("# targets: replica lag <= 100 ms at steady load; primary with a replica >= 0.9x of recording without one "
          "(given a core of its own: not here, see the docstring)")
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
