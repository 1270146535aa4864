"""Child processes: fork, wait, system, popen, posix_spawn and exec are
recorded into the same trace (a process column, stable numbers) and replay
byte-identical, shell pipelines included, with children that die of
SIGPIPE or are killed."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest

from conftest import detrec, detreplay, move_events, outcome, program, query, replays_identically, reseal
from det import events as ev

MODES = ["fork", "wait", "system", "popen", "spawn", "exec"]


def record(trace: Path, *argv: str | os.PathLike[str], mode: tuple[str, ...] = ()) -> bytes:
    r = detrec("-q", *mode, "-o", trace, "--", *argv, timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout, "the program wrote nothing"
    return r.stdout


@pytest.mark.parametrize("mode", MODES)
def test_child_processes_replay(mode: str, tmp_path: Path) -> None:
    trace = tmp_path / f"{mode}.db"
    out = record(trace, program("proc_tour"), mode)
    replays_identically(trace, out)
    replays_identically(trace, out, 3, ("--relaxed",))


def test_process_table(tmp_path: Path) -> None:
    trace = tmp_path / "all.db"
    record(trace, program("proc_tour"), "all")
    procs = query(trace, "SELECT process, parent, pid, create_seq, thread, exe, execs, status FROM processes "
                         "ORDER BY process")
    assert procs[0][:2] == (0, -1) and procs[0][5] == "proc_tour"
    # stable numbers: creation order
    seqs = [p[3] for p in procs[1:]]
    assert seqs == sorted(seqs)
    by_num = {p[0]: p for p in procs}
    # the forked child with threads exited 3, collected by waitpid
    fork_child = by_num[1]
    assert fork_child[1] == 0 and fork_child[5] == "proc_tour" and fork_child[7] == 3 << 8
    # its threads are numbered with everyone else's and belong to it
    mine = query(trace, "SELECT tid FROM threads WHERE process = 1 ORDER BY tid")
    assert len(mine) == 4  # its first thread and the three it created
    assert mine[0][0] == fork_child[4]
    # popen("seq ...") is sh, then seq as sh's child
    seq = [p for p in procs if p[5] == "seq"]
    assert len(seq) == 1 and by_num[seq[0][1]][5] == "dash" and seq[0][6] == 1
    # every process has a pid and every thread a process
    assert all(p[2] > 0 for p in procs)
    assert query(trace, "SELECT count(*) FROM threads WHERE process NOT IN (SELECT process FROM processes)")[0][0] == 0


def test_exec_keeps_the_thread(tmp_path: Path) -> None:
    trace = tmp_path / "exec.db"
    record(trace, program("proc_tour"), "exec")
    (execs, exe), = query(trace, "SELECT execs, exe FROM processes WHERE process = 0")
    assert execs == 1 and exe == "dash"
    # T0 goes on in the new image: its events after the exec are in the same thread
    kinds = [k for (k,) in query(trace, "SELECT kind FROM events WHERE tid = 0 ORDER BY idx")]
    i = kinds.index(66)  # PROC_EXEC
    assert i < len(kinds) - 1, "the new image made no event as T0"


def test_shell_pipeline_byte_identical(tmp_path: Path) -> None:
    cmd = "seq 100000 | shuf | sort -R | head -5"
    first = record(tmp_path / "p1.db", "/bin/sh", "-c", cmd)
    second = record(tmp_path / "p2.db", "/bin/sh", "-c", cmd)
    assert first != second, "shuf and sort -R gave the same order twice: randomness is not reaching them"
    assert len(first.splitlines()) == 5
    replays_identically(tmp_path / "p1.db", first)
    n = query(tmp_path / "p1.db", "SELECT count(*) FROM processes")[0][0]
    assert n == 5  # sh, seq, shuf, sort, head


def test_writer_dies_of_sigpipe(tmp_path: Path) -> None:
    """yes is killed by SIGPIPE inside a write: that write never returned in
    the recording, and does not in replay."""
    trace = tmp_path / "yes.db"
    out = record(trace, "/bin/sh", "-c", "yes | head -c 100000 | wc -c; echo done")
    assert out == b"100000\ndone\n"
    (status,), = query(trace, "SELECT status FROM processes WHERE exe = 'yes'")
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGPIPE
    replays_identically(trace, out)


def test_reader_placed_after_the_blocked_writer(tmp_path: Path) -> None:
    """A pipe read takes its place when it returns, a stdio write before it
    runs: a reader's reads can come after the writer's event that is blocked
    on the full pipe, waiting for them (a recording of `yes | head | wc` that
    made CI stall had wc's reads after head's next read and after its final
    flush). pipe_full's reader comes after the writer's big fwrite, as
    recorded, with its first read moved there too if it was not (an order
    det can record: the reader preempted before it took its place). Its
    ordered replay drains the pipe over several reads while it waits."""
    trace = tmp_path / "full.db"
    out = record(trace, program("pipe_full"))
    assert out == b"read 262144 bytes, sum %d, writer ok\n" % (65536 * sum(b"abcd"))
    rows = query(trace, "SELECT seq, tid, kind FROM events ORDER BY seq")
    reads = [s for s, tid, kind in rows if tid == 0 and kind == ev.PIPE_READ]
    big_write = [s for s, tid, kind in rows if tid == 1 and kind == ev.STDIO_WRITE][1]
    if reads[0] < big_write:
        # The reader's events from its first read to the fwrite move after
        # it, the writer's stay: each thread keeps its own order.
        span = [(s, tid) for s, tid, _ in rows if reads[0] <= s <= big_write]
        assert all(k == ev.PIPE_READ for s, tid, k in rows if tid == 0 and reads[0] <= s <= big_write), rows
        move_events(trace, [s for s, tid in span if tid != 0] + [s for s, tid in span if tid == 0])
    (reader_at,), = query(trace, "SELECT min(seq) FROM events WHERE tid = 0 AND kind = ?", (ev.PIPE_READ,))
    (write_at,), = query(trace, "SELECT seq FROM events WHERE tid = 1 AND kind = ? ORDER BY seq LIMIT 1 OFFSET 1",
                         (ev.STDIO_WRITE,))
    assert reader_at > write_at
    replays_identically(trace, out, 3)
    replays_identically(trace, out, 2, ("--relaxed",))


def test_find_head_xargs_cat_gzip(tmp_path: Path) -> None:
    """A pipeline like a user's: find's names cut by head, their files
    catted through gzip. Replays stalled on it two ways: cat blocked writing
    odd-sized chunks into a pipe whose page slots were full well below its
    byte capacity while gzip's read waited for cat's next events; and head
    closed its stdin (no event) ahead of find's flushes that the recording
    did while it was open, so find died early of SIGPIPE. (Ordered replay
    only: a relaxed replay does not order head's close after find's writes,
    which are on other objects.)"""
    files = tmp_path / "files"
    sizes = [(i * 7919) % 6007 + 1 for i in range(3000)]
    for i, n in enumerate(sizes):
        d = files / f"dir-{i % 40:02d}-with-a-longer-name"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"file-{i:05d}-{'x' * 40}.txt").write_bytes(bytes((i + k) % 251 for k in range(n)))
    cmd = f"find {files} -type f | head -2000 | xargs cat | gzip -1 -c | gunzip -c | wc -c"
    trace = tmp_path / "pipeline.db"
    out = record(trace, "/bin/sh", "-c", cmd)
    (status,), = query(trace, "SELECT status FROM processes WHERE exe = 'find'")
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGPIPE, "find was not cut off by head"
    replays_identically(trace, out, n=3)


def test_child_reinitialising_a_mutex_keeps_the_parents(tmp_path: Path) -> None:
    """A forked child's pthread_mutex_init of its copy of a mutex (CPython's
    GIL after a fork) made the parent's next lock a new object: the table is
    shared by the processes, and the child's key fell back to the bare
    address, which was the first process's key too."""
    trace = tmp_path / "reinit.db"
    out = record(trace, program("fork_reinit"))
    assert out == b"parent locked 4 times\n"
    objs = query(trace, "SELECT DISTINCT obj FROM events WHERE tid = 0 AND kind = ?", (ev.MUTEX_LOCK,))
    assert len(objs) == 1, objs
    replays_identically(trace, out, n=3)


