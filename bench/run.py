#!/usr/bin/env python3
"""make bench: det-vs-native ratios, measured side by side.

Rules: every figure is a median of at least RUNS runs, native and det runs
alternating so that machine noise hits both alike; ratios, not absolute
times, are what to compare across machines. Wall-time ratios come with
CPU-time ratios (the process tree's user + system time), which a machine
shared with other work does not inflate. Targets are printed next to the
figures and never asserted: this is a report, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
BENCH = ROOT / "bench" / "bin"


REPORT = Path(tempfile.gettempdir()) / f"det-bench-report-{os.getpid()}"


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Wall time of cmd, the CPU time of its process tree (a loaded machine
    inflates wall times, not CPU times), and what it wrote to $BENCH_REPORT."""
    REPORT.unlink(missing_ok=True)
    c = children_cpu()
    a = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, env=dict(os.environ, BENCH_REPORT=str(REPORT), **(env or {})))
    b = time.monotonic()
    if r.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed ({r.returncode}): {r.stderr.decode()[-500:]}")
    return b - a, children_cpu() - c, REPORT.read_text() if REPORT.exists() else ""


def trace_stats(path: Path) -> dict[str, float]:
    db = sqlite3.connect(path)
    events, duration = db.execute("SELECT events, duration_ns FROM outcome").fetchone()
    meta = dict(db.execute("SELECT key, value FROM meta"))
    db.close()
    return {"events": events, "bytes": path.stat().st_size, "ingest": float(meta.get("ingest_events_per_s", 0)),
            "program_s": duration / 1e9, "convert_s": float(meta.get("convert_s", 0))}


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def loop_figure(out: str, key: str) -> float | None:
    m = re.search(rf"^{key} ([\d.]+)", out, re.M)
    return float(m[1]) if m else None


def bench_program(name: str, args: list[str], runs: int, tmp: Path, record_opts: tuple[str, ...] = (),
                  prog: list[str] | None = None, replay: bool = True) -> dict[str, object]:
    """Native and recorded runs alternating, then replays of the last trace."""
    prog = prog or [str(BENCH / name), *args]
    trace = tmp / f"{name}.db"
    native, rec, rep, rel, prog_s, conv_s = [], [], [], [], [], []
    native_cpu, rec_cpu, rep_cpu, rel_cpu = [], [], [], []
    loops: dict[str, list[float]] = {}
    for _ in range(runs):
        t, c, out = timed(prog)
        native.append(t)
        native_cpu.append(c)
        for key in ("ns_per_pair", "cpu_ns_per_pair", "ns_per_call", "cpu_ns_per_call"):
            if (v := loop_figure(out, key)) is not None:
                loops.setdefault("native_" + key, []).append(v)
        t, c, out = timed([str(BIN / "detrec"), "-q", *record_opts, "-o", str(trace), "--", *prog])
        rec.append(t)
        rec_cpu.append(c)
        for key in ("ns_per_pair", "cpu_ns_per_pair", "ns_per_call", "cpu_ns_per_call"):
            if (v := loop_figure(out, key)) is not None:
                loops.setdefault("det_" + key, []).append(v)
        st = trace_stats(trace)
        prog_s.append(st["program_s"])
        conv_s.append(st["convert_s"])
        if replay:
            t, c, _ = timed([str(BIN / "detreplay"), "-q", str(trace)])
            rep.append(t)
            rep_cpu.append(c)
            t, c, _ = timed([str(BIN / "detreplay"), "-q", "--relaxed", str(trace)])
            rel.append(t)
            rel_cpu.append(c)
    st = trace_stats(trace)
    n = median(native)
    nc = median(native_cpu)
    ev = max(st["events"], 1)
    res: dict[str, object] = {
        "program": " ".join(prog),
        "native_s": n,
        "native_cpu_s": nc,
        "program_s": median(prog_s),          # the program's run under detrec (detrec's clock)
        "record_s": median(rec),              # detrec end to end: program + writing the trace
        "record_cpu_s": median(rec_cpu),
        "convert_s": median(conv_s),          # writing the trace after the run
        "program_x": median(prog_s) / n,
        "record_x": median(rec) / n,
        "record_cpu_x": median(rec_cpu) / nc if nc else 0,
        "events": st["events"],
        "bytes_per_event": st["bytes"] / ev,
        "ingest_events_per_s": st["ingest"],
        "added_ns_per_event": (median(prog_s) - n) / ev * 1e9,
    }
    if replay:
        res.update({
            "replay_s": median(rep), "relaxed_s": median(rel),
            "replay_x": median(rep) / n, "relaxed_x": median(rel) / n,
            "replay_cpu_x": median(rep_cpu) / nc if nc else 0, "relaxed_cpu_x": median(rel_cpu) / nc if nc else 0,
        })
    for unit in ("pair", "call"):
        w, c = f"ns_per_{unit}", f"cpu_ns_per_{unit}"
        if f"native_{w}" in loops and f"det_{w}" in loops:
            per = 2 if unit == "pair" else 1  # a pair is two events (lock, unlock)
            res[f"loop_added_ns_per_{'event' if per == 2 else 'call'}"] = (
                median(loops[f"det_{w}"]) - median(loops[f"native_{w}"])) / per
            res[f"loop_added_cpu_ns_per_{'event' if per == 2 else 'call'}"] = (
                median(loops[f"det_{c}"]) - median(loops[f"native_{c}"])) / per
    return res


