"""Runs inside the qemu guest (kmod/harness/init): det's kernel-module tests
(`check`) or benchmarks (`bench`).

Rules: standard library and det's own package only (the guest has Debian's
python3.11 and nothing else). Every check prints one line; the last line is
"DET-KMOD: PASS" or "DET-KMOD: FAIL: <why>", and the exit status says the
same. The module is loaded at the start and must unload at the end, and
the kernel log must then hold no warning, oops, BUG or hung task.
Benchmarks print their figures side by side and never fail on a number.
"""

from __future__ import annotations

import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(os.getcwd())
SAMPLES = ROOT / "samples" / "bin"
TMP = Path("/tmp")
ALIVE = Path("/sys/module/detsched/parameters/schedules_alive")
# what a kernel in trouble writes; "INFO: task ... blocked" is the hung-task detector
BAD_DMESG = re.compile(r"WARNING:|BUG:|Oops|general protection|INFO: task|soft lockup|hard LOCKUP|"
                       r"Call Trace|list_add corruption|list_del corruption|kernel BUG|refcount_t|"
                       r"detsched.*(leak|still)")
# (trace name, sample, args, detrec options): recorded in the guest by check
GUEST_RECORDINGS = [
    ("guest-last_zero", "last_zero", ["3"], []),
    ("guest-indexer", "indexer", ["5"], []),
    ("guest-dining", "dining_philosophers", ["16", "10"], ["--timeout", "60"]),
    ("guest-fork_pool", "fork_pool", ["3", "2"], []),
]


class Failed(Exception):
    pass


def say(msg: str) -> None:
    print(f"guest: {msg}", flush=True)


def run(cmd: list[str], timeout: float = 300, check: bool = False) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, errors="replace")
    if check and r.returncode != 0:
        raise Failed(f"{' '.join(cmd)} exited {r.returncode}: {(r.stderr or r.stdout).strip()[-400:]}")
    return r


def dmesg_lines() -> list[str]:
    return run(["dmesg"]).stdout.splitlines()


def dmesg_problems(since: int) -> list[str]:
    """What the kernel logged after line `since` that means trouble."""
    return [line for line in dmesg_lines()[since:] if BAD_DMESG.search(line)]


def detreplay_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("detreplay:")]
    return lines[-1] if lines else ""


def replay_both(trace: Path, relaxed: bool) -> None:
    """futex and kmod replays of one trace: both match the recording, alike."""
    opts = ["--relaxed"] if relaxed else []
    res = {}
    for backend in ("futex", "kmod"):
        r = run(["detreplay", f"--backend={backend}", *opts, str(trace)], timeout=600)
        line = detreplay_line(r.stderr)
        if "outcome matches" not in line and "replayed all" not in line:
            raise Failed(f"{trace.name} {backend}{' relaxed' if relaxed else ''}: {r.stderr.strip()[-500:]}")
        res[backend] = (r.returncode, r.stdout, line)
    if res["futex"] != res["kmod"]:
        raise Failed(f"{trace.name}: futex and kmod replays differ: {res['futex']!r} vs {res['kmod']!r}")
    say(f"{trace.name}{' --relaxed' if relaxed else ''}: futex and kmod alike, exit {res['kmod'][0]}: "
        f"{res['kmod'][2].removeprefix('detreplay: ')}")


def record_in_guest() -> list[Path]:
    out = []
    for name, sample, args, opts in GUEST_RECORDINGS:
        trace = TMP / f"{name}.db"
        for _attempt in range(5):  # dining philosophers may deadlock: keep a run that ends
            trace.unlink(missing_ok=True)
            r = run(["detrec", "-q", *opts, "-o", str(trace), "--", str(SAMPLES / sample), *args], timeout=300)
            if r.returncode != 124:
                break
        if not trace.exists():
            raise Failed(f"detrec of {sample} left no trace (exit {r.returncode}): {r.stderr.strip()[-300:]}")
        say(f"recorded {sample} {' '.join(args)} in the guest (exit {r.returncode})")
        out.append(trace)
    return out


def sample_processes(name: str) -> list[int]:
    pids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if os.readlink(p / "exe").endswith("/" + name):
                    pids.append(int(p.name))
            except OSError:
                pass
    return pids


def until(cond, secs: float) -> bool:
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def waiting_in_module(name: str) -> int:
    """Threads of the sample's processes asleep in the module's WAIT."""
    n = 0
    for pid in sample_processes(name):
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                n += (task / "wchan").read_text().startswith("ds_")  # a function of the module
            except OSError:
                pass
    return n


