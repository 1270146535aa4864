"""What detrec remembers between runs to start faster (issue 25, start-up):
file hashes and the empty trace, in the user's cache. A remembered value
must never stand for a file or schema that changed, and a damaged cache
is made again, never used."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "store"))
from det import trace, trust  # noqa: E402


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(trust, "_HASHED", None)
    monkeypatch.setattr(trace, "_EMPTY", None)
    return tmp_path / "cache" / "det"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_file_just_changed_is_hashed_every_time(cache: Path, tmp_path: Path) -> None:
    f = tmp_path / "prog"
    f.write_bytes(b"A" * 4096)
    assert trust.sha256_recorded(str(f)) == sha(f)
    with open(f, "r+b") as fh:  # same size, same inode, perhaps the same timestamps
        fh.write(b"B" * 4096)
    assert trust.sha256_recorded(str(f)) == sha(f)
    assert str(f) not in ((cache / "file-hashes").read_text() if (cache / "file-hashes").exists() else "")


def test_a_settled_file_is_remembered_until_it_changes(cache: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trust, "SETTLED_NS", 0)
    f = tmp_path / "prog"
    f.write_bytes(b"A" * 4096)
    assert trust.sha256_recorded(str(f)) == sha(f)
    assert f"{sha(f)} " in (cache / "file-hashes").read_text()
    time.sleep(0.05)  # (a timestamp tick later)
    with open(f, "r+b") as fh:
        fh.write(b"B" * 4096)
    monkeypatch.setattr(trust, "_HASHED", None)  # as a new detrec: from the cache file
    assert trust.sha256_recorded(str(f)) == sha(f)


def test_the_hash_cache_serves_another_process_and_ignores_garbage(cache: Path) -> None:
    exe = os.path.realpath(sys.executable)
    cache.mkdir(parents=True)
    (cache / "file-hashes").write_text("garbage\n" + "0" * 64 + " x y z 1 2 " + exe + "\n")
    code = ("import sys; sys.path.insert(0, sys.argv[2]); from det import trust; "
            "print(trust.sha256_recorded(sys.argv[1]))")
    for _ in range(2):  # the first remembers it, the second reads it
        out = subprocess.run([sys.executable, "-c", code, exe, str(ROOT / "store")], capture_output=True, text=True,
                             check=True, env=dict(os.environ)).stdout.strip()
        assert out == sha(Path(exe))
    assert f"{sha(Path(exe))} " in (cache / "file-hashes").read_text()


def test_the_hash_cache_is_read_as_its_lines_say(cache: Path) -> None:
    """Looked up per key in the file's text (not parsed whole: start-up): the
    last line of a key counts, a path that only ends like the one asked for,
    a damaged line and a cut last line are read as a line-by-line parse reads them."""
    a, b, c, d = ("a" * 64, "b" * 64, "c" * 64, "d" * 64)
    cache.mkdir(parents=True)
    (cache / "file-hashes").write_text(
        f"{a} 1 2 3 4 5 /p q\n"          # the key, then again below: the later line counts
        f"{c} 1 2 3 4 5 /x/p q\n"        # another path ending the same way
        f"{b} 1 2 3 4 5 /p q\n"
        f"{b[:60]} 1 2 3 4 5 /r\n"       # a damaged digest: not an answer
        f"{c} 6 2 3 4 5 /s\n"
        f"{d} 1 2 3 4 5 /s")              # cut before its newline: still read
    hashes = trust._load_hashes()
    assert hashes.get(("/p q", 1, 2, 3, 4, 5)) == b
    assert hashes.get(("/x/p q", 1, 2, 3, 4, 5)) == c
    assert hashes.get(("p q", 1, 2, 3, 4, 5)) is None
    assert hashes.get(("/r", 1, 2, 3, 4, 5)) is None
    assert hashes.get(("/s", 1, 2, 3, 4, 5)) == d and hashes.get(("/s", 6, 2, 3, 4, 5)) == c
    assert hashes.get(("/p q", 1, 2, 3, 4, 6)) is None


def test_the_empty_trace_is_remembered_and_a_damaged_copy_made_again(cache: Path) -> None:
    made = trace._make_empty_trace()
    assert trace._empty_trace() == made
    copies = list(cache.glob("empty-trace-*.db"))
    assert len(copies) == 1
    data = bytearray(copies[0].read_bytes())
    data[200] ^= 0xFF
    copies[0].write_bytes(bytes(data))
    trace._EMPTY = None
    assert trace._empty_trace() == made
    assert copies[0].read_bytes()[:-32] == made
