"""Where det delivers a signal (preload/signals.c): a handler runs while its
thread waits in a call det makes for it, as natively (the self-pipe trick, a
SIGTERM handler while main joins), and replay runs it at the same point; a
termination signal sent to detrec reaches the program, which shuts down by
itself in the recording; a signal a thread sends itself, by any call or raw
system call, is handled before the call returns (issues 22.5, 23.4); what
a handler writes without a lock reaches a thread polling for it in replay
as it did in the recording."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import DETREC, detrec, outcome, program, query, replay_matches
from det import events as ev

SIGNAL_KIND = 121  # include/det/events.def
IN_WAIT = 0x40000  # DET_SIG_IN_WAIT (include/det/shm.h)
REPLAYS = 10


@pytest.mark.parametrize("mode", [[], ["--strict"]], ids=["default", "strict"])
def test_handler_runs_while_its_thread_waits_in_read(tmp_path: Path, mode: list[str]) -> None:
    """self_pipe: main sleeps in read() on a pipe its SA_RESTART handler
    writes (once for a worker's kill, once for a timer). det held the signal
    until the read returned, which it never did."""
    trace = tmp_path / "pipe.db"
    r = detrec("-q", *mode, "--timeout", "30", "-o", trace, "--", program("self_pipe"), timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode() == "woken by U\nwoken by A\n"
    in_wait = query(trace, "SELECT count(*) FROM events WHERE kind = ? AND (aux & ?) != 0", (SIGNAL_KIND, IN_WAIT))
    assert in_wait[0][0] == 2, in_wait
    replay_matches(trace, [], REPLAYS)
    if not mode:
        replay_matches(trace, ["--relaxed"], 3)


def record_with_signal_to_detrec(trace: Path, sig: int, mode: list[str]) -> tuple[int, bytes, str]:
    p = subprocess.Popen([str(DETREC), "-q", *mode, "--timeout", "60", "-o", str(trace), str(program("term_handler"))],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None
    assert p.stdout.readline() == b"ready\n"
    time.sleep(0.2)  # main waits in pthread_join, the worker in read
    p.send_signal(sig)  # to detrec only, as systemd's main-process kill or timeout(1) does
    out, err = p.communicate(timeout=60)
    return p.returncode, out, err.decode()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT], ids=lambda s: s.name)
def test_termination_signal_is_forwarded_and_the_shutdown_recorded(tmp_path: Path, sig: signal.Signals) -> None:
    """What a service manager or timeout(1) sends detrec reaches the program,
    whose handler runs in main as it waits in pthread_join: the program's own
    exit is the outcome, and the shutdown replays (det SIGKILLed it)."""
    trace = tmp_path / "term.db"
    rc, out, err = record_with_signal_to_detrec(trace, sig, [])
    assert rc == 0, err
    assert out.startswith(f"clean shutdown after {sig.name} (work 100)".encode()), (out, err)
    o = outcome(trace)
    assert o["status"] == "exited" and o["exit_code"] == 0, o
    replay_matches(trace, [], REPLAYS if sig == signal.SIGTERM else 3)


def test_termination_signal_in_strict_mode(tmp_path: Path) -> None:
    """The same in strict mode, where main waits for the worker in det's own
    wait (replayer/strict.c), which the signal now ends for its handler."""
    trace = tmp_path / "term.db"
    rc, out, err = record_with_signal_to_detrec(trace, signal.SIGTERM, ["--strict"])
    assert rc == 0, err
    assert out == b"clean shutdown after SIGTERM (work 100)\n", (out, err)
    replay_matches(trace, [], REPLAYS)


@pytest.mark.parametrize("mode", [[], ["--strict"]], ids=["default", "strict"])
def test_a_signal_sent_to_oneself_is_handled_before_the_call_returns(tmp_path: Path, mode: list[str]) -> None:
    """self_kill: kill(getpid()) from main and from a thread (main blocks
    it), raise, pthread_kill(self): natively the handler has run when the
    call returns; det deferred kill's to the thread's next call into det."""
    want = "kill: 1\nraise: 1\npthread_kill: 1\nthread kill: 1\ntotal: 4\n"
    trace = tmp_path / "self.db"
    r = detrec("-q", *mode, "--timeout", "30", "-o", trace, "--", program("self_kill"), timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode() == want
    replay_matches(trace, [], REPLAYS)


@pytest.mark.parametrize("mode", [[], ["--strict"]], ids=["default", "strict"])
def test_every_way_of_sending_oneself_a_signal_is_handled_before_it_returns(tmp_path: Path, mode: list[str]) -> None:
    """self_send: sigqueue, tgkill, pthread_sigqueue(self) and the raw
    system calls kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo:
    the raw ones went past det (handled 0 when the call returned), and
    replay, which translated their ids through kill(), diverged on a
    signal_send the recording did not have (0 of 5)."""
    native = subprocess.run([str(program("self_send"))], capture_output=True, timeout=30, check=True).stdout
    assert native.count(b"handled 1") == 11, native
    trace = tmp_path / "send.db"
    r = detrec("-q", *mode, "--timeout", "30", "-o", trace, "--", program("self_send"), timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == native
    replay_matches(trace, [], REPLAYS)
    if not mode:
        replay_matches(trace, ["--relaxed"], 3)


@pytest.mark.parametrize("mode", [[], ["--strict"]], ids=["default", "strict"])
def test_a_signal_every_other_thread_blocks_goes_to_the_one_waiting_for_it(tmp_path: Path, mode: list[str]) -> None:
    """sigsuspend_wait: main takes the worker's kill(getpid(), SIGUSR2) in
    sigsuspend, then restores the default actions and its mask. The replay
    sent the kill again, main unblocked it, and died of it (3 of 3)."""
    trace = tmp_path / "suspend.db"
    r = detrec("-q", *mode, "--timeout", "30", "-o", trace, "--", program("sigsuspend_wait"), timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode() == "sum 500500, woken by SIGUSR2\n"
    replay_matches(trace, [], REPLAYS)
    if not mode:
        replay_matches(trace, ["--relaxed"], 3)


WAITS = ["cond", "mutex", "rwlock", "sem", "barrier", "join", "recv", "poll", "select", "epoll"]


@pytest.mark.parametrize("wait", WAITS)
def test_a_handlers_writes_reach_a_polling_thread_in_default_replay(tmp_path: Path, wait: str) -> None:
    """handler_in_waits: main waits in one blocking call, takes a worker's
    kill(getpid()) there; the worker polls the handler's flag with
    usleep(1000) and then ends main's wait. Default replay diverged 0 of 3
    for each wait (the worker slept once more than recorded): the SIGNAL
    event was done before the handler ran, and the worker's sleeps, skipped
    in replay, had no place in the order. The handler's end is an event
    (SIGNAL_RETURN) and sleeps keep their recorded place."""
    native = subprocess.run([str(program("handler_in_waits")), wait], capture_output=True, timeout=30, check=True)
    assert native.stdout.decode().endswith("handled 1\n"), native.stdout
    trace = tmp_path / f"{wait}.db"
    r = detrec("-q", "--timeout", "30", "-o", trace, "--", program("handler_in_waits"), wait, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == native.stdout
    replay_matches(trace, [], 5)
    assert signal_kinds(trace) == {ev.SIGNAL: 1, ev.SIGNAL_RETURN: 1}


def signal_kinds(trace: Path) -> dict[int, int]:
    """How many SIGNAL and SIGNAL_RETURN events the trace has."""
    return dict(query(trace, "SELECT kind, count(*) FROM events WHERE kind IN (?, ?) GROUP BY kind",
                      (ev.SIGNAL, ev.SIGNAL_RETURN)))


ENDS = {  # how the handler ends: (exit status, output, SIGNAL events, SIGNAL_RETURN events)
    "nested": (0, "handler returned: got1 0 got2 1 done1 1\njoined\n", 2, 2),
    "longjmp": (0, "back from the handler by siglongjmp: got1 1\njoined\n", 1, 0),
    "exit": (3, "exit in handler\n", 1, 0),
}


@pytest.mark.parametrize("how", sorted(ENDS))
def test_a_handler_that_nests_jumps_or_exits_replays(tmp_path: Path, how: str) -> None:
    """handler_ends: a SIGUSR2 handler runs inside the SIGUSR1 handler,
    which then sets the flag the worker polls (each handler's end is an
    event, innermost first); a handler that siglongjmps or exits has no
    end event, in the recording or in the replay, which waits for none.
    A relaxed replay too: the worker polls a flag the handler writes, with
    sleeps, each after the signalled thread's last event before it."""
    status, out, signals, returns = ENDS[how]
    native = subprocess.run([str(program("handler_ends")), how], capture_output=True, timeout=30)
    assert (native.returncode, native.stdout.decode()) == (status, out)
    trace = tmp_path / f"{how}.db"
    r = detrec("-q", "--timeout", "30", "-o", trace, "--", program("handler_ends"), how, timeout=60)
    assert (r.returncode, r.stdout.decode()) == (status, out), r.stderr.decode()
    replay_matches(trace, [], 5)
    # relaxed: the worker's polling sleeps come after the handler (0 of 3 nested and longjmp on main: one sleep more)
    replay_matches(trace, ["--relaxed"], 5)
    want = {ev.SIGNAL: signals, **({ev.SIGNAL_RETURN: returns} if returns else {})}
    assert signal_kinds(trace) == want
    if how == "nested":
        ends = [a for (a,) in query(trace, "SELECT aux FROM events WHERE kind = ? ORDER BY seq", (ev.SIGNAL_RETURN,))]
        assert ends == [signal.SIGUSR2, signal.SIGUSR1], ends


NESTED_WAITS = ["sem", "cond", "join", "read", "poll", "nanosleep"]


@pytest.mark.parametrize("mode", [[], ["--strict"]], ids=["default", "strict"])
@pytest.mark.parametrize("wait", NESTED_WAITS)
def test_a_handler_nested_in_a_handler_that_waits_for_it_runs(tmp_path: Path, wait: str, mode: list[str]) -> None:
    """nested_handlers: main waits (sem_wait, ...); its SIGUSR1 handler
    sleeps in a loop until a SIGUSR2 handler has run in it. A strict
    recording hung until --timeout (det ran a held signal's handler with
    every signal blocked, so the nested one never came); replays run both
    handlers in the recorded order."""
    want = f"{wait}: {1 if wait in ('read', 'poll') else 0}, handlers ran 12e\n"
    trace = tmp_path / f"{wait}.db"
    r = detrec("-q", *mode, "--timeout", "30", "-o", trace, "--", program("nested_handlers"), wait, timeout=60)
    assert (r.returncode, r.stdout.decode()) == (0, want), r.stderr.decode()
    replay_matches(trace, [], REPLAYS)
    assert signal_kinds(trace)[ev.SIGNAL] == 2


@pytest.mark.parametrize("mode", [[], ["--strict"]], ids=["default", "strict"])
def test_pending_signals_read_the_same_in_replay(tmp_path: Path, mode: list[str]) -> None:
    """pending_shown: with SIGUSR1 and SIGUSR2 blocked, sigpending() after a
    kill to itself and one from a child, then sigsuspend (TLPI's
    t_sigsuspend prints its pending set the same way). Replay has no
    kernel-pending signal of its own: it printed 'not pending', and the
    child's signal still pending after sigsuspend."""
    want = ("at first: SIGUSR1 not pending, SIGUSR2 not pending\n"
            "after kill: SIGUSR1 pending, SIGUSR2 not pending\n"
            "after the child: SIGUSR1 pending, SIGUSR2 pending\n"
            "after sigsuspend: SIGUSR1 not pending, SIGUSR2 not pending\n"
            "handled both\n")
    trace = tmp_path / "pending.db"
    r = detrec("-q", *mode, "--timeout", "30", "-o", trace, "--", program("pending_shown"), timeout=60)
    assert (r.returncode, r.stdout.decode()) == (0, want), r.stderr.decode()
    replay_matches(trace, [], 5)


def test_signals_to_processes_outside_the_program_are_not_sent_again(tmp_path: Path) -> None:
    """signal_outside: sigqueue to a process outside the program that
    counts its SIGUSR1s, and kill of another that dies of it (TLPI's
    t_sigqueue to its shell). Replay sent both again: the counter got one
    more each replay, and the kill of the process gone by then failed
    (ESRCH), so the program said something else; now the result is
    recorded and nothing is sent."""
    count = tmp_path / "count"
    counter = subprocess.Popen(
        ["python3", "-c", "import signal, sys, time\n"
         "signal.signal(signal.SIGUSR1, lambda *a: open(sys.argv[1], 'a').write('x'))\n"
         "open(sys.argv[1], 'a')\ntime.sleep(60)", str(count)])
    victim = subprocess.Popen(["sleep", "60"])
    try:
        for _ in range(100):
            if count.exists():
                break
            time.sleep(0.05)
        trace = tmp_path / "out.db"
        r = detrec("-q", "-o", trace, "--", program("signal_outside"), str(counter.pid), str(victim.pid))
        assert (r.returncode, r.stdout) == (0, b"sigqueue: ok\nkill: ok\n"), r.stderr.decode()
        assert victim.wait(timeout=10) == -signal.SIGTERM
        for _ in range(100):
            if count.read_text() == "x":
                break
            time.sleep(0.05)
        assert count.read_text() == "x"
        replay_matches(trace, [], 3)
        time.sleep(0.3)
        assert count.read_text() == "x", "a replay signalled the process outside the program again"
    finally:
        counter.kill()
        victim.kill()
        counter.wait()
        victim.wait()
