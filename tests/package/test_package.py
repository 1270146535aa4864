"""The Debian package (`make package-check`, not `make test`: it builds the
package and a fresh Debian with debootstrap, a few minutes).

- tools/package.sh builds it with dpkg-buildpackage and lintian finds
  nothing (no error, no warning);
- unpacked anywhere (`dpkg -x`), its commands run from there;
- in a fresh Debian 12 (debootstrap minbase) it installs with apt, records
  and replays, replays a packed pigz trace made on this machine although
  pigz is not installed there, and purges leaving none of its files.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT, program, query, run, sample_bin

pytestmark = pytest.mark.package


@pytest.fixture(scope="module")
def deb() -> Path:
    r = run([ROOT / "tools" / "package.sh"], timeout=1200)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    return Path(r.stdout.decode().strip().splitlines()[-1])


def test_lintian_is_clean(deb: Path) -> None:
    assert deb.name.endswith("_amd64.deb")
    assert (ROOT / "build/deb/lintian.log").read_text() == ""


def test_unpacked_anywhere_it_runs(deb: Path, tmp_path: Path) -> None:
    root = tmp_path / "x"
    assert run(["dpkg", "-x", deb, root]).returncode == 0
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    trace = tmp_path / "t.db"
    r = run([root / "usr/bin/detrec", "-o", trace, "--", sample_bin("pingpong_ok")], env=env, cwd="/")
    assert r.returncode == 0, r.stderr.decode()
    libs = [p for (p,) in query(trace, "SELECT path FROM modules") if p.endswith("/libdet.so")]
    assert libs == [str(root / "usr/lib/det/libdet.so")]
    r = run([root / "usr/bin/detreplay", trace], env=env, cwd="/")
    assert r.returncode == 0 and "outcome matches" in r.stderr.decode(), r.stderr.decode()


def mirror() -> str:
    """This machine's Debian mirror (apt's configuration), else deb.debian.org."""
    for f in [Path("/etc/apt/sources.list"), *Path("/etc/apt/sources.list.d").glob("*.sources")]:
        if f.exists():
            m = re.search(r"^(?:URIs:\s*|deb\s+)(https?://\S+/debian)/?\s", f.read_text(), re.M)
            if m:
                return m.group(1)
    return "http://deb.debian.org/debian"


@pytest.fixture(scope="module")
def chroot(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("debian12")
    t0 = time.monotonic()
    r = run(["debootstrap", "--variant=minbase", "bookworm", root, mirror()], timeout=1800)
    assert r.returncode == 0, (r.stdout + r.stderr).decode()[-3000:]
    print(f"debootstrap minbase bookworm: {time.monotonic() - t0:.0f} s")
    yield root
    shutil.rmtree(root, ignore_errors=True)


def in_chroot(root: Path, script: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run a shell script in the chroot, with /proc and /dev, in a mount namespace of its own;
    its root is a mount point, as in a container (a packed replay needs that, as root)."""
    setup = f"mount --bind {root} {root} && mount -t proc proc {root}/proc && mount --rbind /dev {root}/dev && "
    return run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                setup + f"exec chroot {root} /bin/sh -ec '{script}'"], timeout=timeout,
               env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive"})


def test_install_use_purge_in_a_fresh_debian(deb: Path, chroot: Path, tmp_path: Path) -> None:
    shutil.copy(deb, chroot / "tmp" / deb.name)
    t0 = time.monotonic()
    r = in_chroot(chroot, f"apt-get update -qq && apt-get install -y -qq --no-install-recommends /tmp/{deb.name}")
    assert r.returncode == 0, (r.stdout + r.stderr).decode()[-3000:]
    print(f"apt-get install det and its dependencies: {time.monotonic() - t0:.0f} s")
    files = in_chroot(chroot, "dpkg -L det").stdout.decode().split()
    assert "/usr/bin/detrec" in files and "/usr/lib/det/libdet.so" in files
    assert "/usr/share/man/man1/detrec.1.gz" in files
    assert "/usr/share/bash-completion/completions/detreplay" in files

    # record and replay there
    (chroot / "opt/p").mkdir(parents=True)
    shutil.copy(sample_bin("pingpong_ok"), chroot / "opt/p")
    r = in_chroot(chroot, "cd /tmp && detrec --version && detrec /opt/p/pingpong_ok && detrec ls && detreplay")
    out = (r.stdout + r.stderr).decode()
    assert r.returncode == 0, out
    assert "outcome matches the recording" in out and "pingpong_ok-1 *" in out

    # a packed pigz trace from this machine replays there, without pigz
    assert in_chroot(chroot, "command -v pigz").returncode != 0
    data = tmp_path / "input"
    data.write_bytes(b"".join(b"line %d of something to compress\n" % i for i in range(200000)))
    trace = chroot / "tmp/pigz.db"
    rec = run([ROOT / ".venv/bin/detrec", "--pack", "-o", trace, "--", "pigz", "-p", "2", "-c", data])
    assert rec.returncode == 0, rec.stderr.decode()
    r = in_chroot(chroot, "detreplay /tmp/pigz.db > /tmp/pigz.out")
    assert r.returncode == 0, r.stderr.decode()
    assert "outcome matches the recording" in r.stderr.decode()
    assert (chroot / "tmp/pigz.out").read_bytes() == rec.stdout

    # purge: nothing of the package is left
    r = in_chroot(chroot, "dpkg --purge det")
    assert r.returncode == 0, r.stderr.decode()
    left = [f for f in files if (chroot / f.lstrip("/")).exists() and not (chroot / f.lstrip("/")).is_dir()]
    assert left == []
    assert not (chroot / "usr/lib/det").exists() and not (chroot / "usr/share/det").exists()
    assert program("hello")  # (the host's tests/bin is untouched)
