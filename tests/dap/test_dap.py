"""det-dap driven by a real DAP client (Microsoft's @vscode/debugadapter-
testsupport, from npm): a whole debugging session on a trace, bad
requests and bad traces answered with DAP errors, no process left behind.

Rules: the client scripts (session.js, refusals.js) assert what they see
against the replay itself; this file checks what outlives them (processes)
and reports the step and step-back times.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from dapfixtures import counter_trace, dap_client  # noqa: F401 - fixtures

from conftest import BIN, ROOT, detrec, need, program, query
from det import events as ev
from det.gdbmi import session_pids

HERE = Path(__file__).parent
SOURCE = ROOT / "tests" / "programs" / "gdb_counter.c"


def run_client(script: str, *args: str | os.PathLike[str], timeout: float = 600) -> dict:
    node = need("node")
    r = subprocess.run([node, str(HERE / script), *map(str, args)], capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{script} failed:\n{r.stderr}\n{r.stdout}"
    return json.loads(r.stdout.strip().splitlines()[-1])


def left_behind(sid: int, exe: Path) -> list[int]:
    """Processes of det-dap's gdb session, or running the recorded program's copy, still there."""
    deadline = time.monotonic() + 10
    while True:
        found = set(session_pids(sid))
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    if os.readlink(f"/proc/{name}/exe") == str(exe):
                        found.add(int(name))
                except OSError:
                    pass
        if not found or time.monotonic() > deadline:
            return sorted(found)
        time.sleep(0.2)


def test_a_whole_session(dap_client: Path, counter_trace: tuple[Path, Path]) -> None:
    trace, exe = counter_trace
    out = run_client("session.js", dap_client, sys.executable, BIN / "det-dap", trace, SOURCE)
    assert out["adapter_exit"] == 0
    assert out["requests"] >= 100, out["requests"]
    assert out["output"] == "counter 60\n"           # gdb_counter 20: 20 * (1 + 2)
    assert "unknown request 'noSuchRequest'" in out["errors"]["unknown"]
    assert "threadId" in out["errors"]["bad_arg"]
    assert "no_such_variable" in out["errors"]["bad_expr"]
    assert left_behind(out["sid"], exe) == [], "det-dap left processes of its session"
    step, back = statistics.median(out["next_ms"]), statistics.median(out["step_back_ms"])
    print(f"\ndet-dap: next answered in {step:.0f} ms, stepBack in {back:.0f} ms (medians of {len(out['next_ms'])})")


def test_bad_launches_are_dap_errors(dap_client: Path, counter_trace: tuple[Path, Path], tmp_path: Path) -> None:
    trace, exe = counter_trace
    damaged = tmp_path / "damaged.db"
    data = trace.read_bytes()
    damaged.write_bytes(data[: len(data) // 2])
    out = run_client("refusals.js", dap_client, sys.executable, BIN / "det-dap", damaged, tmp_path / "none.db",
                     trace)
    for key in ("damaged", "missing", "no_trace", "bad_type", "threads", "step_back", "again"):
        assert "\n" not in out[key] and "Traceback" not in out[key], out[key]
    assert "truncated" in out["damaged"] or "damaged" in out["damaged"], out["damaged"]
    assert "no such trace" in out["missing"], out["missing"]
    assert "missing argument 'trace'" in out["no_trace"]
    assert "must be str" in out["bad_type"]
    assert "no trace launched" in out["threads"] and "no trace launched" in out["step_back"]
    assert "already launched" in out["again"]
    assert out["threads_after"] == ["T0"]
    assert out["adapter_exit"] == 0
    assert left_behind(out["sid"], exe) == []


def test_bad_framing_ends_with_one_line(tmp_path: Path) -> None:
    for wire, said in ((b"Content-Length: lots\r\n\r\n", "bad Content-Length"),
                       (b"Content-Length: 5\r\n\r\n{oops", "not JSON"),
                       (b"Content-Length: 2\r\n\r\n[]", "a message is a JSON object")):
        r = subprocess.run([BIN / "det-dap"], input=wire, capture_output=True, timeout=60)
        err = r.stderr.decode()
        assert r.returncode == 2 and said in err and "Traceback" not in err and err.count("\n") == 1, err


def test_pause_interrupts_a_running_replay(dap_client: Path, tmp_path: Path) -> None:
    exe = tmp_path / "busy_replay"
    exe.write_bytes(program("busy_replay").read_bytes())
    exe.chmod(0o755)
    trace = tmp_path / "long.db"
    # 8,000 events and seconds of work between them: the replay still runs
    # when pause.js pauses it, 0.7 s after it started, on a busy machine too
    r = detrec("-q", "-o", trace, "--", exe, "2000", "5000000")
    assert r.returncode == 0, r.stderr.decode()
    total = query(trace, "SELECT count(*) FROM events")[0][0]
    out = run_client("pause.js", dap_client, sys.executable, BIN / "det-dap", trace)
    assert 0 < out["paused_at"] < total, out
    # every thread whose create came before the pause is there (a slow start
    # of gdb may pause the replay before T0 made T2)
    made = [f"T{aux}" for (aux,) in query(trace, "SELECT aux FROM events WHERE kind = ? AND seq < ?",
                                          (ev.THREAD_CREATE, out["paused_at"]))]
    assert set(made) <= set(out["threads"]) <= {"T0", "T1", "T2"} and "T0" in out["threads"], out
    assert out["exit_code"] == 0 and out["output"] == "count 4000\n"
    assert out["adapter_exit"] == 0
    assert left_behind(out["sid"], exe) == []


def test_closed_input_leaves_no_process(counter_trace: tuple[Path, Path]) -> None:
    """An editor that dies closes det-dap's stdin: det-dap ends its gdb session and exits
    (raw DAP framing here: the client library always disconnects first)."""
    trace, exe = counter_trace
    p = subprocess.Popen([BIN / "det-dap"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdin is not None and p.stdout is not None
    for seq, (command, args) in enumerate((("initialize", {"adapterID": "det"}), ("launch", {"trace": str(trace)})), 1):
        body = json.dumps({"seq": seq, "type": "request", "command": command, "arguments": args}).encode()
        p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    p.stdin.flush()
    sid = None
    while sid is None:
        length = int(p.stdout.readline().split(b":")[1])
        p.stdout.readline()
        msg = json.loads(p.stdout.read(length))
        if msg.get("event") == "process":
            sid = msg["body"]["systemProcessId"]
    assert session_pids(sid), "the gdb session runs"
    p.stdin.close()
    assert p.wait(timeout=60) == 0, p.stderr.read().decode() if p.stderr else ""
    assert left_behind(sid, exe) == []


def test_program_output_is_never_inside_gdbs_records(counter_trace: tuple[Path, Path]) -> None:
    """The program writes to a terminal of its own (det's relay shows it there), not to gdb's stdout, which
    carries the MI records: a fresh-clone CI run saw gdb's `[Thread ... exited]` record cut through its line."""
    from det.gdbmi import LiveSession

    trace, _ = counter_trace
    s = LiveSession(trace)
    try:
        pos = s.console("continue")
        assert pos.output == "counter 60\n", pos.output
        assert not [r for r in pos.records if r["type"] in ("output", "target")], pos.records
    finally:
        s.close()
