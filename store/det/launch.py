"""Starting a program under libdet.so, the same way for recording and replay.

Rules: whatever shapes the program's initial memory (the exec path, argv,
environment and its order, ASLR) is decided here once, so that a replay
gets exactly the recording's layout; det's own variables are appended last,
with fixed widths.
"""

from __future__ import annotations

import _thread
import contextlib
import ctypes
import fcntl
import functools
import hashlib
import math
import os
import select
import shutil
import signal
import stat
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

from .constants import DET_EXIT_STOPPED, DET_SHM_ENV, PROC_STATES
from .errors import DetError
from .native import libdet_path

# Exit statuses of detrec and detreplay besides the program's own (README.md).
EXIT_TIMEOUT = 124  # --timeout stopped the program
EXIT_STOPPED = DET_EXIT_STOPPED  # det stopped it (a replay divergence, or something det cannot follow)

ADDR_NO_RANDOMIZE = 0x0040000
PR_SET_PDEATHSIG = 1
SHM_ENV = DET_SHM_ENV
TAIL = 4096


def resolve_program(name: str, static_ok: bool = False) -> str:
    """Absolute path of the program to run, or a DetError saying why not.
    static_ok: a statically linked program is no reason (detrec --ptrace)."""
    if "/" in name:
        path = os.path.abspath(name)
    else:
        found = shutil.which(name)
        if not found:
            raise DetError(f"{name}: program not found in PATH", status=127)
        path = os.path.abspath(found)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise DetError(f"{name}: no such program", status=127) from None
    except OSError as e:
        raise DetError(f"{name}: {e.strerror}", status=126) from None
    if not stat.S_ISREG(st.st_mode):
        raise DetError(f"{name}: not a regular file", status=126)
    if not os.access(path, os.X_OK):
        raise DetError(f"{name}: not executable", status=126)
    if changes_ids(st):
        raise DetError(f"{name}: set-user-ID or set-group-ID to another user or group, so the kernel drops "
                       "det's LD_PRELOAD and det cannot record it", status=126)
    if grants_capabilities(path):
        raise DetError(f"{name}: it has file capabilities that running it would grant, so the kernel drops "
                       "det's LD_PRELOAD and det cannot record it", status=126)
    if is_static(path, name) and not static_ok:
        raise DetError(
            f"{name}: statically linked; det works by preloading libdet.so into the program's "
            "dynamic loader, so it needs a dynamically linked program (`detrec --ptrace` records it through "
            "its system calls)",
            status=126,
        )
    return path


def changes_ids(st: os.stat_result) -> bool:
    """Would exec'ing this file change the user or group the program runs
    as? Then the loader runs it in secure mode, ignoring LD_PRELOAD (the
    same rule as preload/process.c applies to the program's children)."""
    return bool((st.st_mode & stat.S_ISUID and st.st_uid != os.geteuid())
                or (st.st_mode & stat.S_ISGID and st.st_gid != os.getegid()))


# struct vfs_cap_data (linux/capability.h): its size by revision
VFS_CAP_REVISION_MASK = 0xFF000000
VFS_CAP_FLAGS_EFFECTIVE = 0x000001
VFS_CAP_SIZES = {0x01000000: 12, 0x02000000: 20, 0x03000000: 24}


