"""The trace directory: recordings without -o, `detreplay` with no argument,
`detrec ls` and `detrec rm`, through the real commands."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import DETREC, detrec, detreplay, outcome, program, run, sample_bin


def env_for(d: Path) -> dict[str, str]:
    return {**os.environ, "DET_TRACE_DIR": str(d)}


def test_recordings_are_numbered_and_the_latest_replays(tmp_path: Path) -> None:
    d = tmp_path / "traces"
    env = env_for(d)
    hello = program("hello")
    for _ in range(2):
        r = detrec(hello, env=env, cwd=tmp_path)
        assert r.returncode == 0, r.stderr.decode()
    assert sorted(p.name for p in d.iterdir()) == [".det-objects", "hello-1.db", "hello-2.db", "latest-trace"]
    assert os.readlink(d / "latest-trace") == "hello-2.db"
    assert list(tmp_path.glob("*.db")) == []  # nothing in the working directory
    r = detreplay(env=env)
    assert r.returncode == 0, r.stderr.decode()
    assert f"replaying the latest trace, {d / 'hello-2.db'}" in r.stderr.decode()
    assert "outcome matches" in r.stderr.decode()
    # a name from the directory works wherever a trace is wanted
    assert detreplay("hello-1", env=env).returncode == 0
    assert run([DETREC.parent / "detdiff", "hello-1", "hello-2.db"], env=env).returncode in (0, 1)
    assert "hello-1.db" in detrec("info", "hello-1", env=env).stdout.decode()


def test_no_trace_yet_is_one_line(tmp_path: Path) -> None:
    r = detreplay(env=env_for(tmp_path / "none"))
    assert r.returncode == 2
    err = r.stderr.decode().strip().splitlines()
    assert len(err) == 1 and err[0].startswith("detreplay: no trace to replay in "), err


def test_ls_lists_program_outcome_mode_events_size_age(tmp_path: Path) -> None:
    d = tmp_path / "traces"
    env = env_for(d)
    assert detrec(program("hello"), env=env).returncode == 0
    crash = detrec("--strict", program("crash"), env=env)
    assert crash.returncode != 0
    (d / "notes.txt").write_text("not a trace")
    rows = json.loads(detrec("ls", "--json", env=env).stdout)
    assert [r["name"] for r in rows] == ["hello-1", "crash-1"]
    hello, crashed = rows
    assert hello["outcome"] == "exit 0" and hello["mode"] == "record" and hello["latest"] is False
    assert hello["events"] == outcome(d / "hello-1.db")["events"]
    assert hello["bytes"] == (d / "hello-1.db").stat().st_size
    assert crashed["outcome"].startswith("signal ") and crashed["mode"] == "strict" and crashed["latest"]
    assert hello["program"].endswith("tests/bin/hello")
    text = detrec("ls", env=env).stdout.decode().splitlines()
    assert text[0].split() == ["NAME", "PROGRAM", "OUTCOME", "MODE", "EVENTS", "SIZE", "AGE"]
    assert text[1].split()[0] == "hello-1" and text[2].split()[:2] == ["crash-1", "*"]
    assert "notes.txt" not in "\n".join(text)


def test_rm_removes_traces_only(tmp_path: Path) -> None:
    d = tmp_path / "traces"
    env = env_for(d)
    for _ in range(3):
        assert detrec(program("hello"), env=env).returncode == 0
    other = tmp_path / "keep.db"
    other.write_text("precious")
    r = detrec("rm", "hello-3", str(other), env=env)
    assert r.returncode == 1
    assert "not a det trace; left alone" in r.stderr.decode()
    assert other.read_text() == "precious"
    assert not (d / "hello-3.db").exists()
    assert os.readlink(d / "latest-trace") == "hello-2.db"  # the newest left
    assert detrec("rm", "nosuch", env=env).returncode == 1
    assert detrec("rm", "--all", "-q", env=env).returncode == 0
    assert sorted(p.name for p in d.iterdir()) == []


def test_until_fail_without_o_keeps_the_failure_as_latest(tmp_path: Path) -> None:
    d = tmp_path / "traces"
    env = env_for(d)
    r = detrec("--until-fail", "200", "-j", "2", sample_bin("random_bug"), env=env)
    assert r.returncode != 0, r.stderr.decode()
    assert os.readlink(d / "latest-trace") == "random_bug-1.db"
    assert outcome(d / "random_bug-1.db")["status"] != "exited" or outcome(d / "random_bug-1.db")["exit_code"]