def test_killed_child(tmp_path: Path) -> None:
    trace = tmp_path / "kill.db"
    out = record(trace, "/bin/sh", "-c", "sleep 5 & kill -9 $!; wait $!; echo status $?")
    assert out == b"status 137\n"
    assert outcome(trace)["duration_ns"] < 4e9
    replays_identically(trace, out, 5)


def test_cleared_environment_still_followed(tmp_path: Path) -> None:
    """env -i drops LD_PRELOAD; det puts its own variables back."""
    trace = tmp_path / "env.db"
    out = record(trace, "/usr/bin/env", "-i", "/bin/sh", "-c", "echo $0 ran; exit 0")
    assert out == b"/bin/sh ran\n"
    (execs, exe), = query(trace, "SELECT execs, exe FROM processes WHERE process = 0")
    assert (execs, exe) == (1, "dash")
    replays_identically(trace, out, 3)


def test_environment_printed_replays_the_same(tmp_path: Path) -> None:
    """A program that prints its whole environment prints the same in replay: det's variable that names
    the run (different in every run) is not in the program's environ; its children still are det's."""
    trace = tmp_path / "envp.db"
    out = record(trace, program("gdb_env"), "x")
    assert b"_DET_SHM" not in out, out
    assert b"env <LD_PRELOAD=" in out, out  # what det keeps in sight is the same in every mode
    replays_identically(trace, out, 3)
    trace = tmp_path / "envc.db"
    out = record(trace, "/bin/sh", "-c", f"{program('gdb_env')} child | grep -c DET_SHM; exit 0")
    assert out == b"0\n", out
    (procs,), = query(trace, "SELECT count(*) FROM processes")
    assert procs >= 2, procs  # the child (gdb_env) was followed: it found det without the variable in sight
    replays_identically(trace, out, 3)