def grants_capabilities(path: str) -> bool:
    """Would exec'ing this file grant capabilities (its security.capability
    attribute)? Then the kernel runs it in secure mode too. For a real user
    other than root the exec is secure when the file's effective bit is set
    or the new permitted set, (bounding & fP) | (inheritable & fI), is not
    empty, whatever the process held before; a nosuid mount ignores the
    attribute (capabilities(7), the kernel's cap_bprm_creds_from_file; the
    same rule as preload/process.c grants_capabilities)."""
    if os.getuid() == 0:
        return False
    try:
        raw = os.getxattr(path, "security.capability")
        if os.statvfs(path).f_flag & os.ST_NOSUID:
            return False
    except OSError:
        return False
    magic = int.from_bytes(raw[:4], "little") if len(raw) >= 4 else 0
    revision = magic & VFS_CAP_REVISION_MASK
    if VFS_CAP_SIZES.get(revision) != len(raw):
        return False  # malformed: the kernel refuses the exec itself
    if magic & VFS_CAP_FLAGS_EFFECTIVE:
        return True
    words = range(1 if revision == 0x01000000 else 2)
    permitted = sum(int.from_bytes(raw[4 + 8 * w:8 + 8 * w], "little") << (32 * w) for w in words)
    inheritable = sum(int.from_bytes(raw[8 + 8 * w:12 + 8 * w], "little") << (32 * w) for w in words)
    held = {}
    with open("/proc/self/status") as f:  # (the program gets detrec's credentials)
        for line in f:
            key, _, value = line.partition(":")
            if key in ("CapInh", "CapBnd"):
                held[key] = int(value, 16)
    return bool((permitted & held.get("CapBnd", 0)) | (inheritable & held.get("CapInh", 0)))


def is_static(path: str, name: str) -> bool:
    """Is it a statically linked x86-64 program (no PT_INTERP)? A DetError
    for what det cannot run at all (not ELF, not x86-64); False for a script
    (its interpreter is checked when it runs)."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:2] == b"#!":
                return False
            if head[:4] != b"\x7fELF":
                raise DetError(f"{name}: not an ELF program", status=126)
            if head[4] != 2 or struct.unpack_from("<H", head, 18)[0] != 62:
                raise DetError(f"{name}: not an x86-64 program; det records x86-64 programs only", status=126)
            phoff = struct.unpack_from("<Q", head, 32)[0]
            phentsize, phnum = struct.unpack_from("<HH", head, 54)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError as e:
        raise DetError(f"{name}: cannot read ({e.strerror})", status=126) from None
    types = [struct.unpack_from("<I", table, i * phentsize)[0] for i in range(phnum)]
    return 3 not in types  # PT_INTERP


def program_env(base: dict[str, str], shm_fd: int, shm_pid: int | None = None) -> dict[str, str]:
    """The program's environment: `base` in its order, then det's variables.
    The program opens det's shared memory as /proc/SHM_PID/fd/SHM_FD (this
    process, unless another holds the region for it)."""
    env = dict(base)
    lib = str(libdet_path())
    prior = env.pop("LD_PRELOAD", "")
    env["LD_PRELOAD"] = lib + (":" + prior if prior else "")
    # This process's pid and descriptor, reopened by every process of the
    # program through /proc (fixed width: the same stack size in every mode).
    env[SHM_ENV] = f"{shm_pid or os.getpid():07d}:{shm_fd:06d}"
    return env


def _preexec(root: str, cwd: str | None = None) -> None:
    """In the child of a spawn into a packed trace's view (det.replay.view)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    os.chroot(root)
    os.chdir(cwd or "/")


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


@contextlib.contextmanager
def _no_aslr() -> Iterator[None]:
    """What this thread starts runs without ASLR: a thread's personality is
    its own, passed on by fork and kept by exec, so it is set around the
    spawn rather than in the child, which then needs no Python code and
    subprocess can use vfork (a few ms less per run of a hunt). The child's
    death signal, which has to be set in it, libdet.so sets (runtime.c
    map_region); the watchdog covers a program that never loads it."""
    libc = _libc()
    old = libc.personality(0xFFFFFFFF)
    libc.personality(old | ADDR_NO_RANDOMIZE)
    try:
        yield
    finally:
        libc.personality(old)


@functools.cache
def ptys_available() -> bool:
    """Whether this machine gives out ptys (a minimal system may have no
    /dev/ptmx or devpts): without them a terminal is passed through (stdin)
    or becomes a pipe (outputs), as before det had ptys."""
    try:
        a, b = os.openpty()
    except OSError:
        return False
    os.close(a)
    os.close(b)
    return True


