"""Hunting past one machine: dethunt --cluster runs its seeds on a Dask
distributed cluster, one task per seed, each task one trace.

Why Dask distributed: it is a Python library (a pip install, ~5 MB with its
dependencies) whose scheduler and workers are plain processes
(`dask scheduler`, `dask worker`), started by hand, over SSH, or by a batch
system (dask-jobqueue: SLURM, PBS...); a task is an ordinary Python call,
and the client can run a function on the one worker that holds a file
(`Client.run(..., workers=[address])`), which is how traces come back. Ray
would do as well but brings much more (an object store, its own raylet and
GCS processes, ~100 MB of wheels) for nothing a hunt needs: seeds are
independent, and a hunt's data are a few kept traces.

Rules of this module:
 - A task records one seed on its worker (Runs.run: det.record.seeds) into the
   worker's temp directory, det-hunt-ID-PID/ (one per worker process:
   workers of one machine share /tmp), and returns the run's summary; the
   hunt merges summaries by seed and fetches only the traces it keeps
   (failing ones, and a passing partner), which the worker converts from
   their capture logs then (Runs.use_kept); the directory, and the
   logs of the runs not kept, are removed on every worker when the hunt
   ends.
 - Workers run the program at the path the client resolved, so the program
   must be there on every worker (a shared file system, or the same image):
   a task checks its sha256 and det's version against the client's, and
   fails with a message that says which differs.
 - The program gets the client's environment and working directory.
 - Stopping (the first failure, Ctrl-C) cancels the tasks not started; a
   task under way finishes (bounded by the run's --timeout) and is ignored.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

from det import __version__
from det.errors import DetError
from det.trust import sha256_file

from .hunt import LAST_PASS, Runs, RunSpec, RunSummary

_CHECKED: dict[str, str] = {}  # on a worker: program path -> sha256, once per hunt and program


def _scratch(hunt_id: str) -> Path:
    # one per worker process: two workers on one machine share its /tmp, and
    # each keeps its own last pass there (under one name, last-pass.db)
    return Path(tempfile.gettempdir()) / f"det-hunt-{hunt_id}-{os.getpid()}"


def _remote_run(spec: RunSpec, index: int, pct_k: int, hunt_id: str, det_version: str, runs: Runs) -> RunSummary:
    """A task: on a worker, record run `index` of the hunt."""
    from distributed import get_worker

    where = get_worker().address
    if det_version != __version__:
        raise DetError(f"worker {where} has det {__version__}, the client det {det_version}")
    if not os.path.exists(spec.exe):
        raise DetError(f"worker {where} has no {spec.exe} (the program must be at the same path on every worker)")
    if _CHECKED.get(spec.exe) != spec.exe_sha256:
        _CHECKED[spec.exe] = sha256_file(spec.exe)
        if _CHECKED[spec.exe] != spec.exe_sha256:
            raise DetError(f"worker {where} has another {spec.exe} than the client (sha256 differs)")
    scratch = _scratch(hunt_id)
    scratch.mkdir(mode=0o700, exist_ok=True)
    run = runs.run(spec, index, pct_k, scratch)
    run.host = where
    return run


def _read(path: str, runs: Runs) -> tuple[bytes, bool]:
    """A kept run's trace (converted now if its log waited), and whether it was converted now."""
    return runs.use_kept(path, Path.read_bytes)


def _remove(paths: list[str], runs: Runs) -> None:
    for p in paths:
        runs.drop(p)


def _remove_scratch(hunt_id: str, runs: Runs) -> None:
    runs.drop_all(_scratch(hunt_id))
    shutil.rmtree(_scratch(hunt_id), ignore_errors=True)


class DaskEngine:
    """det.hunt's Engine on a Dask cluster."""

    def __init__(self, address: str | None, scheduler_file: str | None, runs: Runs, timeout: float = 10) -> None:
        self.runs = runs
        try:
            from distributed import Client
        except ImportError:
            raise DetError("--cluster needs Dask distributed: pip install 'det[cluster]' (or distributed)") from None
        try:
            if scheduler_file:
                self.client = Client(scheduler_file=scheduler_file, timeout=timeout)
            else:
                self.client = Client(address, timeout=timeout)
        except (OSError, TimeoutError, ValueError) as e:
            raise DetError(f"cannot reach the Dask scheduler at {address or scheduler_file}: {e}") from None
        try:
            self.client.wait_for_workers(1, timeout=timeout)
        except TimeoutError:
            self.client.close()
            raise DetError(f"the Dask cluster at {address or scheduler_file} has no workers") from None
        threads = sum(self.client.nthreads().values())
        self.slots = 2 * threads
        self.hunt_id = uuid.uuid4().hex[:12]
        self.running: dict[Any, tuple[Any, int]] = {}  # key -> (future, run index), till it is done
        self.cancelled: set[Any] = set()
        self.doomed: dict[str, list[str]] = {}  # worker -> failing traces not kept, removed in batches

    def describe(self) -> str:
        return f"{len(self.client.nthreads())} Dask worker(s) at {self.client.scheduler.address}"

    def submit(self, spec: RunSpec, index: int, pct_k: int) -> Any:
        f = self.client.submit(_remote_run, spec, index, pct_k, self.hunt_id, __version__, self.runs, pure=False,
                               key=f"det-run-{self.hunt_id}-{index}")
        self.running[f.key] = (f, index)
        return f

    def wait(self, handles: list[Any], timeout: float) -> list[tuple[Any, RunSummary | BaseException]]:
        from distributed import wait

        try:
            done, _ = wait(handles, timeout=timeout, return_when="FIRST_COMPLETED")
        except TimeoutError:
            return []
        out: list[tuple[Any, RunSummary | BaseException]] = []
        for f in done:
            _, index = self.running.pop(f.key)
            if f.key in self.cancelled or f.cancelled():
                out.append((f, RunSummary(index, 0, 0, "cancelled", 0, None, "", 0, "", 0.0, "", abandoned=True)))
            elif f.status == "error":
                out.append((f, f.exception()))
            else:
                out.append((f, f.result()))
        return out

    def _on(self, worker: str, fn: Any, *args: Any) -> Any:
        """fn(*args) on one worker; a failure is one line."""
        try:
            return self.client.run(fn, *args, workers=[worker])[worker]
        except Exception as e:  # noqa: BLE001 (whatever the worker or the network says)
            raise DetError(f"Dask worker {worker}: {fn.__name__}: {e}") from None

    def fetch(self, run: RunSummary, dest: Path) -> bool:
        data, converted = self._on(run.host, _read, run.path, self.runs)
        fd = os.open(dest, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return converted

    def discard(self, run: RunSummary) -> None:
        if Path(run.path).name == LAST_PASS:
            return
        paths = self.doomed.setdefault(run.host, [])
        paths.append(run.path)
        if len(paths) >= 64:  # one round trip for many (the rest go with the scratch directory)
            self._on(run.host, _remove, paths[:], self.runs)
            paths.clear()

    def cancel(self) -> None:
        waiting = [f for f, _ in self.running.values() if not f.done()]
        self.cancelled.update(f.key for f in waiting)
        if waiting:
            self.client.cancel(waiting)

    def close(self) -> None:
        try:
            self.cancel()
            self.client.run(_remove_scratch, self.hunt_id, self.runs)
        finally:
            self.client.close()