def test_temporary_names_left_by_the_recording(tmp_path: Path) -> None:
    """mkstemp and mkdtemp in replay make the recorded names again, though the recorded run left them
    behind; what the recording did not leave (a directory with files in it) is never removed."""
    work = tmp_path / "work"
    work.mkdir()
    trace = tmp_path / "left.db"
    out = record(trace, program("temp_left"), work)
    left = sorted(p.name for p in work.iterdir())
    assert len(left) == 2, left
    replays_identically(trace, out, 3)
    assert sorted(p.name for p in work.iterdir()) == left
    leftdir = next(p for p in work.iterdir() if p.is_dir())
    (leftdir / "keep").write_text("the user's\n")
    r = detreplay(trace)
    err = r.stderr.decode()
    assert r.returncode == 125, err
    assert f"mkdtemp({leftdir}): the recorded name is taken" in err and "directory with files" in err, err
    assert (leftdir / "keep").read_text() == "the user's\n"


def test_clone_with_another_exit_signal(tmp_path: Path) -> None:
    """glibc's clone() as a fork whose end sends SIGUSR1 (__WCLONE) or nothing (__WALL)."""
    trace = tmp_path / "clone.db"
    out = record(trace, program("clone_signal"))
    assert out == (b"child wrote <first>, exited 5\nchild wrote <second child>, exited 12\n"
                   b"parent caught 1 SIGUSR1\n"), out
    (procs,), = query(trace, "SELECT count(*) FROM processes")
    assert procs == 3, procs
    replays_identically(trace, out, 5)
    strict = tmp_path / "clone-strict.db"
    assert record(strict, program("clone_signal"), mode=("--strict",)) == out
    replays_identically(strict, out, 3)


def test_strict_mode_with_children(tmp_path: Path) -> None:
    trace = tmp_path / "strict.db"
    out = record(trace, program("proc_tour"), "fork", mode=("--strict",))
    replays_identically(trace, out, 5)


