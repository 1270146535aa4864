"""Safe to point at anything: what a divergence of a racy program says, whose
trace may run, what a trace holds and how to share it, and what outlives a
killed detrec."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import DETREC, DETREPLAY, ROOT, detrec, detreplay, program, query, reseal, run
from det import events as ev

NOBODY = 65534


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.fail("this test makes files owned by another user: it needs root (CI runs as root)", pytrace=False)


def test_race_divergence_says_what_it_likely_is(tmp_path: Path) -> None:
    trace = tmp_path / "race.db"
    for _ in range(5):  # the recording's sleep lets the worker win; on a very slow machine it may not
        r = detrec("-o", trace, program("race_path"), "lock")
        assert r.returncode == 0, r.stderr.decode()
        if r.stdout == b"took a\n":
            break
    assert r.stdout == b"took a\n", "the worker never won the race while recording"
    rr = detreplay(trace)
    err = rr.stderr.decode()
    assert rr.returncode == 125, err
    assert "most likely a data race" in err and "--strict" in err, err
    strict = tmp_path / "race-strict.db"
    r = detrec("--strict", "-o", strict, program("race_path"), "lock")
    assert r.returncode == 0, r.stderr.decode()
    rr = detreplay(strict)
    assert rr.returncode == 0 and b"outcome matches" in rr.stderr, rr.stderr.decode()
    assert rr.stdout == r.stdout


def test_input_divergence_names_both_descriptors(tmp_path: Path) -> None:
    trace = tmp_path / "race-fd.db"
    for _ in range(5):  # as above: the recording's wait lets the worker win
        r = detrec("-o", trace, program("race_path"), "read")
        assert r.returncode == 0, r.stderr.decode()
        if r.stdout == b"read a\n":
            break
    assert r.stdout == b"read a\n", "the worker never won the race while recording"
    fds = [int(fd) for (fd,) in query(trace, "SELECT aux FROM events WHERE kind = ? ORDER BY seq",
                                      (ev.PIPE_READ,))]
    assert len(fds) == 1, fds
    rr = detreplay(trace)
    err = rr.stderr.decode()
    assert rr.returncode == 125, err
    assert "pipe_read at race_path.c:" in err, err
    got = re.search(r"another file descriptor or clock: (\d+), recorded (\d+)", err)
    assert got and int(got[2]) == fds[0] and int(got[1]) != fds[0], err


def recorded(tmp_path: Path, name: str = "t.db", env: dict | None = None) -> Path:
    """hello, recorded with one argument: it exits 7."""
    trace = tmp_path / name
    r = detrec("-o", trace, program("hello"), "x", env=env)
    assert r.returncode == 7, r.stderr.decode()
    return trace


def test_another_users_trace_is_not_run_unless_trusted(tmp_path: Path) -> None:
    need_root()
    trace = recorded(tmp_path)
    os.chown(trace, NOBODY, NOBODY)
    r = detreplay(trace)
    err = r.stderr.decode()
    assert r.returncode == 2 and b"hello from" not in r.stdout, err
    line = [ln for ln in err.splitlines() if ln.startswith("detreplay:")][0]
    assert "belongs to nobody" in line and str(program("hello")) in line and "--trust" in line, line
    assert "Traceback" not in err
    r = detreplay("--trust", trace)
    assert r.returncode == 7 and b"outcome matches" in r.stderr, r.stderr.decode()
    r = detreplay(trace, env=dict(os.environ, DET_TRUST="1"))
    assert r.returncode == 7, r.stderr.decode()
    # Reading it needs no trust.
    assert detrec("info", trace).returncode == 0


def test_libraries_are_checked_and_preloads_must_be_recorded(tmp_path: Path) -> None:
    lib = tmp_path / "libgreet.so"
    src = tmp_path / "greet.c"
    src.write_text('int greet(void) { return 3; }\n')
    assert run(["gcc", "-shared", "-fPIC", "-o", lib, src]).returncode == 0
    main = tmp_path / "main.c"
    main.write_text('#include <stdio.h>\nint greet(void);\nint main(void) { printf("%d\\n", greet()); return 0; }\n')
    prog = tmp_path / "greeter"
    assert run(["gcc", "-o", prog, main, f"-L{tmp_path}", "-lgreet", f"-Wl,-rpath,{tmp_path}"]).returncode == 0
    trace = tmp_path / "g.db"
    # (without the copies detrec keeps, which replay would run instead: tests/e2e/test_keep_libs.py)
    assert detrec("--no-keep-libs", "-o", trace, prog).returncode == 0
    libs = json.loads(query(trace, "SELECT value FROM meta WHERE key = 'libraries'")[0][0])
    assert any(p == str(lib) for p, _ in libs), libs
    assert detreplay(trace).returncode == 0
    with open(lib, "ab") as f:
        f.write(b"\0changed")
    r = detreplay(trace)
    assert r.returncode == 2 and f"{lib} changed since the recording loaded it".encode() in r.stderr, r.stderr
    assert detreplay("--force", trace).returncode == 0
    # A preload added to the recorded environment: refused even when the
    # editor sealed the trace again (without sealing, it is damaged).
    evil_src = tmp_path / "evil.c"
    evil_src.write_text('#include <stdio.h>\n__attribute__((constructor)) static void f(void) { puts("EVIL"); }\n')
    evil = tmp_path / "libevil.so"
    assert run(["gcc", "-shared", "-fPIC", "-o", evil, evil_src]).returncode == 0
    edited = tmp_path / "edited.db"
    shutil.copy(recorded(tmp_path), edited)
    db = sqlite3.connect(edited)
    env = json.loads(db.execute("SELECT value FROM meta WHERE key = 'env'").fetchone()[0])
    env["LD_PRELOAD"] = str(evil)
    db.execute("UPDATE meta SET value = ? WHERE key = 'env'", (json.dumps(env),))
    db.commit()
    db.close()
    r = detreplay(edited)
    assert r.returncode == 2 and b"damaged" in r.stderr and b"EVIL" not in r.stdout, r.stderr
    reseal(edited)
    r = detreplay(edited)
    assert r.returncode == 2 and b"EVIL" not in r.stdout, r.stderr
    assert f"LD_PRELOAD names {evil}, which the recording did not load".encode() in r.stderr, r.stderr


def test_scrubbed_copy_to_share(tmp_path: Path) -> None:
    secret = "tok-4f9a2c7e1b"
    trace = recorded(tmp_path, "t.db", env=dict(os.environ, API_TOKEN=secret))
    assert secret.encode() in trace.read_bytes()
    out = tmp_path / "share.db"
    r = detrec("scrub", trace, "-o", out)
    assert r.returncode == 0 and b"environment value(s) replaced" in r.stderr, r.stderr.decode()
    assert secret.encode() not in out.read_bytes(), "the secret is still in the file's bytes"
    env = json.loads(query(out, "SELECT value FROM meta WHERE key = 'env'")[0][0])
    assert env["API_TOKEN"] == "x" * len(secret) and env["PATH"] == os.environ["PATH"]
    assert "API_TOKEN" in query(out, "SELECT value FROM meta WHERE key = 'scrubbed'")[0][0].split(",")
    assert secret.encode() in trace.read_bytes()  # the original is untouched
    r = detreplay(out)
    assert r.returncode == 7 and b"outcome matches" in r.stderr, r.stderr.decode()
    # The copy goes where detrec -o may write.
    r = detrec("scrub", trace, "-o", tmp_path)
    assert r.returncode == 2 and b"is a directory" in r.stderr
    docs = (ROOT / "README.md").read_text()
    assert "What a trace holds" in docs and "detrec scrub" in docs


def pids_of(pattern: str) -> list[str]:
    r = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    return r.stdout.split()


def test_nothing_outlives_a_killed_detrec(tmp_path: Path) -> None:
    """kill -9 of detrec: the program dies with it (PDEATHSIG), and so do its
    children that outlive it (det's watchdog finds them by det's variable in
    their environment)."""
    a, b = 3_700_000 + os.getpid() % 100_000, 3_800_000 + os.getpid() % 100_000  # this test's own sleeps
    pattern = f"^sleep ({a}|{b})$"
    trace = tmp_path / "sh.db"
    p = subprocess.Popen([str(DETREC), "-o", str(trace), "sh", "-c", f"sleep {a} & sleep {b} & echo up; wait"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert p.stdout.readline() == b"up\n"
        deadline = time.monotonic() + 20
        while len(pids_of(pattern)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(pids_of(pattern)) == 2
    finally:
        p.kill()
        p.wait()
    deadline = time.monotonic() + 10
    while pids_of(pattern) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = pids_of(pattern)
    for pid in left:
        os.kill(int(pid), signal.SIGKILL)
    assert not left, "grandchildren outlived the killed detrec"


def test_a_daemon_with_a_title_does_not_outlive_a_killed_detrec(tmp_path: Path) -> None:
    """title_daemon's worker writes its title over its whole environment block, so det's variable cannot be
    read there: the watchdog finds it by det's region it maps."""
    p = subprocess.Popen([str(DETREC), "-q", "-o", str(tmp_path / "t.db"), "--", str(program("title_daemon")),
                          "whole"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)

    def workers() -> list[int]:  # this detrec's session's title_daemon workers
        out = []
        for pid in pids_of("^title_daemon: worker process"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[3]) == p.pid:  # field 6: session id
                    out.append(int(pid))
        return out

    try:
        assert p.stdout.readline() == b"worker: 0\n"
        assert len(workers()) == 1
        with open(f"/proc/{workers()[0]}/environ", "rb") as f:
            assert b"_DET_SHM" not in f.read()  # the title is over it
    finally:
        p.kill()
        p.wait()
    deadline = time.monotonic() + 10
    while workers() and time.monotonic() < deadline:
        time.sleep(0.1)
    left = workers()
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, "the titled worker outlived the killed detrec"


def test_killed_until_fail_leaves_no_runs(tmp_path: Path) -> None:
    out = tmp_path / "u.db"
    work = tmp_path / ".u.db.runs"
    p = subprocess.Popen([str(DETREC), "-q", "--until-fail", "1000", "-o", str(out), str(program("spinner"))],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not any(work.glob("run*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert any(work.glob("run*")), "no run started"
    p.kill()
    p.wait()
    deadline = time.monotonic() + 10
    while work.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not work.exists(), list(work.iterdir())
    # One left some other way is cleaned when the next --until-fail starts.
    work.mkdir()
    shutil.copy(recorded(tmp_path), work / "run3.db")
    r = detrec("-q", "--until-fail", "1", "-o", out, shutil.which("true"))
    assert r.returncode == 0 and not work.exists(), r.stderr.decode()


def test_set_user_id_programs(tmp_path: Path) -> None:
    """Refused when the set-ID bit would change the user (the kernel drops
    LD_PRELOAD), as the program or as a child; recorded when it would not."""
    need_root()
    other = tmp_path / "hello_other"
    shutil.copy(program("hello"), other)
    os.chown(other, NOBODY, NOBODY)
    os.chmod(other, 0o4755)
    r = detrec("-o", tmp_path / "a.db", other)
    assert r.returncode == 126 and b"set-user-ID or set-group-ID to another user" in r.stderr, r.stderr
    r = detrec("-o", tmp_path / "b.db", "sh", "-c", f"{other}; true")
    assert r.returncode == 125 and b"set-user-ID" in r.stderr and str(other).encode() in r.stderr, r.stderr
    mine = tmp_path / "hello_mine"
    shutil.copy(program("hello"), mine)
    os.chmod(mine, 0o4755)  # root's own: running it changes nothing
    assert detrec("-o", tmp_path / "c.db", mine).returncode == 0
    assert detrec("-o", tmp_path / "d.db", "sh", "-c", f"{mine}; true").returncode == 0


def test_file_capability_programs() -> None:
    """A program whose file capabilities its exec would grant (to a user
    other than root) runs in secure mode, where the kernel drops
    LD_PRELOAD: refused like a set-ID one, as the program (126) or as a
    child at its exec (125), never run unrecorded; recorded when the exec
    grants nothing (capabilities only inheritable, or run by root)."""
    need_root()
    setcap = shutil.which("setcap") or pytest.fail("setcap is missing: install libcap2-bin (tools/setup.sh)",
                                                   pytrace=False)
    base = Path(tempfile.mkdtemp(prefix="det-caps-"))  # (pytest's tmp_path is root's alone: nobody cannot enter)
    try:
        base.chmod(0o755)
        if os.statvfs(base).f_flag & os.ST_NOSUID:
            pytest.fail(f"{base} is on a nosuid mount, where file capabilities do not apply", pytrace=False)
        granted, inheritable = base / "hello_caps", base / "hello_inheritable"
        for path, caps in ((granted, "cap_net_raw+ep"), (inheritable, "cap_net_raw+i")):
            shutil.copy(program("hello"), path)
            assert run([setcap, caps, path]).returncode == 0
        out = base / "out"
        out.mkdir()
        os.chown(out, NOBODY, NOBODY)
        env = dict(os.environ, HOME=str(out), DET_TRACE_DIR=str(out / "traces"))

        def as_nobody(tool: Path, *args: str | os.PathLike[str]) -> subprocess.CompletedProcess:
            return run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", tool, *args],
                       env=env, cwd=out)

        r = as_nobody(DETREC, "-o", out / "a.db", granted)
        err = r.stderr.decode()
        assert r.returncode == 126 and len(err.splitlines()) == 1, err
        assert err.startswith(f"detrec: {granted}: it has file capabilities that running it would grant"), err
        assert r.stdout == b"" and not (out / "a.db").exists()
        r = as_nobody(DETREC, "-o", out / "b.db", "sh", "-c", f"{granted}; true")
        err = r.stderr.decode()
        assert r.returncode == 125 and len(err.splitlines()) == 1, err
        assert f"det stopped the program: execve({granted}): " in err and "file capabilities" in err, err
        assert b"hello from" not in r.stdout  # it never ran without det
        rr = as_nobody(DETREPLAY, out / "b.db")
        assert rr.returncode == 125 and b"outcome matches" not in rr.stderr, rr.stderr.decode()
        r = as_nobody(DETREC, "-o", out / "c.db", inheritable)
        assert r.returncode == 0 and b"hello from" in r.stdout, r.stderr.decode()
        assert as_nobody(DETREPLAY, out / "c.db").returncode == 0
        r = detrec("-o", base / "d.db", granted)  # root: nothing to gain
        assert r.returncode == 0 and b"hello from" in r.stdout, r.stderr.decode()
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("part", ["head", "ring", "layout"])
def test_program_writing_over_det_memory(part: str, tmp_path: Path) -> None:
    """det's shared region is mapped writable into the program, which can
    write anything there: T0's ring index past anything it wrote (head),
    its ring's number (ring), or the header's offsets, sizes and counts
    (layout). detrec never crashes, copies garbage for ever or hangs: a
    ring that makes no sense ends the recording in one line (the program
    stopped, what was captured kept), and the header is not where detrec
    finds its way in the region."""
    trace = tmp_path / "s.db"
    # (its atomic stores write det's region, after which it must make no event:
    # left to the CPU, as plain stores would be)
    r = detrec("--no-patch-atomics", "-o", trace, program("ring_scribble"), part, timeout=120)
    err = r.stderr.decode()
    assert r.returncode >= 0, f"detrec died of signal {-r.returncode}: {err}"
    # (besides detcheck's line: its raw system calls and atomics are det's unseen, on purpose)
    lines = [line for line in err.splitlines() if "mode does not see" not in line]
    assert len(lines) == 1 and lines[0].startswith("detrec: ") and "Traceback" not in err, err
    assert r.stdout.startswith(f"scribbling: {part}\n".encode()), r.stdout
    if part == "layout":
        assert r.returncode == 0 and r.stdout.endswith(b"finished\n"), err
        assert query(trace, "SELECT count(*) FROM events WHERE tid = 0")[0][0] >= 2000  # its locks, all captured
    else:
        assert r.returncode == 125, err
        assert lines[0].startswith("detrec: det stopped the program: its event ring of T0 is corrupt ("), err
        assert b"finished" not in r.stdout  # stopped by detrec, not by its own end 20 s later
        assert "its event ring of T0 is corrupt" in query(trace, "SELECT message FROM outcome")[0][0]
    # nothing ran away: the trace alone is left, and it is small
    assert sorted(p.name for p in tmp_path.iterdir()) == [".det-objects", "s.db"]  # (and its kept copies)
    assert trace.stat().st_size < 16 << 20


def test_program_writing_over_the_capture_log(tmp_path: Path) -> None:
    """The capture log is the user's file, so the program can write over it
    while detrec writes it. The converter reads no chunk past the first that
    fails its check (where a killed writer stopped), and a recording that
    ended normally used to make a trace of what came before without a word:
    the threads, processes and end written after the damage were missing
    (one CI run's strict trace had no thread T0). Now detrec says where the
    log is damaged and keeps it to salvage."""
    trace = tmp_path / "t.db"
    log = tmp_path / "t.db.incomplete.log"
    script = (f"sleep 0.3; printf XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX | dd of={log} bs=1 seek=200 conv=notrunc "
              "2>/dev/null; echo done")
    r = detrec("-o", trace, "--", "/bin/sh", "-c", script, timeout=120)
    err = r.stderr.decode()
    assert r.returncode == 1 and r.stdout == b"done\n", err
    lines = [line for line in err.splitlines() if line.startswith("detrec: cannot write the trace")]
    assert len(lines) == 1 and "the capture log is damaged at byte " in lines[0], err
    assert f"the capture log stays in {log.name}" in lines[0] or f"stays in {log}" in lines[0], err
    assert log.exists() and not trace.exists()


def test_program_naming_another_process_in_det_memory(tmp_path: Path) -> None:
    """The process table is in det's region too: a pid the program writes
    there is one of its processes only if that process carries the run's
    det variable. detrec neither waits for another (for ever) nor kills it
    when the run ends (--timeout: it would wait that long, then kill)."""
    bystander = subprocess.Popen(["sleep", "300"])
    try:
        trace = tmp_path / "p.db"
        r = detrec("--timeout", "5", "-o", trace, program("ring_scribble"), "procs", str(bystander.pid), timeout=120)
        assert r.returncode == 0 and r.stdout.endswith(b"finished\n"), r.stderr.decode()
        assert bystander.poll() is None, "detrec killed a process that is not the program's"
    finally:
        bystander.kill()
        bystander.wait()
