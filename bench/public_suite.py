"""A public suite of small buggy pthread programs for bench/hunt.py, built
from source at bench time and never committed.

Where it comes from: the only package registries this machine reaches are
PyPI, npm, crates, the Go proxy, Maven and Debian. None carries a suite of
buggy pthread programs made for concurrency testing (SCTBench, SV-COMP's
pthread tasks and the like are published as source repositories only).
Debian's valgrind source package carries helgrind's and drd's test
programs: small pthread programs, most of them data races that change no
output, a few with a bug a run can show. Those few are this suite:

  hg02_deadlock        two threads take two locks in opposite orders: a deadlock
  tc14_laog_dinphils   five philosophers take their chopsticks left then right: a deadlock
  rwlock_race          two readers increment a counter under a read lock: a lost update
                       ("Result: 1" where "Result: 2" is due)

Rules: the source package is fetched with `apt-get source` through a
private apt state (a deb-src line for this machine's own Debian mirror and
suite, read from its apt sources), so nothing of the system changes and
apt checks the files against the signed index; files go to a cache
directory outside the repository ($XDG_CACHE_HOME/det-bench, or
~/.cache/det-bench). A program whose bug shows only in its output gets an
exit status for it by a one-line patch applied at build time (listed
below), so that every hunt can tell failure by exit status.
"""

from __future__ import annotations

import os
import re
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "valgrind"


@dataclass
class Program:
    name: str
    member: str                      # path inside the source tree
    hang: bool                       # the bug is a deadlock (a run times out)
    patch: tuple[str, str] | None = None  # (line, line + an exit status for the bug)
    argv: tuple[str, ...] = ()


PROGRAMS = [
    Program("hg02_deadlock", "helgrind/tests/hg02_deadlock.c", hang=True),
    Program("tc14_laog_dinphils", "helgrind/tests/tc14_laog_dinphils.c", hang=True),
    Program("rwlock_race", "drd/tests/rwlock_race.c", hang=False,
            patch=('  fprintf(stderr, "Result: %d\\n", s_racy);\n',
                   '  fprintf(stderr, "Result: %d\\n", s_racy);\n  if (s_racy != 2) return 1; /* det bench */\n')),
]


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "det-bench"


def _mirror() -> tuple[str, str]:
    """This machine's Debian mirror and release, from its apt sources."""
    texts = []
    for p in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        if p.is_file() and p.suffix in ("", ".list", ".sources"):
            texts.append(p.read_text(errors="replace"))
    for text in texts:
        for block in text.split("\n\n"):  # deb822 stanzas
            uri = re.search(r"^URIs:\s*(\S+)", block, re.M)
            suites = re.search(r"^Suites:\s*(.+)$", block, re.M)
            if uri and suites and re.search(r"^Types:.*\bdeb\b", block, re.M) and "security" not in uri.group(1):
                return uri.group(1), suites.group(1).split()[0]
        for m in re.finditer(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)\s+main", text, re.M):
            if "security" not in m.group(1):
                return m.group(1), m.group(2)
    raise RuntimeError("no Debian mirror in this machine's apt sources (needed for the public suite)")


def _apt(state: Path, *args: str) -> None:
    opts = ["-o", f"Dir::Etc::SourceList={state / 'sources.list'}", "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", f"Dir::State::Lists={state / 'lists'}", "-o", f"Dir::Cache={state / 'cache'}", "-q"]
    r = subprocess.run(["apt-get", *opts, *args], capture_output=True, text=True, cwd=state / "src")
    if r.returncode != 0:
        raise RuntimeError(f"apt-get {' '.join(args)} failed: {r.stderr.strip().splitlines()[-1:]}")


def fetch_source(cache: Path) -> Path:
    """The valgrind source package's upstream tarball (downloaded once)."""
    state = cache / "apt"
    for d in (state / "lists" / "partial", state / "cache" / "archives" / "partial", state / "src"):
        d.mkdir(parents=True, exist_ok=True)
    found = sorted((state / "src").glob(f"{PACKAGE}_*.orig.tar.*"))
    if found:
        return found[-1]
    uri, suite = _mirror()
    (state / "sources.list").write_text(f"deb-src {uri} {suite} main\n")
    _apt(state, "update")
    _apt(state, "source", "--download-only", PACKAGE)
    found = sorted((state / "src").glob(f"{PACKAGE}_*.orig.tar.*"))
    if not found:
        raise RuntimeError(f"apt-get source {PACKAGE} left no upstream tarball")
    return found[-1]


def build(cc: str = "gcc") -> tuple[str, list[tuple[Program, Path]]]:
    """Fetch and build the suite; returns (source version, [(program, binary)])."""
    cache = cache_dir()
    tarball = fetch_source(cache)
    version = tarball.name.split("_")[1].rsplit(".orig", 1)[0]
    out = cache / f"{PACKAGE}-{version}"
    built = []
    with tarfile.open(tarball) as tar:
        prefix = tar.next().name.split("/")[0]
        for prog in PROGRAMS:
            binary = out / "bin" / prog.name
            if not binary.exists():
                src = tar.extractfile(f"{prefix}/{prog.member}")
                if src is None:
                    raise RuntimeError(f"{prog.member} is not in {tarball.name}")
                text = src.read().decode()
                if prog.patch:
                    if prog.patch[0] not in text:
                        raise RuntimeError(f"{prog.member}: the line to patch is not there")
                    text = text.replace(prog.patch[0], prog.patch[1])
                c = out / "src" / Path(prog.member).name
                c.parent.mkdir(parents=True, exist_ok=True)
                binary.parent.mkdir(parents=True, exist_ok=True)
                c.write_text(text)
                subprocess.run([cc, "-O1", "-g", "-D_GNU_SOURCE", "-pthread", "-w", "-o", str(binary), str(c)],
                               check=True)
            built.append((prog, binary))
    return f"{PACKAGE} {version} (Debian source package)", built
