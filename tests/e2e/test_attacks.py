"""Nothing beside a trace changes it, and nobody else's trace acts as yours:
planted SQLite journals, foreign and group-writable traces, packing and
copying another user's trace, two writers of one name, and readers of a
recording still being made (issue 20's audit, as its attacker did it).

Rules: the victim is root (CI runs as root), the attacker uid 65534
(nobody); every attack is checked to leave the victim's trace byte for
byte as it was, and to be refused in one line."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import BIN, DETREC, ROOT, detrec, detreplay, killed_recording, program, query, reseal, run

NOBODY = 65534
ID = "/usr/bin/id"


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.fail("these attacks make files owned by another user: they need root (CI runs as root)",
                    pytrace=False)


def hot_journal(source: bytes) -> bytes:
    """A SQLite rollback journal that a connection would find hot and roll
    back, turning the database beside it into `source`'s pages (the format:
    sqlite.org/fileformat.html, "The Rollback Journal")."""
    page = int.from_bytes(source[16:18], "big")
    page = 65536 if page == 1 else page
    pages = len(source) // page
    sector, nonce = 512, 0x5EED1234
    out = [struct.pack(">QIIIII", 0xD9D505F920A163D7, pages, nonce, pages, sector, page).ljust(sector, b"\0")]
    for i in range(pages):
        data = source[i * page:(i + 1) * page]
        check = (nonce + sum(data[page - 200::-200])) & 0xFFFFFFFF
        out.append(struct.pack(">I", i + 1) + data + struct.pack(">I", check))
    return b"".join(out)


def one_line_refusal(r: subprocess.CompletedProcess, tool: str, *words: str) -> str:
    err = r.stderr.decode()
    assert r.returncode == 2, f"{tool}: exit {r.returncode}\n{err}"
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.startswith(f"{tool}:")]
    assert len(lines) == 1, err
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def attacker_trace(tmp_path: Path) -> Path:
    """The attacker's own trace, of a program that says whom it runs as."""
    att = tmp_path / "attacker.db"
    r = detrec("-q", "-o", att, ID, "-u")
    assert r.returncode == 0, r.stderr.decode()
    return att


@pytest.mark.parametrize("where", ["sticky", "attacker_dir"])
def test_planted_journal_is_refused_and_never_rolled_back(where: str, tmp_path: Path) -> None:
    """Root records into /tmp-like sticky directory, or into a directory the
    attacker owns; the attacker writes a hot journal beside root's trace made
    from their own trace. Every reader refuses it in one line and nothing
    rolls the journal into the trace (on det before this, detreplay ran the
    attacker's program as root and said the outcome matched)."""
    need_root()
    att = attacker_trace(tmp_path)
    d = tmp_path / where
    d.mkdir()
    if where == "sticky":
        os.chmod(d, 0o1777)
    else:
        os.chown(d, NOBODY, NOBODY)
    victim = d / "v.db"
    r = detrec("-q", "-o", victim, program("hello"), "x")
    assert r.returncode == 7, r.stderr.decode()
    before = victim.read_bytes()
    journal = Path(str(victim) + "-journal")
    journal.write_bytes(hot_journal(att.read_bytes()))
    os.chown(journal, NOBODY, NOBODY)
    for tool, cmd in (("detreplay", [BIN / "detreplay", victim]), ("detrec info", [DETREC, "info", victim]),
                      ("detdiff", [BIN / "detdiff", victim, victim]),
                      ("detrec pack", [DETREC, "pack", victim]),
                      ("detrec scrub", [DETREC, "scrub", victim, "-o", tmp_path / "copy.db"])):
        r = run(cmd)
        assert b"\n0\n" not in b"\n" + r.stdout, f"{tool} ran the attacker's program"
        one_line_refusal(r, tool, "v.db-journal", "belongs to nobody")
        assert victim.read_bytes() == before, f"{tool} changed the trace"
    # A reader that opened the trace anyway never rolls the journal back (the
    # check above is a courtesy; the immutable open is what makes it safe).
    code = ("import sys; from det.tracefile import read_only; "
            "print(read_only(sys.argv[1]).execute(\"SELECT value FROM meta WHERE key = 'binary'\").fetchone()[0])")
    r = run([BIN / "python", "-c", code, victim])
    assert r.returncode == 0 and r.stdout.decode().strip() == str(program("hello")), r.stderr.decode()
    assert victim.read_bytes() == before and journal.exists()
    # Planted links and the owner's own cut-short change are refused too.
    journal.unlink()
    os.symlink("/etc/passwd", journal)
    one_line_refusal(detrec("info", victim), "detrec info", "not a file")
    journal.unlink()
    journal.write_bytes(hot_journal(att.read_bytes()))
    one_line_refusal(detrec("info", victim), "detrec info", "cut short")
    assert victim.read_bytes() == before
    journal.unlink()
    assert detrec("info", victim).returncode == 0