def output_source(fd: int) -> dict[str, object]:
    """What detrec's output stream fd is, and so what the program's is: a
    terminal stays a terminal (a pty det reads, of the terminal's size at
    the start); anything else is a pipe. Recorded in meta, so that replay
    gives the program the same kind of stream whatever detreplay's is."""
    if not os.isatty(fd) or not ptys_available():
        return {"kind": "pipe"}
    try:
        rows, cols = struct.unpack("hhhh", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))[:2]
    except OSError:
        rows, cols = 24, 80
    return {"kind": "tty", "rows": rows or 24, "cols": cols or 80}


def output_pair(source: dict[str, object] | None) -> tuple[int, int, bool]:
    """(read end, write end, is a pty) for one output stream of the program.
    A pty's output processing is off, so what det reads (hashes, and
    forwards to the real terminal, which translates newlines itself) is
    exactly what the program wrote; the same settings in every run."""
    if not source or source.get("kind") != "tty" or not ptys_available():
        r, w = os.pipe()
        return r, w, False
    master, slave = os.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST
    attrs[3] &= ~(termios.ECHO | termios.ECHONL)
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    size = struct.pack("hhhh", int(source.get("rows", 24)), int(source.get("cols", 80)), 0, 0)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, size)
    os.set_inheritable(master, False)
    return master, slave, True


class Capture:
    """One output stream of the program: forwarded, counted, hashed. A pty's
    read end says EIO once every writer has closed it: that is its end."""

    def __init__(self, fd: int, sink: IO[bytes] | None) -> None:
        self.fd = fd
        self.sink = sink
        self.bytes = 0
        self.sha = hashlib.sha256()
        self.tail = b""

    def take(self) -> bool:
        """Read what is there; False at the stream's end (then closed)."""
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            os.close(self.fd)
            return False
        self.bytes += len(chunk)
        self.sha.update(chunk)
        self.tail = (self.tail + chunk)[-TAIL:]
        if self.sink is not None:
            try:
                self.sink.write(chunk)
                self.sink.flush()
            except (OSError, ValueError):
                self.sink = None
        return True

    def result(self) -> dict[str, object]:
        return {"bytes": self.bytes, "sha256": self.sha.hexdigest(), "tail": self.tail}


class Outputs:
    """The program's output streams, read until each ends: by one thread
    of their own (one, not one per stream, started with _thread: threading's
    start waits until the new thread has taken the GIL to say it runs, which
    cost a hunt about a millisecond per thread and run); or, `inline`, by
    whoever waits for the program (Program.wait), which saves a hunt's run
    the thread and the wake-ups of handing the streams' ends over."""

    def __init__(self, *streams: Capture, inline: bool = False) -> None:
        self.streams = streams
        self.inline = inline
        self.open = {c.fd: c for c in streams}
        self.poller = select.poll()
        for fd in self.open:
            self.poller.register(fd, select.POLLIN)
        if not inline:
            self.done = threading.Lock()
            self.done.acquire()
            _thread.start_new_thread(self._run, ())

    def _run(self) -> None:
        try:
            self._pump()
        finally:
            self.done.release()

    def _pump(self) -> None:
        while self.open:
            self.take(self.poller.poll())

    def take(self, ready: list[tuple[int, int]]) -> None:
        """Read the streams poll() found ready (their ends close them)."""
        for fd, _ in ready:
            if fd in self.open and not self.open[fd].take():
                self.poller.unregister(fd)
                del self.open[fd]

    def ended(self, wait: float) -> bool:
        """Have all the streams ended, or do they within `wait` seconds?"""
        if not self.inline:
            if self.done.acquire(timeout=wait):
                self.done.release()
                return True
            return False
        deadline = time.monotonic() + wait
        while self.open and (left := deadline - time.monotonic()) > 0:
            self.take(self.poller.poll(int(left * 1000) + 1))
        return not self.open

    def finish(self) -> list[dict[str, object]]:
        if self.inline:
            self._pump()
            return [c.result() for c in self.streams]
        with self.done:
            return [c.result() for c in self.streams]