def kill_scenes(trace: Path) -> None:
    """Real replays killed in the middle, while threads of the program sleep
    in the module: detreplay itself (the schedule's owner), then the program."""
    name = "dining_philosophers"
    p = subprocess.Popen(["detreplay", "--backend=kmod", str(trace)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    if not until(lambda: waiting_in_module(name), 60):
        raise Failed("no thread of the replayed program was ever seen waiting in the module")
    waiting = waiting_in_module(name)
    p.send_signal(signal.SIGKILL)
    p.wait()
    if not until(lambda: not sample_processes(name), 20):
        raise Failed("the program went on waiting after detreplay (its schedule's owner) was killed")
    say(f"detreplay killed while {waiting} threads of its program waited in the module: the program ended")

    for _attempt in range(5):  # the program may end between the look and the kill: try again
        p = subprocess.Popen(["detreplay", "--backend=kmod", str(trace)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        if not until(lambda: waiting_in_module(name), 60):
            raise Failed("no thread of the second replay was ever seen waiting in the module")
        waiting, killed = waiting_in_module(name), 0
        for pid in sample_processes(name):
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        _, err = p.communicate(timeout=120)
        if killed and "outcome matches" not in err:
            break
    if p.returncode == 0:
        raise Failed("detreplay said all was well after its program was killed")
    say(f"program killed while {waiting} of its threads waited in the module: detreplay exit {p.returncode}: "
        f"{detreplay_line(err)}")
    if not until(lambda: ALIVE.read_text().strip() == "0", 10):
        raise Failed(f"schedules left in the module after the killed replays: {ALIVE.read_text().strip()}")
    say("no schedule left in the module")


def check() -> None:
    boot_log = len(dmesg_lines())
    run(["insmod", "/detsched.ko"], check=True)
    if not Path("/dev/detsched").is_char_device():
        raise Failed("/dev/detsched did not appear")
    say(f"module loaded: /dev/detsched, {run(['uname', '-r']).stdout.strip()}")
    # the hung-task detector reports a task blocked uninterruptibly this long
    Path("/proc/sys/kernel/hung_task_timeout_secs").write_text("5\n")
    host = sorted(Path("/traces").glob("*.db"))
    if len(host) < 3:
        raise Failed(f"only {len(host)} traces recorded on the host")
    for t in host:
        for relaxed in (False, True):
            replay_both(t, relaxed)
    for t in record_in_guest():
        for relaxed in (False, True):
            replay_both(t, relaxed)
    long = TMP / "long-dining.db"
    for _attempt in range(5):
        r = run(["detrec", "-q", "--timeout", "120", "-o", str(long), "--", str(SAMPLES / "dining_philosophers"),
                 "16", "400"], timeout=300)
        if r.returncode == 0:
            break
    kill_scenes(long)
    stall_report()
    robustness(boot_log)


def stall_report() -> None:
    """A replay that stalls while a thread waits in the module: detreplay's
    report has the module's own view (its STATE)."""
    slow = TMP / "slow.db"
    run(["detrec", "-q", "-o", str(slow), "--", "/bin/slowpoke", "4"], timeout=120, check=True)
    r = run(["detreplay", "--backend=kmod", "--stall", "1", str(slow)], timeout=120)
    m = re.search(r"/dev/detsched: T1 waits in the kernel for its event \d+", r.stderr)
    if r.returncode == 0 or "stalled" not in r.stderr or not m:
        raise Failed(f"the stalled kmod replay's report lacks the module's view: {r.stderr.strip()[-400:]}")
    say(f"stalled replay: detreplay exit {r.returncode}, and says: {m.group(0)}")


def robustness(boot_log: int) -> None:
    """The kill test and the fuzzer, then the module must unload and the
    kernel log stay clean."""
    r = run(["killtest"], timeout=120)
    print(r.stdout, end="", flush=True)
    if r.returncode != 0:
        raise Failed(f"killtest: {r.stderr.strip()}")
    r = run(["fuzz", os.environ.get("DET_FUZZ_SECONDS", "30"), "4", "3", "0x5eed"], timeout=900)
    print(r.stdout, end="", flush=True)
    if r.returncode != 0:
        raise Failed(f"fuzz: {r.stderr.strip()}")
    if not until(lambda: ALIVE.read_text().strip() == "0", 10):
        raise Failed(f"schedules left in the module after the fuzzer: {ALIVE.read_text().strip()}")
    run(["rmmod", "detsched"], check=True)
    if Path("/sys/module/detsched").exists():
        raise Failed("the module is still loaded after rmmod")
    say("module unloaded cleanly")
    bad = dmesg_problems(boot_log)
    if bad:
        raise Failed("the kernel log has: " + " | ".join(bad[:5]))
    say("kernel log: no warning, BUG, oops, lockup or hung task")


def fuzz_only() -> None:
    boot_log = len(dmesg_lines())
    run(["insmod", "/detsched.ko"], check=True)
    Path("/proc/sys/kernel/hung_task_timeout_secs").write_text("5\n")
    robustness(boot_log)


# ---- benchmarks ----

def timed(cmd: list[str]) -> float:
    """Wall time of a native run (a sample that shows its bug exits 1: fine)."""
    a = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    b = time.monotonic()
    if r.returncode not in (0, 1):
        raise Failed(f"{' '.join(cmd)} exited {r.returncode}")
    return b - a


def bench(runs: int) -> None:
    from det.replay.cli import replay  # det's own replay, in this process: its program's run time

    # a fixed amount of work: a sample that meets its bug reports it and goes on
    os.environ["SAMPLE_KEEP_GOING"] = "1"
    run(["insmod", "/detsched.ko"], check=True)
    r = run(["handoff", "20000"], check=True)
    print(f"bench: {r.stdout.strip()}", flush=True)
    if os.environ.get("DET_BENCH_ONLY") == "handoff":
        return
    programs = [
        ("cond_pingpong", [str(ROOT / "bench" / "bin" / "cond_pingpong"), "2000"],
         "hand-off: 2 threads x 2000 condvar ping-pongs"),
        ("last_zero", [str(SAMPLES / "last_zero"), "100"], "last_zero 100 rounds (16 threads)"),
        ("indexer", [str(SAMPLES / "indexer"), "100"], "indexer 100 rounds (15 threads)"),
        ("dining", [str(SAMPLES / "dining_philosophers"), "16", "300"], "dining_philosophers 16 x 300"),
    ]
    print(f"bench: medians of {runs} runs, native and replays alternating; TCG guest, 2 vCPUs", flush=True)
    for name, cmd, what in programs:
        trace = TMP / f"bench-{name}.db"
        for _attempt in range(10):  # a dining run may deadlock: benchmark one that ends
            trace.unlink(missing_ok=True)
            r = run(["detrec", "-q", "--timeout", "60", "-o", str(trace), "--", *cmd], timeout=300)
            if r.returncode != 124:
                break
        if r.returncode == 124:
            raise Failed(f"could not record a run of {what} that ends")
        native, rep = [], {"futex": [], "kmod": [], "futex-relaxed": [], "kmod-relaxed": []}
        events = 0
        for _ in range(runs):
            native.append(timed(cmd))
            for key in rep:
                backend, _, relaxed = key.partition("-")
                res = replay(str(trace), relaxed=bool(relaxed), backend=backend, forward=False)
                if not res.matched:
                    raise Failed(f"{what}: {key} replay did not match: {res.lines}")
                rep[key].append(res.run_s)
                events = res.events
        n = statistics.median(native)
        cells = " | ".join(f"{k} {statistics.median(v) * 1e3:.1f} ms ({(statistics.median(v) / n - 1) * 100:+.0f}%)"
                           for k, v in rep.items())
        print(f"bench: {what}: {events} events; native {n * 1e3:.1f} ms | {cells}", flush=True)
        if name == "cond_pingpong":
            per = " | ".join(f"{k} {(statistics.median(v) - n) / events * 1e6:.2f} us"
                             for k, v in rep.items() if "relaxed" not in k)
            print(f"bench: hand-off: time added per event (replay - native) / events: {per}", flush=True)
    run(["rmmod", "detsched"], check=True)


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "check"
    try:
        if mode == "check":
            check()
        elif mode == "fuzz":
            fuzz_only()
        elif mode == "bench":
            bench(int(os.environ.get("DET_BENCH_RUNS", "5")))
        else:
            raise Failed(f"unknown mode {mode}")
    except (Failed, subprocess.TimeoutExpired, OSError) as e:
        print(f"DET-KMOD: FAIL: {e}", flush=True)
        return 1
    print("DET-KMOD: PASS", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