def test_traces_others_can_change_are_not_run(tmp_path: Path) -> None:
    """A trace its group or everyone may write, or one in a directory
    another user owns, is refused like another user's trace."""
    need_root()
    trace = tmp_path / "t.db"
    assert detrec("-q", "-o", trace, program("hello"), "x").returncode == 7
    for mode, who in ((0o666, "anyone"), (0o620, "its group")):
        os.chmod(trace, mode)
        line = one_line_refusal(detreplay(trace), "detreplay", f"can be changed by {who}", "--trust")
        assert str(program("hello")) in line
    r = detreplay("--trust", trace)
    assert r.returncode == 7 and b"outcome matches" in r.stderr, r.stderr.decode()
    os.chmod(trace, 0o600)
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, NOBODY, NOBODY)
    moved = theirs / "t.db"
    os.rename(trace, moved)
    one_line_refusal(detreplay(moved), "detreplay", "which belongs to nobody", "put another file in its place")
    assert detrec("info", moved).returncode == 0  # reading runs nothing: no trust needed
    docs = (ROOT / "README.md").read_text()
    assert "### Trust" in docs and "not a signature" in docs


def test_pack_never_reads_for_another_user_what_they_cannot(tmp_path: Path) -> None:
    """A user lists a root-only file in their own trace's files table and
    reseals it; root's `detrec pack` refuses their trace, and with --trust
    packs only what that user could read (the audit read the secret out of
    the packed blob)."""
    need_root()
    vault = tmp_path / "vault"
    vault.mkdir(mode=0o700)
    secret = vault / "secret.txt"
    secret.write_bytes(b"root-only-4b1d9e\n")
    os.chmod(secret, 0o600)
    pub = Path(tempfile.mkdtemp(prefix="det-attack-"))  # where the user can reach their program and trace
    try:
        os.chmod(pub, 0o755)
        hello = pub / "hello"
        shutil.copy(program("hello"), hello)
        trace = pub / "users.db"
        assert detrec("-q", "-o", trace, hello, "x").returncode == 7
        st = secret.stat()
        db = sqlite3.connect(trace)
        with db:
            db.execute("INSERT INTO files(path, how, size, mtime_ns, cut) VALUES (?, 'opened', ?, ?, 0)",
                       (str(secret), st.st_size, st.st_mtime_ns))
        db.close()
        reseal(trace)
        os.chown(trace, NOBODY, NOBODY)
        before = trace.read_bytes()
        one_line_refusal(detrec("pack", trace), "detrec pack", "belongs to nobody", "--trust")
        assert trace.read_bytes() == before
        r = detrec("pack", "--trust", trace)
        assert r.returncode == 0, r.stderr.decode()
        assert f"not packed: {secret}: the trace's owner (nobody) could not read it".encode() in r.stderr, r.stderr
        assert b"root-only-4b1d9e" not in trace.read_bytes()
        st = trace.stat()
        assert (st.st_uid, st.st_mode & 0o777) == (NOBODY, 0o600)
        packed = {p for (p,) in query(trace, "SELECT path FROM packed WHERE type = 'file'")}
        assert str(hello) in packed and str(secret) not in packed, packed
        # The packed trace still replays (trusted).
        r = detreplay("--trust", trace)
        assert r.returncode == 7 and b"outcome matches" in r.stderr, r.stderr.decode()
    finally:
        shutil.rmtree(pub)


def test_scrub_and_salvage_do_not_launder_another_users_trace(tmp_path: Path) -> None:
    """A copy or a salvaged trace would be root's and replay as root: another
    user's trace or capture log is refused unless trusted."""
    need_root()
    trace = tmp_path / "t.db"
    assert detrec("-q", "-o", trace, program("hello"), "x").returncode == 7
    os.chown(trace, NOBODY, NOBODY)
    one_line_refusal(detrec("scrub", trace, "-o", tmp_path / "c.db"), "detrec scrub", "belongs to nobody")
    assert not (tmp_path / "c.db").exists()
    r = detrec("scrub", "--trust", trace, "-o", tmp_path / "c.db")
    assert r.returncode == 0, r.stderr.decode()
    log = killed_recording(tmp_path)
    os.chown(log, NOBODY, NOBODY)
    for tool, cmd in (("detrec salvage", [DETREC, "salvage", log]), ("detrec info", [DETREC, "info", log]),
                      ("detreplay", [BIN / "detreplay", log])):
        one_line_refusal(run(cmd), tool, "belongs to nobody")
        assert log.exists()
    r = detrec("salvage", "--trust", log)
    assert r.returncode == 0 and b"salvaged" in r.stderr, r.stderr.decode()