def stdin_source() -> dict[str, object]:
    """What detrec's stdin is, and so how the program's stdin is recorded:
    a terminal becomes a pty (the program still sees a terminal) into which
    detrec copies the lines the user types, kept in the trace and fed again
    in replay; a regular file is passed through and identified by path and
    hash; anything else (a pipe) is copied into the trace as the program
    reads it, and fed back in replay."""
    try:
        st = os.fstat(0)
    except OSError:
        return {"kind": "none"}
    if os.isatty(0):
        return {"kind": "pty"} if ptys_available() else {"kind": "tty"}
    if stat.S_ISREG(st.st_mode):
        path = os.readlink("/proc/self/fd/0")
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return {"kind": "file", "path": path, "sha256": h.hexdigest(), "offset": os.lseek(0, 0, os.SEEK_CUR)}
    return {"kind": "pipe"}


FED_KINDS = ("pipe", "pty")  # stdin kinds det copies into the trace and feeds in replay
EOF_BYTE = b"\x04"  # VEOF: what a pty in canonical mode turns into an end of file for its reader


class StdinFeed:
    """Copies chunks into the program's stdin, a pipe or (`pty`) a pty in
    canonical mode without echo (the user's own terminal echoes and edits
    the line before detrec copies it); `spool` keeps what was copied. A
    pty's writing end stays open until close(): closing it would throw
    away what the program has not read yet."""

    def __init__(self, chunks, spool: IO[bytes] | None, pty: bool = False) -> None:
        self.pty = pty = pty and ptys_available()
        if pty:
            self.w, self.r = os.openpty()
            attrs = termios.tcgetattr(self.r)
            attrs[3] &= ~(termios.ECHO | termios.ECHONL)
            termios.tcsetattr(self.r, termios.TCSANOW, attrs)
            os.set_inheritable(self.w, False)
        else:
            self.r, self.w = os.pipe()
        self.chunks = chunks
        self.spool = spool
        self.thread = threading.Thread(target=self._pump, daemon=True)

    def start(self) -> None:
        os.close(self.r)
        if not self.pty and isinstance(self.chunks, (list, tuple)) and self._fits(sum(map(len, self.chunks))):
            self._pump()  # (input read ahead that the pipe holds whole: written now, no thread to start)
        else:
            self.thread.start()

    def _fits(self, size: int) -> bool:
        """Does the pipe hold `size` bytes without a reader?"""
        try:
            return size <= fcntl.fcntl(self.w, fcntl.F_GETPIPE_SZ)
        except OSError:
            return False

    def _pump(self) -> None:
        try:
            for chunk in self.chunks:
                if self.spool is not None:
                    self.spool.write(chunk)
                os.write(self.w, chunk) if len(chunk) < 65536 else self._write_all(chunk)
        except (OSError, DetError):
            pass  # the program stopped reading, or the replay ended and closed the trace
        finally:
            if not self.pty:
                os.close(self.w)

    def close(self) -> None:
        if self.pty and self.w >= 0:
            os.close(self.w)
            self.w = -1

    def _write_all(self, chunk: bytes) -> None:
        view = memoryview(chunk)
        while view:
            n = os.write(self.w, view)
            view = view[n:]


def read_own_terminal():
    """What the user types on detrec's terminal, line by line as the
    terminal hands it over; an end of file (Ctrl-D) is passed on as one."""
    while True:
        try:
            chunk = os.read(0, 65536)
        except OSError:
            return
        yield chunk or EOF_BYTE


def read_own_stdin():
    while True:
        try:
            chunk = os.read(0, 65536)
        except OSError:
            return
        if not chunk:
            return
        yield chunk


