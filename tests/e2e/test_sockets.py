"""Sockets and kernel-side copies: what a program sees from recv's flags,
from ancillary data (descriptors and credentials passed over unix sockets),
from sendfile/splice/tee/copy_file_range and from reads, writes, waits,
accept, rt_sigaction and exec made with syscall() is what it sees natively, when recorded and in every replay mode."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import detrec, detreplay, program

MODES = {"default": [], "relaxed": ["--relaxed"], "strict": ["--strict"]}
REPLAYS = 4


def native(name: str, *args: str) -> bytes:
    r = subprocess.run([program(name), *args], capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout


def recorded_and_replayed_as_native(name: str, mode: str, tmp_path: Path, *args: str, replays: int = REPLAYS) -> None:
    want = native(name, *args)
    trace = tmp_path / f"{name}.db"
    rec_flags = ["--strict"] if mode == "strict" else []
    r = detrec("-q", *rec_flags, "-o", trace, "--", program(name), *args, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == want, f"recorded output differs from native:\n{r.stdout.decode()}\nnative:\n{want.decode()}"
    replay_flags = ["--relaxed"] if mode == "relaxed" else []
    for i in range(replays):
        rr = detreplay("-q", *replay_flags, trace, timeout=60)
        assert rr.returncode == 0, f"replay {i + 1}: {rr.stderr.decode()}"
        assert rr.stdout == want, f"replay {i + 1} output differs:\n{rr.stdout.decode()}\n{rr.stderr.decode()}"


@pytest.mark.parametrize("mode", MODES)
def test_recv_flags_and_msg_flags(mode: str, tmp_path: Path) -> None:
    """MSG_DONTWAIT on an empty socket is EAGAIN, MSG_PEEK leaves the bytes,
    MSG_TRUNC gives the datagram's length, MSG_WAITALL waits for all, and
    recvmsg says MSG_TRUNC / MSG_CTRUNC: on a socket pair of the program's
    own and on a UDP socket. On TCP, MSG_TRUNC discards the bytes: det
    recorded them from the (NULL) buffer and the program died of SIGSEGV."""
    recorded_and_replayed_as_native("recv_flags", mode, tmp_path, replays=10)


@pytest.mark.parametrize("mode", MODES)
def test_descriptors_and_credentials_passed(mode: str, tmp_path: Path) -> None:
    """SCM_RIGHTS from a forked child and within one process, SCM_CREDENTIALS,
    MSG_CMSG_CLOEXEC, and SCM_RIGHTS over a unix socket the program listens
    on: the receiver gets usable descriptors that read what they did."""
    recorded_and_replayed_as_native("scm_pass", mode, tmp_path)


@pytest.mark.parametrize("mode", MODES)
def test_master_commands_its_worker_over_a_channel(mode: str, tmp_path: Path) -> None:
    """nginx's channel: the master sendmsg's commands (one with a descriptor)
    on a socket pair; the worker's epoll says its non-blocking end is
    readable (an input, given at once in replay), then it receives. The
    receive waits for the master's send (a hand-off, as a pipe's write is,
    sent again with its ancillary data); on main it found nothing yet and
    replays diverged 5 of 5 default, 3 of 3 relaxed ('a socket pair's
    receive returned another count than recorded', as nginx's workers did
    at SIGQUIT)."""
    recorded_and_replayed_as_native("channel_quit", mode, tmp_path, replays=5)


@pytest.mark.parametrize("mode", MODES)
def test_sendfile_splice_tee_copy_file_range(mode: str, tmp_path: Path) -> None:
    recorded_and_replayed_as_native("sendfile_io", mode, tmp_path)


@pytest.mark.parametrize("mode", MODES)
def test_raw_syscall_reads_and_writes(mode: str, tmp_path: Path) -> None:
    """syscall(SYS_readv/preadv/writev/recvmsg/recvmmsg/sendmsg/sendmmsg)
    go through det's wrappers like the libc calls, instead of stopping."""
    recorded_and_replayed_as_native("raw_io", mode, tmp_path)


@pytest.mark.parametrize("mode", MODES)
def test_raw_syscall_waits_accept_sigaction_and_exec(mode: str, tmp_path: Path) -> None:
    """syscall(SYS_ppoll/select/pselect6/epoll_wait/epoll_pwait/accept4/
    rt_sigaction/execveat) go through det's wrappers too: each stopped the
    program ("syscall(SYS_ppoll) is not supported by det")."""
    recorded_and_replayed_as_native("raw_calls", mode, tmp_path, "exec", replays=10)


@pytest.mark.parametrize("mode", MODES)
def test_socket_options_and_names(mode: str, tmp_path: Path) -> None:
    """setsockopt(TCP_NODELAY) on an accepted connection (a stand-in in
    replay), getsockopt(SO_ERROR) after a non-blocking connect (not made in
    replay), getsockname and getpeername say what they said when recorded."""
    recorded_and_replayed_as_native("sockopt_conn", mode, tmp_path)