def test_newer_format_is_named_as_such(tmp_path: Path) -> None:
    trace = tmp_path / "t.db"
    assert detrec("-q", "-o", trace, program("hello"), "x").returncode == 7
    db = sqlite3.connect(trace)
    with db:
        db.execute("UPDATE meta SET value = '7' WHERE key = 'format_version'")
    db.close()
    reseal(trace)
    one_line_refusal(detrec("info", trace), "detrec info", "version 7, made by a newer det")


# ---------------------------------------------------------------- one writer per trace


def start_recording(out: Path, *args: str) -> subprocess.Popen:
    p = subprocess.Popen([str(DETREC), "-o", str(out), *args, str(program("spinner"))],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline() == b"running\n"
    return p


def stop(p: subprocess.Popen) -> str:
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    return err.decode()


def test_a_second_writer_and_readers_of_a_live_recording(tmp_path: Path) -> None:
    """While detrec records to NAME: a second detrec -o NAME, detrec pack
    and salvage are refused, naming the recorder's pid; detreplay, detrec
    info and detdiff say the recording is live and never salvage its log;
    the recording then ends as if nobody had come."""
    out = tmp_path / "same.db"
    p = start_recording(out)
    try:
        time.sleep(0.3)
        who = f"pid {p.pid} (detrec)"
        log = tmp_path / "same.db.incomplete.log"
        r = detrec("-o", out, program("hello"), "x")
        one_line_refusal(r, "detrec", f"same.db is being written by {who}")
        assert b"hello from" not in r.stdout
        for tool, cmd in (("detreplay", [BIN / "detreplay", out]), ("detrec info", [DETREC, "info", out]),
                          ("detreplay", [BIN / "detreplay", log]),
                          ("detrec info", [DETREC, "info", Path(str(out) + ".incomplete")]),
                          ("detdiff", [BIN / "detdiff", out, out]),
                          ("detrec salvage", [DETREC, "salvage", log])):
            r = run(cmd)
            one_line_refusal(r, tool, f"same.db is being recorded by {who}")
            assert log.exists(), f"{tool} took the live log"
        assert p.poll() is None
    finally:
        err = stop(p)
    assert p.returncode == 130, err
    assert "Traceback" not in err and "trace saved to" in err, err
    r = detrec("info", out)
    assert r.returncode == 0 and b"interrupted" in r.stdout, r.stderr.decode()
    left = sorted(f.name for f in tmp_path.iterdir())
    assert left == [".det-objects", "same.db"], left


def test_writers_started_together_never_lose_a_trace(tmp_path: Path) -> None:
    """Two detrec -o NAME started at once, at several offsets: exactly one
    records (the other is refused in one line, or waits its turn and
    records after), and the trace at NAME is a whole one, never a mix."""
    out = tmp_path / "same.db"
    for offset in (0.0, 0.01, 0.05, 0.2):
        cmd = [str(DETREC), "-o", str(out), str(program("hello")), "x"]
        a = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(offset)
        b = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        results = [(q.wait(timeout=120), q.stderr.read().decode()) for q in (a, b)]
        for rc, err in results:
            assert "Traceback" not in err, err
            assert rc == 7 or (rc == 2 and "is being written by pid" in err), (rc, err)
        assert any(rc == 7 for rc, _ in results)
        r = detreplay(out)
        assert r.returncode == 7 and b"outcome matches" in r.stderr, r.stderr.decode()
        assert sorted(f.name for f in tmp_path.iterdir()) == [".det-objects", "same.db"]


def test_until_fail_holds_both_names(tmp_path: Path) -> None:
    """--until-fail writes NAME and NAME-pass: a plain recording to either
    while it runs is refused."""
    out = tmp_path / "hunt.db"
    p = subprocess.Popen([str(DETREC), "--until-fail", "100000", "-o", str(out), shutil.which("true")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "hunt.db.lock").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        for name in ("hunt.db", "hunt-pass.db"):
            r = detrec("-o", tmp_path / name, program("hello"), "x")
            one_line_refusal(r, "detrec", f"{name} is being written by pid {p.pid} (detrec)")
    finally:
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=120)


def test_killed_writer_leaves_nothing_that_blocks_the_next(tmp_path: Path) -> None:
    """A detrec killed with SIGKILL leaves its capture log (to salvage) and
    an unlocked NAME.lock: the next writer takes the name at once."""
    out = tmp_path / "k.db"
    p = start_recording(out)
    time.sleep(0.3)
    p.kill()
    p.wait()
    time.sleep(0.5)  # the watchdog's clean-up
    assert (tmp_path / "k.db.incomplete.log").exists()
    assert not [f for f in tmp_path.iterdir() if f.name.endswith(".det")], list(tmp_path.iterdir())
    r = detrec("-q", "-o", out, program("hello"), "x")
    assert r.returncode == 7, r.stderr.decode()
    assert sorted(f.name for f in tmp_path.iterdir()) == [".det-objects", "k.db"]


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
