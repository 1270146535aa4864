#!/usr/bin/env python3
"""Boot Debian's kernel in qemu (TCG) with det's module and run the guest's
checks or benchmarks: `make check-kmod` and `make bench-kmod`.

    run.py check|bench [--timeout S] [--runs N]

Rules: the kernel is the one kmod/harness/kernel.sh unpacked into
build/kernel and the module was built against its headers (the Makefile
does both). Traces of samples are recorded on the host first; the guest
replays them and records its own (kmod/harness/guest.py). A run passes
only if qemu exits through isa-debug-exit with the pass value (3) AND the
serial log has the guest's "DET-KMOD: PASS" line; a timeout, a panic, a
poweroff without a verdict or a FAIL line fails, with the log's tail.
Standard library only.
"""

from __future__ import annotations

import argparse
import lzma
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
HARNESS = Path(__file__).resolve().parent
OUT = ROOT / "build" / "kmod-guest"
DETREC = ROOT / ".venv" / "bin" / "detrec"
SAMPLES = ROOT / "samples" / "bin"

# traces the host records for the guest to replay: (name, sample, args)
HOST_TRACES = [
    ("host-last_zero", "last_zero", []),
    ("host-indexer", "indexer", ["5"]),
    ("host-bounded_buffer", "bounded_buffer", ["5000"]),
    ("host-dining", "dining_philosophers", ["16", "10"]),
    ("host-fork_pool", "fork_pool", ["3", "2"]),
    ("host-cxx_job_queue", "cxx_job_queue", ["200"]),
]
GUEST_PROGRAMS = ["last_zero", "indexer", "bounded_buffer", "dining_philosophers", "fork_pool", "cxx_job_queue"]


def fail(msg: str) -> int:
    print(f"check-kmod: FAIL: {msg}", file=sys.stderr)
    return 1


def kernel() -> tuple[Path, str]:
    abi = (ROOT / "build" / "kernel" / ".ready").read_text().strip()
    return ROOT / "build" / "kernel" / "root" / "boot" / f"vmlinuz-{abi}-amd64", abi


def vmlinux(vmlinuz: Path) -> Path:
    """The ELF kernel inside the xz-compressed bzImage: qemu boots it
    through PVH in about half the time."""
    out = OUT / "vmlinux"
    if out.exists() and out.stat().st_mtime >= vmlinuz.stat().st_mtime:
        return out
    data = vmlinuz.read_bytes()
    at = data.find(b"\xfd7zXZ\x00")
    if at < 0:
        return vmlinuz
    try:
        elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ, memlimit=None).decompress(data[at:])
    except lzma.LZMAError:
        return vmlinuz
    if not elf.startswith(b"\x7fELF"):
        return vmlinuz
    out.write_bytes(elf)
    return out


def record_host_traces(traces: Path) -> None:
    shutil.rmtree(traces, ignore_errors=True)
    traces.mkdir(parents=True)
    for name, sample, args in HOST_TRACES:
        trace = traces / f"{name}.db"
        for _attempt in range(10):  # dining philosophers may deadlock: keep a run that ends
            trace.unlink(missing_ok=True)
            r = subprocess.run([str(DETREC), "-q", "--timeout", "20", "-o", str(trace), "--", str(SAMPLES / sample),
                                *args], capture_output=True, text=True, cwd=ROOT)
            if r.returncode != 124:
                break
        if not trace.exists():
            raise SystemExit(f"check-kmod: detrec {sample} left no trace: {r.stderr.strip()[-300:]}")
        print(f"check-kmod: recorded {sample} {' '.join(args)} on the host (exit {r.returncode})", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["check", "bench", "fuzz"], help="fuzz: only the kill test and the fuzzer")
    ap.add_argument("--timeout", type=float, help="seconds before the guest counts as hung (check 600, bench 1800)")
    ap.add_argument("--runs", type=int, default=5, help="bench: runs per figure")
    ns = ap.parse_args()
    qemu = shutil.which("qemu-system-x86_64")
    if not qemu:
        return fail("qemu-system-x86_64 is missing (tools/setup.sh installs qemu-system-x86 as root)")
    ko = ROOT / "build" / "kmod" / "detsched.ko"
    if not ko.exists():
        return fail(f"{ko} is missing: run `make kmod`")
    vmlinuz, abi = kernel()
    OUT.mkdir(parents=True, exist_ok=True)
    traces = OUT / "traces"
    if ns.mode == "check":
        record_host_traces(traces)
    else:
        shutil.rmtree(traces, ignore_errors=True)
        traces.mkdir(parents=True)
    programs = [str(SAMPLES / p) for p in GUEST_PROGRAMS] + [str(ROOT / "bench" / "bin" / "cond_pingpong")]
    initrd = OUT / "initramfs.cpio"
    if subprocess.run([sys.executable, str(HARNESS / "initramfs.py"), str(initrd), "--ko", str(ko), "--bin",
                       str(OUT / "bin"), "--traces", str(traces), "--programs", *programs]).returncode != 0:
        return fail("the initramfs could not be built")
    serial = OUT / f"serial-{ns.mode}.log"
    serial.unlink(missing_ok=True)
    append = f"console=ttyS0 panic=-1 quiet det.mode={ns.mode} DET_BENCH_RUNS={ns.runs}"
    for var in ("DET_BENCH_ONLY", "DET_FUZZ_SECONDS"):
        if os.environ.get(var):
            append += f" {var}={os.environ[var]}"
    cmd = [qemu, "-accel", "tcg", "-smp", "2", "-m", "1024", "-kernel", str(vmlinux(vmlinuz)), "-initrd", str(initrd),
           "-append", append, "-display", "none", "-monitor", "none", "-serial", f"file:{serial}", "-net", "none",
           "-no-reboot", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]
    timeout = ns.timeout or (600 if ns.mode == "check" else 1800)
    print(f"check-kmod: booting linux {abi} under qemu (TCG, 2 vCPUs); serial log {serial}", flush=True)
    start = time.monotonic()
    try:
        rc = subprocess.run(cmd, stdin=subprocess.DEVNULL, timeout=timeout).returncode
    except subprocess.TimeoutExpired:
        rc = None
    took = time.monotonic() - start
    log = serial.read_text(errors="replace").replace("\r", "") if serial.exists() else ""
    for line in log.splitlines():
        if line.startswith(("guest:", "killtest:", "fuzz:", "bench:", "DET-KMOD:")):
            print(line)
    passed = "DET-KMOD: PASS" in log.splitlines()
    if rc is None:
        return fail(f"the guest hung: no verdict within {timeout:.0f} s\n" + "\n".join(log.splitlines()[-30:]))
    if rc != 3 or not passed:
        return fail(f"qemu exited {rc} (3 is a pass), PASS line {'present' if passed else 'missing'}\n"
                    + "\n".join(log.splitlines()[-30:]))
    print(f"check-kmod: {ns.mode} passed in the guest ({took:.0f} s in qemu)")
    return 0


if __name__ == "__main__":
    os.umask(0o077)
    sys.exit(main())
