"""Real programs nobody here wrote, from Debian's packages: each is recorded
and replayed 10 times with output byte-identical to the recording.

Rules: the programs are installed by tools/setup.sh; a missing one fails the
test (it is not skipped). Traces go to traces/ beside the inputs, except
where a test says why it writes one into the program's own directory.
"""

from __future__ import annotations

import http.server
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from real_inputs import write_big_text, write_threads_py

from conftest import detrec, detreplay, outcome, query

REPLAYS = 10


def tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is not installed: tools/setup.sh installs it (run `make`)"
    return path


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("real")
    write_big_text(d / "big.txt")  # 50 MB of compressible text
    (d / "small.txt").write_bytes((d / "big.txt").read_bytes()[:1_000_000])
    (d / "lines.txt").write_text("".join(f"{i}\n" for i in range(200_000)))
    write_threads_py(d / "threads.py")
    (d / "traces").mkdir()
    return d


def record_and_replay(work: Path, name: str, argv: list[str], *mode: str, replays: int = REPLAYS,
                      trace: Path | None = None) -> Path:
    trace = trace or work / "traces" / f"{name}.db"
    r = detrec("-q", *mode, "-o", trace, "--", *argv, cwd=work, timeout=600)
    assert r.returncode == 0, r.stderr.decode()
    recorded = r.stdout
    assert recorded, "the program wrote nothing"
    o = outcome(trace)
    assert o["stdout_bytes"] == len(recorded)
    for i in range(replays):
        rr = detreplay("-q", trace, cwd=work, timeout=600)
        assert rr.returncode == 0, f"replay {i + 1}: {rr.stderr.decode()}"
        assert rr.stdout == recorded, f"replay {i + 1}: output differs from the recording"
    return trace


def test_pigz(work: Path) -> None:
    trace = record_and_replay(work, "pigz", [tool("pigz"), "-p", "2", "-c", "big.txt"])
    assert query(trace, "SELECT count(DISTINCT tid) FROM events")[0][0] >= 3  # its threads took part


def test_pbzip2(work: Path) -> None:
    record_and_replay(work, "pbzip2", [tool("pbzip2"), "-p2", "-c", "big.txt"])


def test_xz(work: Path) -> None:
    record_and_replay(work, "xz", [tool("xz"), "-T2", "-c", "small.txt"])


def test_sort_random_parallel(work: Path) -> None:
    # sort's parallel merge reads counters another thread updates under a
    # different lock: a data race, so it needs strict mode
    trace = record_and_replay(work, "sort", [tool("sort"), "--parallel=2", "-R", "lines.txt"], "--strict")
    assert query(trace, "SELECT count(*) FROM events WHERE kind = 104")[0][0] >= 1  # its random key


def test_python_threads(work: Path) -> None:
    # CPython's GIL hands over on a flag read between events: strict mode
    trace = record_and_replay(work, "python", ["/usr/bin/python3", "threads.py"], "--strict")
    assert query(trace, "SELECT count(DISTINCT tid) FROM events")[0][0] >= 4


def test_python_pool_beside_its_trace(work: Path) -> None:
    # Default mode, the trace written into the working directory: CPython's
    # importer lists that directory (`python3 -c` imports from it), and each
    # forked worker initialises its copy of the GIL's mutex again.
    code = "import multiprocessing as m; print(sum(m.Pool(3).map(abs, range(-50000, 50000))))"
    trace = record_and_replay(work, "pool", ["/usr/bin/python3", "-c", code], replays=5, trace=work / "pool.db")
    assert query(trace, "SELECT count(*) FROM processes")[0][0] == 4


def test_curl_replays_without_the_server(work: Path) -> None:
    (work / "www").mkdir(exist_ok=True)
    (work / "www" / "page.txt").write_bytes((work / "small.txt").read_bytes())
    handler = lambda *a: http.server.SimpleHTTPRequestHandler(*a, directory=str(work / "www"))  # noqa: E731
    http.server.SimpleHTTPRequestHandler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    port = server.server_address[1]
    th = threading.Thread(target=server.serve_forever, daemon=True)
    th.start()
    trace = work / "traces" / "curl.db"
    try:
        r = detrec("-q", "-o", trace, "--", tool("curl"), "-s", f"http://127.0.0.1:{port}/page.txt", cwd=work)
    finally:
        server.shutdown()
        server.server_close()
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == (work / "small.txt").read_bytes()
    # the server is gone: a live fetch fails now
    assert subprocess.run([tool("curl"), "-s", f"http://127.0.0.1:{port}/page.txt"]).returncode != 0
    assert query(trace, "SELECT count(*) FROM events WHERE kind = 108")[0][0] > 0  # recv
    for i in range(REPLAYS):
        rr = detreplay("-q", trace, cwd=work)
        assert rr.returncode == 0, f"replay {i + 1}: {rr.stderr.decode()}"
        assert rr.stdout == r.stdout


def test_make_after_touch(tmp_path: Path) -> None:
    """File metadata is an input: make after `touch f0.c` (content unchanged)
    rebuilds f0.o when recorded and again when replayed, whatever the files'
    times are by then; gcc's random temporary names come back too. A source
    whose content changed since replays from the bytes the recording kept
    (a file of 1 MiB at most keeps them)."""
    proj = tmp_path / "proj"
    proj.mkdir()
    for i in range(3):
        (proj / f"f{i}.c").write_text(f"int f{i}(void) {{ return {i}; }}\n")
    (proj / "main.c").write_text("int main(void) { return 0; }\n")
    (proj / "Makefile").write_text("OBJS = f0.o f1.o f2.o main.o\nprog: $(OBJS)\n\tcc -o $@ $(OBJS)\n"
                                   "%.o: %.c\n\tcc -c -o $@ $<\n")
    make = tool("make")
    assert subprocess.run([make, "-s"], cwd=proj).returncode == 0
    (proj / "f0.c").touch()
    trace = tmp_path / "make.db"
    r = detrec("-o", trace, make, cwd=proj)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == b"cc -c -o f0.o f0.c\ncc -o prog f0.o f1.o f2.o main.o\n", r.stdout
    assert query(trace, "SELECT count(*) FROM events e JOIN event_kinds k USING (kind) WHERE k.name = 'stat'")[0][0]
    for touch in ([], ["f1.c"], ["f0.c", "main.c"]):  # replays after other touches, and none
        for name in touch:
            (proj / name).touch()
        rr = detreplay(trace)
        assert rr.returncode == 0 and b"outcome matches" in rr.stderr, (touch, rr.stderr.decode())
        assert rr.stdout == r.stdout
    (proj / "f0.c").write_text("int f0(void) { return 42; }\n")
    rr = detreplay(trace)
    assert rr.returncode == 0 and b"outcome matches" in rr.stderr, rr.stderr.decode()
    assert rr.stdout == r.stdout