def spawn(argv: list[str], name: str, workdir: str, stdin: StdinFeed | int | None, out_w: int, err_w: int,
          **popen: Any) -> subprocess.Popen:
    """Start the program without ASLR on its stdin (a feed, started here, or
    a descriptor, closed here) and outputs' write ends (closed here); `name`
    and `workdir` word the one-line errors (no working directory, no exec)."""
    try:
        with _no_aslr():
            proc = subprocess.Popen(argv, stdin=stdin.r if isinstance(stdin, StdinFeed) else stdin,
                                    stdout=out_w, stderr=err_w, **popen)
    except FileNotFoundError:
        raise DetError(f"{workdir}: working directory is gone", status=2) from None
    except OSError as e:
        raise DetError(f"{name}: cannot start ({e.strerror})", status=126) from None
    finally:
        os.close(out_w)
        os.close(err_w)
        if isinstance(stdin, int):
            os.close(stdin)
    if isinstance(stdin, StdinFeed):
        stdin.start()
    return proc


class Program:
    """A running program under det. `stdin` is None (inherit), an fd to
    give it (closed here), or a StdinFeed; `outputs` are output_source()
    of its stdout and stderr (None: a pipe). With `root`, the program runs
    chroot'ed there, and exe and cwd are paths in that root; else `preexec`
    runs in the child before the program (a live replica's own network).
    inline_outputs: its outputs are read by whoever calls wait() and
    wait_others(), not by a thread (Outputs), where a pidfd says when it ends
    (a hunt's runs: their outputs are not forwarded, and every run paid for
    the thread)."""

    def __init__(
        self, exe: str, argv: list[str], env: dict[str, str], cwd: str, shm_fd: int, forward: bool,
        stdin: StdinFeed | int | None = None, outputs: tuple[dict | None, dict | None] = (None, None),
        root: str | None = None, shm_pid: int | None = None, preexec: Callable[[], None] | None = None,
        inline_outputs: bool = False,
    ) -> None:
        out_r, out_w, _ = output_pair(outputs[0])
        err_r, err_w, _ = output_pair(outputs[1])
        env = program_env(env, shm_fd, shm_pid)
        # (every image det starts for the program has it: exec keeps it, preload/process.c)
        self.det_var = f"{SHM_ENV}={env[SHM_ENV]}".encode()
        self.region_file = file_identity(f"/proc/{shm_pid or os.getpid()}/fd/{shm_fd}")
        self.proc = spawn(argv, argv[0], cwd, stdin, out_w, err_w, executable=exe, env=env,
                          cwd=cwd if root is None else None,
                          preexec_fn=preexec if root is None else lambda: _preexec(root, cwd))
        self.stdin = stdin if isinstance(stdin, StdinFeed) else None
        self.started = time.monotonic()
        self.ended: float | None = None  # when wait() first saw it end
        try:
            self._pidfd: int | None = os.pidfd_open(self.proc.pid)
        except OSError:
            self._pidfd = None
        self.region: Any = None  # set by the caller: the program's other processes are listed there
        self.output = Outputs(Capture(out_r, sys.stdout.buffer if forward else None),
                              Capture(err_r, sys.stderr.buffer if forward else None),
                              inline=inline_outputs and self._pidfd is not None)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait(self, timeout: float | None = None) -> int | None:
        """Its status once it ended (seen at once, through a pidfd), or None
        after timeout seconds."""
        if self._pidfd is not None and self.proc.returncode is None:
            if not self._ended_within(timeout):
                return None
            os.close(self._pidfd)
            self._pidfd = None
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        if self.ended is None:
            self.ended = time.monotonic()
        return rc

    def _ended_within(self, timeout: float | None) -> bool:
        """Did the first process end (its pidfd readable) within timeout
        seconds? Inline outputs are read meanwhile."""
        assert self._pidfd is not None
        if not self.output.inline:
            return bool(select.select([self._pidfd], [], [], timeout)[0])
        self.output.poller.register(self._pidfd, select.POLLIN)
        try:
            return self._read_outputs(timeout, self._pidfd)
        finally:
            self.output.poller.unregister(self._pidfd)

    def _read_outputs(self, timeout: float | None, until_fd: int = -1) -> bool:
        """Read inline outputs for timeout seconds (None: for ever), or until
        until_fd is readable (then True)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not self.output.open and until_fd < 0:
                time.sleep(left or 0.0)
                return False
            ready = self.output.poller.poll(None if left is None else math.ceil(left * 1000))
            self.output.take([r for r in ready if r[0] != until_fd])
            if any(fd == until_fd for fd, _ in ready):
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal the program, and the other processes it started, if any."""
        pids = [self.proc.pid] + self.others()
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def signal_first(self, sig: int) -> None:
        """Signal the program's first process only (the one det started)."""
        try:
            os.kill(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def wait_others(self, until: Callable[[], bool]) -> bool:
        """After the program's first process ended: wait for the others it
        started (that outlived it) to end, or until `until()` says to stop
        waiting (then kill them). Returns whether any had to be killed."""
        while self.others():
            if until():
                self.kill()
                return True
            if self.output.inline:
                self._read_outputs(0.02)
            else:
                time.sleep(0.02)
        return False

    def end_stragglers(self, grace: float) -> list[int]:
        """After the program's processes ended as far as det knows: when its
        output streams are still open `grace` seconds on, a process of this
        run that det's region does not list holds them (a damaged trace's
        child, parked past the events it has); kill every process that
        carries this run's variable or maps its region. Returns their pids."""
        if self.output.ended(grace):
            return []
        pids = [int(d) for d in os.listdir("/proc") if d.isdigit() and int(d) not in (self.proc.pid, os.getpid())]
        ours = [pid for pid in pids if self._of_this_run(pid)]
        for pid in ours:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return ours

    def others(self) -> list[int]:
        """The program's processes other than its first that still run. The
        process table is in det's region, which the program can write: a pid
        from there counts only if that process carries this run's det_var, or
        maps this run's region (so that pid 1 written there is neither waited
        for nor killed). The variable alone is not enough: a daemon that sets
        its process title (nginx, postgres) writes over the memory
        /proc/PID/environ reads."""
        if self.region is None:
            return []
        return [
            int(p.pid) for p in self.region.processes()
            if p.pid > 0 and p.pid != self.proc.pid and PROC_STATES.get(p.state) != "gone"
            and self._of_this_run(int(p.pid))
        ]

    def _of_this_run(self, pid: int) -> bool:
        """Does pid still run, carrying this run's det_var or mapping its region?"""
        return process_alive(pid) and (has_env_entry(pid, self.det_var) or maps_file(pid, self.region_file))

    def outputs(self) -> tuple[dict[str, object], dict[str, object]]:
        out, err = self.output.finish()
        if self.stdin is not None:
            self.stdin.close()
        return out, err


def process_alive(pid: int) -> bool:
    """Is pid a process that still runs (not gone, not a zombie)?"""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:][:1] not in (b"Z", b"X")


def has_env_entry(pid: int, entry: bytes) -> bool:
    """Does process pid's environment (as it was started) hold `entry`?"""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read()
    except OSError:
        return False
    return env.startswith(entry + b"\0") or b"\0" + entry + b"\0" in env


def file_identity(path: str) -> tuple[int, int] | None:
    """(device, inode) of the file at path, None if there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def maps_file(pid: int, ident: tuple[int, int] | None) -> bool:
    """Does process pid map the file whose (device, inode) is ident?"""
    if ident is None:
        return False
    dev = f"{os.major(ident[0]):02x}:{os.minor(ident[0]):02x}".encode()
    ino = str(ident[1]).encode()
    try:
        with open(f"/proc/{pid}/maps", "rb") as f:
            for line in f:
                fields = line.split(None, 5)
                if len(fields) >= 5 and fields[4] == ino and fields[3] == dev:
                    return True
    except OSError:
        pass
    return False


def shell_status(returncode: int) -> int:
    """The status a shell would report: 128+N for death by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def signal_name(n: int) -> str:
    """SIGABRT for 6; `signal N` for a number Python has no name for."""
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def describe_status(returncode: int) -> str:
    if returncode < 0:
        return f"killed by {signal_name(-returncode)}"
    return f"exit {returncode}"