def test_python_subprocess(tmp_path: Path) -> None:
    """CPython's subprocess (vfork and exec in _posixsubprocess, pipes read
    while the child writes through stdio)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "sp.py").write_text(
        "import subprocess\n"
        "out = subprocess.run(['sh', '-c', 'seq 3; echo err >&2'], capture_output=True, text=True)\n"
        "print('got', out.stdout.split(), out.stderr.strip(), out.returncode)\n"
        "p = subprocess.Popen(['cat'], stdin=subprocess.PIPE, stdout=subprocess.PIPE)\n"
        "o, _ = p.communicate(b'piped through cat\\n' * 3000)\n"
        "print(len(o), p.returncode)\n"
    )
    trace = tmp_path / "sp.db"  # not in the script's directory, which Python lists
    out = record(trace, "/usr/bin/python3", work / "sp.py")
    assert out == b"got ['1', '2', '3'] err 0\n54000 0\n"
    replays_identically(trace, out, 5)


@pytest.mark.parametrize("how", ["fork", "syscall", "clone3"])
def test_raw_clone_that_is_a_fork(how: str, tmp_path: Path) -> None:
    """clone() with SIGCHLD alone, and syscall(SYS_clone / SYS_clone3) with
    nothing but SIGCHLD, make a process like fork: det records it as one
    (its own process, its own thread and ring) and replays it."""
    trace = tmp_path / f"{how}.db"
    out = record(trace, program("raw_clone"), how)
    assert out == f"child {how}: 20000\nparent: 20000, child exited 7\n".encode()
    procs = query(trace, "SELECT process, parent, status FROM processes ORDER BY process")
    assert procs == [(0, -1, None), (1, 0, 7 << 8)], procs  # (nobody waits for the first)
    assert query(trace, "SELECT count(DISTINCT tid) FROM events")[0][0] == 2
    replays_identically(trace, out, 3)


@pytest.mark.parametrize("mode", [[], ["--strict"]], ids=["default", "strict"])
def test_scheduler_queries_about_a_pid_replay_when_it_is_gone(tmp_path: Path, mode: list[str]) -> None:
    """sched_of_pid PID: policy, priority, CPU mask and rr interval of a
    process outside the program (TLPI's sched_view and t_sched_getaffinity).
    Replay asked the kernel again, about a pid that no longer exists, and
    the program failed with ESRCH; the answers are inputs now."""
    def batch_on_cpu0() -> None:
        os.sched_setaffinity(0, {0})
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))

    other = subprocess.Popen(["sleep", "60"], preexec_fn=batch_on_cpu0)
    try:
        trace = tmp_path / "sched.db"
        r = detrec("-q", *mode, "-o", trace, "--", program("sched_of_pid"), str(other.pid), timeout=60)
    finally:
        other.kill()
        other.wait()
    want = f"policy {os.SCHED_BATCH}, priority 0, 1 CPUs, interval 0.000000000\n"
    assert (r.returncode, r.stdout.decode()) == (0, want), r.stderr.decode()
    replays_identically(trace, want.encode(), 5)


@pytest.mark.parametrize("how", ["waitpid", "waitid"])
def test_job_control_stop_and_continue(how: str, tmp_path: Path) -> None:
    """A parent stops a working child (SIGSTOP), sees it stopped, continues
    it, sees that, and reaps it. The trace used to put the wait that saw the
    stop after all the child's events (as if it had reaped it), and the stop,
    no event, could land while the child waited for its turn: replay
    stalled. The stop is a PROC_STOP event now, and only a wait that saw an
    end waits for the child's events. --relaxed replays such a trace in the
    recorded order, and says so: the per-object order let the child run
    ahead and exit before its stop (5 relaxed replays of 5 failed)."""
    want = b"stopped: yes\ncontinued: yes\nexit code 9\n"
    trace = tmp_path / f"{how}.db"
    assert record(trace, program("job_control"), how) == want
    assert ev.PROC_STOP in {k for (k,) in query(trace, "SELECT kind FROM events")}
    replays_identically(trace, want, 5)
    replays_identically(trace, want, 3, mode=("--relaxed",))
    said = detreplay("--relaxed", trace, timeout=120).stderr.decode()
    assert "stops another of its processes" in said and "--relaxed ignored" in said, said
    strict = tmp_path / f"{how}-strict.db"
    assert record(strict, program("job_control"), how, mode=("--strict",)) == want
    replays_identically(strict, want, 3)


@pytest.mark.parametrize("how", ["traceme", "attach", "attach raw"])
def test_tracer_and_its_tracee(how: str, tmp_path: Path) -> None:
    """A parent that traces its child (traces_child: PTRACE_TRACEME and a
    self-stop, or PTRACE_ATTACH; libc's ptrace or syscall(SYS_ptrace)),
    reads a word of its memory and writes another. In replay every request
    named the recorded pid, which the kernel does not know: ptrace takes
    ids as the other pid calls do now, and an attach is a PROC_STOP in its
    place."""
    want = b"stopped by SIGSTOP, word 0x5eed (read)\nchild exited 66\n"
    trace = tmp_path / "t.db"
    assert record(trace, program("traces_child"), *how.split()) == want
    replays_identically(trace, want, 5)
    replays_identically(trace, want, 2, ("--relaxed",))
    strict = tmp_path / "s.db"
    assert record(strict, program("traces_child"), *how.split(), mode=("--strict",)) == want
    replays_identically(strict, want, 3)


def test_write_that_reached_the_pipe_before_its_writer_died(tmp_path: Path) -> None:
    """A write whose return the recording never logged (its writer was
    killed right after the bytes went in: a grandchild's parent-death signal
    did it, 1 recording in 5 under load) made replay skip the write, and the
    reader that had read the byte got nothing: "a pipe read returned another
    count". The trace is made so by hand (the child's write marked as never
    returned); replay now writes what fits into the program's own pipe
    before the writer vanishes."""
    trace = tmp_path / "killed.db"
    out = record(trace, program("killed_after_write"))
    assert out == b"read 1 byte(s): r\nchild killed by SIGKILL\n"
    (seq,), = query(trace, "SELECT seq FROM events WHERE tid = 1 AND kind = ?", (ev.WRITE,))
    db = sqlite3.connect(trace)
    with db:
        db.execute("UPDATE event_rows SET result = ? WHERE seq = ?", (-(2**63), seq))  # DET_RESULT_PENDING
        db.execute("DELETE FROM schedule")  # (the packed copy would say otherwise; replay reads the rows)
    db.close()
    reseal(trace)
    replays_identically(trace, out, 3)


@pytest.mark.parametrize("mode", [[], ["--strict"]], ids=["default", "strict"])
def test_fork_whose_handlers_take_a_lock_another_thread_holds(tmp_path: Path, mode: list[str]) -> None:
    """pthread_atfork handlers that lock a mutex a busy thread takes over and
    over (fork_atfork_lock). libc runs them inside fork, where det passed
    their calls through: in strict mode the forking thread kept the turn
    while its prepare handler waited for the other thread, which needed the
    turn to unlock; the recording never ended. The parent's handlers' calls
    are events now, and the child becomes runnable once it exists."""
    trace = tmp_path / "atfork.db"
    out = record(trace, program("fork_atfork_lock"), mode=tuple(mode))
    assert out == b"child exited 5, counter 5000\n"
    replays_identically(trace, out, 3)


@pytest.mark.parametrize("how", ["raw", "stdio"])
def test_reader_took_the_start_of_a_write_its_writer_died_in(how: str, tmp_path: Path) -> None:
    """big_write | head -c 1000 | wc -c: one 400 kB write (write(2), or one
    fwrite) fills the pipe, head reads the start and exits, and the writer
    dies of SIGPIPE in that same call, which never came back. Replay skipped
    such a call, and head's read came back short, 4 replays of 4 (a plain
    shell pipeline stalled the same way under load). Now the call is made
    again, without blocking, before the writer vanishes."""
    trace = tmp_path / f"{how}.db"
    out = record(trace, "/bin/sh", "-c", f"{program('big_write')} {how} | head -c 1000 | wc -c")
    assert out == b"1000\n"
    (status,), = query(trace, "SELECT status FROM processes WHERE exe = 'big_write'")
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGPIPE
    replays_identically(trace, out, 3)


@pytest.mark.parametrize("mode", [[], ["--strict"]], ids=["default", "strict"])
def test_exec_from_a_second_thread(tmp_path: Path, mode: list[str]) -> None:
    """A thread other than the first execs while another waits in pause()
    (exec_from_thread): the new image goes on as that thread, under the
    process's id. The capture took the thread's old id being gone for the
    thread ending and freed its event ring during the exec, and the new
    image crashed writing to no ring: under two busy loops, 3 strict
    recordings in 20 (0 in 40 now); a quiet machine rarely shows it, so
    this runs several recordings."""
    want = b"before exec\nafter exec, from a thread\n"
    for i in range(4):
        trace = tmp_path / f"exec{i}.db"
        assert record(trace, program("exec_from_thread"), mode=tuple(mode)) == want
    replays_identically(trace, want, 2)
