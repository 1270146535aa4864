"""tests/servers.py - real servers for the tests (tests/e2e/test_servers.py)
and `make stress` (tests/stress): nginx with a thread pool, nginx as a
master with two worker processes, and memcached with four threads, each
started under detrec on 127.0.0.1, driven by a client started here for a
bounded load (ApacheBench for nginx, a socket client that checks every
answer for memcached), and stopped by a signal to detrec, as a service
manager or a user's Ctrl-C stops it.

Rules: the servers are Debian's packages (tools/setup.sh installs them); a
missing one fails the test that needs it. Load is bounded in requests and
seconds; every process is on 127.0.0.1 and ends with the caller.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from conftest import DETREC, detreplay, need, outcome


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, seconds: float = 30) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"the server ended before it listened: {proc.communicate()[1].decode()}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port} after {seconds} s")


@dataclass
class Server:
    name: str
    argv: Callable[[Path, int], list[str]]  # (its directory, its port) -> the command
    load: Callable[[Path, int], None]       # drives it; asserts every answer was right
    files: Callable[[Path, int], None] = lambda d, p: None  # what it needs in its directory


def record(srv: Server, d: Path, *mode: str) -> tuple[Path, float]:
    """Start the server under detrec, load it, stop it with SIGINT to detrec;
    the trace and the seconds detrec took to end after the signal."""
    trace, took, _ = record_said(srv, d, *mode)
    return trace, took


def record_said(srv: Server, d: Path, *mode: str) -> tuple[Path, float, str]:
    """record(), and what detrec said."""
    port = free_port()
    srv.files(d, port)
    trace = d / f"{srv.name}{'-strict' if mode else ''}.det"
    proc = subprocess.Popen([str(DETREC), *mode, "-o", str(trace), "--", *srv.argv(d, port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=d)
    try:
        wait_port(port, proc)
        srv.load(d, port)
        stop = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - stop
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode()
    assert b"trace saved" in err, err.decode()
    return trace, took, err.decode(errors="replace")


# ---------------------------------------------------------------- nginx

NGINX_CONF = """
daemon off;
master_process {master};
worker_processes {workers};
error_log {d}/error.log info;
pid {d}/nginx.pid;
thread_pool default threads=4 max_queue=65536;
events {{ worker_connections 256; }}
http {{
  access_log off;
  client_body_temp_path {d}/body;
  proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;
  sendfile {sendfile};
  aio threads;
  server {{ listen 127.0.0.1:{port}; root {d}/www; }}
}}
"""
SIZES = (50_000, 120_000, 200_000)


def nginx_files(master: bool, sendfile: bool) -> Callable[[Path, int], None]:
    def files(d: Path, port: int) -> None:
        (d / "www").mkdir(exist_ok=True)
        for i, n in enumerate(SIZES):
            (d / "www" / f"f{i}.bin").write_bytes(os.urandom(n))
        (d / "nginx.conf").write_text(NGINX_CONF.format(
            d=d, port=port, master="on" if master else "off", workers=2 if master else 1,
            sendfile="on" if sendfile else "off"))
    return files


def nginx_argv(d: Path, port: int) -> list[str]:
    return [need("nginx"), "-p", str(d), "-c", str(d / "nginx.conf")]


def ab_load(d: Path, port: int) -> None:
    ab = need("ab")
    for i in range(len(SIZES)):
        r = subprocess.run([ab, "-q", "-s", "20", "-n", "400", "-c", "16", f"http://127.0.0.1:{port}/f{i}.bin"],
                           capture_output=True, timeout=120)
        text = r.stdout.decode()
        assert r.returncode == 0 and "Complete requests:      400" in text, text + r.stderr.decode()
        assert "Failed requests:        0" in text and "Non-2xx" not in text, text


def no_alert(d: Path) -> None:
    log = (d / "error.log").read_text(errors="replace")
    bad = [line for line in log.splitlines() if "[alert]" in line or "[emerg]" in line or "[crit]" in line]
    assert not bad, "\n".join(bad)


# ------------------------------------------------------------- memcached

def memcached_argv(d: Path, port: int) -> list[str]:
    as_root = ["-u", "root"] if os.getuid() == 0 else []  # memcached refuses root unless told
    return [need("memcached"), "-t", "4", "-p", str(port), "-U", "0", "-l", "127.0.0.1", "-c", "256", "-m", "64",
            *as_root]


def memcached_load(d: Path, port: int, conns: int = 16, ops: int = 300) -> None:
    errors: list[str] = []

    def client(c: int) -> None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
                f = s.makefile("rwb")
                for i in range(ops):
                    key, val = f"k{c}-{i % 50}", os.urandom(8).hex() * (1 + i % 16)
                    f.write(f"set {key} 0 0 {len(val)}\r\n{val}\r\n".encode())
                    f.flush()
                    if (line := f.readline()) != b"STORED\r\n":
                        raise AssertionError(f"set {key}: {line!r}")
                    f.write(f"get {key}\r\n".encode())
                    f.flush()
                    head, body, end = f.readline(), f.readline(), f.readline()
                    if head != f"VALUE {key} 0 {len(val)}\r\n".encode() or body != f"{val}\r\n".encode() \
                            or end != b"END\r\n":
                        raise AssertionError(f"get {key}: {head!r} {body[:40]!r} {end!r}")
        except (OSError, AssertionError) as e:
            errors.append(f"connection {c}: {e}")

    threads = [threading.Thread(target=client, args=(c,)) for c in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors[:5]


SERVERS = {
    "nginx_pool": Server("nginx_pool", nginx_argv, ab_load, nginx_files(master=False, sendfile=False)),
    "nginx_workers": Server("nginx_workers", nginx_argv, ab_load, nginx_files(master=True, sendfile=True)),
    "memcached": Server("memcached", memcached_argv, memcached_load),
}


@contextmanager
def server_dir(name: str) -> Iterator[Path]:
    """A directory for one recording that anyone may read: nginx's workers
    run as nobody, as they do when installed (pytest's directories are
    root's alone)."""
    d = Path(tempfile.mkdtemp(prefix=f"det-{name}-"))
    try:
        d.chmod(0o755)
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def check_recording(srv: Server, d: Path, trace: Path, took: float) -> None:
    """What every recording of a server must be: stopped by the signal, its
    own shutdown recorded (exit 0), and for nginx no alert in its log."""
    assert took < 30, f"detrec took {took:.1f} s to end after SIGINT"
    if srv.name.startswith("nginx"):
        no_alert(d)
    rec = outcome(trace)
    assert rec["status"] == "exited" and rec["exit_code"] == 0, rec


def replays_to_the_end(trace: Path, *mode: str) -> None:
    r = detreplay(*mode, trace, timeout=600)
    err = r.stderr.decode(errors="replace")
    assert r.returncode == 0 and "outcome matches the recording" in err, err