def schedule_build(trace: Path) -> dict[str, float]:
    """CPU seconds and peak memory of building a trace's replay schedule."""
    code = ("import resource, sys, time; from pathlib import Path; from det.replay.native import Replayer;"
            "t = time.process_time(); r = Replayer(Path(sys.argv[1]), True, False);"
            "print(time.process_time() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    out = subprocess.run([str(BIN / "python"), "-c", code, str(trace)], capture_output=True, check=True).stdout.split()
    return {"cpu_s": float(out[0]), "rss_mb": int(out[1]) / 1024}


def seal_times(trace: Path, runs: int, tmp: Path) -> dict[str, float]:
    """Seconds of the content checksum's C scan of event_rows and calls (what
    det's writers other than detrec, and the validator, pay; detrec's
    converter sums as it writes), and of the validator's full pass."""
    code = ("import sys, time; from det import native; t = time.monotonic(); native.table_sums(sys.argv[1]);"
            "print(time.monotonic() - t)")
    scan, full = [], []
    for _ in range(runs):
        out = subprocess.run([str(BIN / "python"), "-c", code, str(trace)], capture_output=True, check=True).stdout
        scan.append(float(out))
        env = dict(os.environ, DET_VALIDATE="full", XDG_CACHE_HOME=str(tmp / "no-cache"))
        a = time.monotonic()
        subprocess.run([str(BIN / "detrec"), "info", str(trace)], capture_output=True, check=True, env=env)
        full.append(time.monotonic() - a)
    return {"scan_s": median(scan), "full_pass_s": median(full)}


def dump_rate(trace: Path, runs: int) -> dict[str, float]:
    """`detrec dump`'s seconds to its first line and its text lines per second
    (to /dev/null-like reading of a pipe), after start-up (`--to 0`)."""
    first, total, start = [], [], []
    lines = 0
    for _ in range(runs):
        a = time.monotonic()
        subprocess.run([str(BIN / "detrec"), "dump", "--to", "0", str(trace)], capture_output=True, check=True)
        start.append(time.monotonic() - a)
        a = time.monotonic()
        with subprocess.Popen([str(BIN / "detrec"), "dump", str(trace)], stdout=subprocess.PIPE) as p:
            assert p.stdout is not None
            p.stdout.readline()
            first.append(time.monotonic() - a)
            lines = 1 + sum(chunk.count(b"\n") for chunk in iter(lambda: p.stdout.read(1 << 20), b""))
        total.append(time.monotonic() - a)
    return {"lines": lines, "first_line_s": median(first), "start_s": median(start),
            "lines_per_s": lines / max(median(total) - median(start), 1e-9)}


def until_fail_rate(sample: Path, args: list[str], runs: int, reps: int, tmp: Path) -> dict[str, float]:
    """Runs per second: the sample natively, one run after another, and
    under `detrec --until-fail RUNS` (a sample that passes: every run is
    made, only the last one converted into a trace), alternating, `reps`
    times each (the machine is shared), medians. Also detrec's own start and
    end (`--until-fail 1`), which a hunt pays once, not per run."""
    native, det, once = [], [], []

    def detrec(n: int) -> float:
        t0 = time.monotonic()
        subprocess.run([str(BIN / "detrec"), "-q", "--until-fail", str(n), "-o", str(tmp / "uf.db"), "--",
                        str(sample), *args], capture_output=True, check=True)
        return time.monotonic() - t0

    for _ in range(reps):
        t0 = time.monotonic()
        for _ in range(runs):
            subprocess.run([str(sample), *args], capture_output=True)
        native.append(runs / (time.monotonic() - t0))
        det.append(runs / detrec(runs))
        once.append(detrec(1))
    nat, uf = statistics.median(native), statistics.median(det)
    return {"runs": runs, "native_runs_per_s": nat, "until_fail_runs_per_s": uf, "ratio": uf / nat,
            "detrec_one_run_s": statistics.median(once)}


def startup(runs: int, tmp: Path) -> dict[str, float]:
    """detrec's and detreplay's fixed cost: `detrec -q -- /bin/true` and the
    replay of its trace beside /bin/true itself, and detrec's parts: the
    interpreter's own start (with site, as detrec's), that plus detrec's
    imports, and the rest (parsing, the supervisor, the
    run, writing and sealing the trace). Wall and CPU medians of `runs`
    (at least 10), the commands alternating (the machine is shared)."""
    true = shutil.which("true") or "/bin/true"
    cmds = {
        "native": [true],
        "detrec": [str(BIN / "detrec"), "-q", "-o", str(tmp / "startup.db"), "--", true],
        "detreplay": [str(BIN / "detreplay"), "-q", str(tmp / "startup.db")],  # (the trace just recorded)
        "python": [str(BIN / "python"), "-c", "pass"],
        # (ended as detrec ends: det.command_end, no interpreter teardown)
        "imports": [str(BIN / "python"), "-c", "import det.replay.verify, det.record.cli; "
                    "from det.command_end import end_command; end_command(0)"],
    }
    wall: dict[str, list[float]] = {k: [] for k in cmds}
    cpu: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(max(runs, 10)):
        for k, cmd in cmds.items():
            w, c, _ = timed(cmd)
            wall[k].append(w)
            cpu[k].append(c)
    out = {f"{k}_s": median(v) for k, v in wall.items()}
    out.update({f"{k}_cpu_s": median(v) for k, v in cpu.items()})
    return out


SECTIONS = ("start-up", "sync", "storm", "replay-start", "inputs", "strict", "until-fail", "follow")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--quick", action="store_true", help="smaller inputs (a smoke run, not for reporting)")
    p.add_argument("--only", action="append", choices=SECTIONS,
                   help="run only this section (repeatable); the other bench scripts are then not run")
    ns = p.parse_args()
    if ns.runs < 1:
        p.error("--runs must be positive")
    scale = 10 if ns.quick else 1
    results = []

    def report(r: dict[str, object], what: str, per_call: bool = False) -> None:
        r["what"] = what
        results.append(r)
        line = (f"  native {r['native_s']:.3f} s | program under detrec {r['program_s']:.3f} s "
                f"({r['program_x']:.2f}x) | detrec end to end {r['record_s']:.3f} s ({r['record_x']:.2f}x; "
                f"trace written in {r['convert_s']:.3f} s after the run) | CPU {r['record_cpu_x']:.2f}x")
        print(line)
        if "replay_s" in r:
            print(f"  replay {r['replay_s']:.3f} s ({r['replay_x']:.2f}x, CPU {r['replay_cpu_x']:.2f}x) | relaxed "
                  f"{r['relaxed_s']:.3f} s ({r['relaxed_x']:.2f}x, CPU {r['relaxed_cpu_x']:.2f}x)")
        line = (f"  {r['events']} events, {r['bytes_per_event']:.1f} bytes/event, conversion "
                f"{r['ingest_events_per_s'] / 1e6:.2f} M events/s, "
                f"{r['added_ns_per_event']:.0f} ns added per {'call' if per_call else 'event'} to the program's run")
        for unit in ("event", "call"):
            if f"loop_added_ns_per_{unit}" in r:
                line += (f", inside the loop {r[f'loop_added_ns_per_{unit}']:.1f} ns added per {unit} "
                         f"({r[f'loop_added_cpu_ns_per_{unit}']:.1f} ns of CPU)")
        print(line, flush=True)

    def want(section: str) -> bool:
        return not ns.only or section in ns.only

    with tempfile.TemporaryDirectory(prefix="det-bench-") as d:
        tmp = Path(d)
        if want("start-up"):
            print("## start-up (issue 25: detrec -- /bin/true <= 20 ms)")
            st = startup(ns.runs, tmp)
            results.append({"what": "start-up", **st})
            ms = {k: 1000 * v for k, v in st.items()}
            print(f"  native /bin/true {ms['native_s']:.1f} ms | detrec -q -- /bin/true {ms['detrec_s']:.1f} ms "
                  f"(CPU {ms['detrec_cpu_s']:.1f} ms) | of which Python's own start {ms['python_s']:.1f} ms, "
                  f"+ detrec's imports {ms['imports_s'] - ms['python_s']:.1f} ms, the rest (supervisor, run, trace) "
                  f"{ms['detrec_s'] - ms['imports_s']:.1f} ms", flush=True)
            print(f"  detreplay -q of that trace {ms['detreplay_s']:.1f} ms (CPU {ms['detreplay_cpu_s']:.1f} ms; "
                  f"/bin/true's CPU {ms['native_cpu_s']:.1f} ms)", flush=True)
            print("# target: detrec -- /bin/true <= 20 ms (detreplay: the same start-up, no target of its own)")

        if want("sync"):
            print("## synchronization (issue: core, recording at the program's own speed)")
            for name, args, what in [
                ("mutex_counter", [str(1000000 // scale)],
                 "2 threads x 1M mutex increments (green-threads benchmark 1)"),
                ("cond_pingpong", [str(100000 // scale)],
                 "2 threads x 100k condvar ping-pongs (green-threads benchmark 2)"),
                ("uncontended", [str(5000000 // scale)], "uncontended lock/unlock loop"),
            ]:
                print(f"# {what}: {name} {' '.join(args)} ({ns.runs} runs each)", flush=True)
                report(bench_program(name, args, ns.runs, tmp), what)
            print("# targets: mutex_counter program run <= 1.3x, end to end <= 2x; <= 30 ns added per uncontended "
                  "event; ordered replay <= 3x, relaxed <= 1.5x; <= 16 bytes/event")

        if want("storm"):
            print("## lock storm: mutex_counter with 2, 8 and 64 threads (2 cores: beyond 2 threads the figures "
                  "measure contention and scheduling, not parallel speed)")
            for threads in (2, 8, 64):
                iters = 2000000 // threads // scale
                what = f"mutex_counter {iters} {threads}"
                print(f"# {what} ({ns.runs} runs each)", flush=True)
                report(bench_program("mutex_counter", [str(iters), str(threads)], ns.runs, tmp, replay=False),
                       f"lock storm, {threads} threads")

        if want("replay-start"):
            print("## replay start and memory")
            trace = tmp / "mc2m.db"
            subprocess.run([str(BIN / "detrec"), "-q", "-o", str(trace), "--", str(BENCH / "mutex_counter"),
                            str(500000 // scale)], capture_output=True, check=True)
            events = trace_stats(trace)["events"]
            builds = [schedule_build(trace) for _ in range(ns.runs)]
            b = {"events": events, "cpu_s": median([x["cpu_s"] for x in builds]),
                 "rss_mb": median([x["rss_mb"] for x in builds])}
            results.append({"what": "schedule build", **b})
            print(f"  schedule of {events} events built in {b['cpu_s']:.3f} s of CPU, peak RSS {b['rss_mb']:.0f} MB "
                  "(target: 2M events in <= 0.3 s)", flush=True)
            sl = seal_times(trace, ns.runs, tmp)
            results.append({"what": "seal", "events": events, **sl})
            print(f"  checksum scan of {events} events (det's other writers, the validator) {sl['scan_s']:.3f} s; "
                  f"validator's full pass (detrec info, first open) {sl['full_pass_s']:.3f} s; detrec's own seal "
                  "sums as it converts (no scan)", flush=True)

            dr = dump_rate(trace, ns.runs)
            results.append({"what": "dump", **dr})
            print(f"  detrec dump of {dr['lines']} events: first line after {dr['first_line_s']:.3f} s (start-up "
                  f"{dr['start_s']:.3f} s), then {dr['lines_per_s'] / 1e3:.0f}k lines/s (target: >= 300k lines/s, "
                  "first line within start-up)", flush=True)

        if want("inputs"):
            print("## inputs and real programs (issue: inputs)")
            big = tmp / "big.txt"
            rng = random.Random(7)
            words = ["".join(rng.choice("abcdefghij") for _ in range(rng.randint(2, 9))) for _ in range(3000)]
            with open(big, "w") as f:
                size = 0
                while size < 50_000_000 // scale:
                    line = " ".join(rng.choice(words) for _ in range(12)) + "\n"
                    f.write(line)
                    size += len(line)
            for tool, args in (("pigz", ["-p", "2", "-c"]), ("pbzip2", ["-p2", "-c"])):
                exe = shutil.which(tool)
                if not exe:
                    sys.exit(f"bench: {tool} is not installed (tools/setup.sh installs it)")
                what = f"{tool} {' '.join(args)} on {big.stat().st_size // 1_000_000} MB"
                print(f"# {what} ({ns.runs} runs each)", flush=True)
                report(bench_program(tool, [], ns.runs, tmp, prog=[exe, *args, str(big)]), what)
            print("# targets: record <= 1.05x, replay <= 1.2x (the Popcorn replication thesis: 0.89% for pbzip2)")
            for mode, n, what in (("clock", 1000000 // scale, "1M clock_gettime calls"),
                                  ("pipe", 100000 // scale, "100k one-byte pipe reads")):
                print(f"# {what} ({ns.runs} runs each)", flush=True)
                report(bench_program("syscalls", [mode, str(n)], ns.runs, tmp), what, per_call=True)
            print("# target: <= 100 ns added per recorded clock_gettime (Hermit's ptrace design pays ~37 us)")

        if want("strict"):
            print("## strict mode (issue: schedules)")
            for name, args in (("mutex_counter", [str(1000000 // scale)]), ("cond_pingpong", [str(100000 // scale)])):
                what = f"--strict {name} {' '.join(args)}"
                print(f"# {what} ({ns.runs} runs each)", flush=True)
                report(bench_program(name, args, ns.runs, tmp, record_opts=("--strict",)), what)
            print("# target: strict record <= 3x")

        if want("until-fail"):
            print("## --until-fail: runs per second")
            sample = ROOT / "samples" / "bin" / "pingpong_ok"
            uf = until_fail_rate(sample, ["50"], 200 // (4 if ns.quick else 1), ns.runs, tmp)
            results.append({"what": "until-fail runs per second", **uf})
            print(f"  {sample.name} 50, {uf['runs']} runs, medians of {ns.runs}: native {uf['native_runs_per_s']:.1f} "
                  f"runs/s, detrec --until-fail {uf['until_fail_runs_per_s']:.1f} runs/s ({uf['ratio']:.2f} of native; "
                  f"target >= 0.5); detrec --until-fail 1 takes {uf['detrec_one_run_s']:.2f} s", flush=True)
        if want("follow"):  # a live replica beside the recording: its own script (it drives memcached)
            subprocess.run([sys.executable, "bench/follow.py", f"--runs={min(ns.runs, 3)}"]
                           + (["--quick"] if ns.quick else []))
    if ns.only:
        if ns.json:
            Path(ns.json).write_text(json.dumps(results, indent=2))
        return 0
    subprocess.run([sys.executable, "bench/isolated.py", f"--runs={ns.runs}"] + (["--quick"] if ns.quick else []))
    subprocess.run([sys.executable, "bench/llvm.py", f"--runs={ns.runs}"] + (["--quick"] if ns.quick else []))
    subprocess.run([sys.executable, "bench/diff.py", f"--runs={min(ns.runs, 3)}"])
    subprocess.run([sys.executable, "bench/tui.py", f"--runs={min(ns.runs, 3)}"])
    subprocess.run([sys.executable, "bench/gdb_goto.py", f"--runs={ns.runs}", f"--iters={250000 // scale}"])
    subprocess.run([sys.executable, "bench/gdb_reverse.py", f"--runs={min(ns.runs, 3)}", f"--iters={250000 // scale}"])
    if ns.json:
        Path(ns.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
