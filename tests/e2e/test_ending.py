"""How a run ended, named by every tool (det.ending): which thread died of
which signal or assertion, at which source line and function, with its
last event, and a deadlock only when there is one; and `detrec dump`, the
event list with names, sites and results said by value (det.results)."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from conftest import DETREC, ROOT, detrec, program


def marked_line(name: str, mark: str) -> int:
    """The line of tests/programs/NAME.c marked with the comment /* MARK */."""
    lines = (ROOT / "tests" / "programs" / f"{name}.c").read_text().splitlines()
    found = [i + 1 for i, line in enumerate(lines) if f"/* {mark} */" in line]
    assert len(found) == 1, f"{name}.c has no single /* {mark} */ line"
    return found[0]


def line_of(name: str, text: str, after: int = 0) -> int:
    """The first line of tests/programs/NAME.c after line `after` that holds text."""
    lines = (ROOT / "tests" / "programs" / f"{name}.c").read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if i + 1 > after and text in line)


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    trace = tmp_path_factory.mktemp("crash") / "crash.db"
    r = detrec("-o", trace, program("lock_fault"))
    assert r.returncode == 139, r.stderr.decode()
    return trace, r.stderr.decode()


@pytest.fixture(scope="module")
def asserted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    trace = tmp_path_factory.mktemp("assert") / "assert.db"
    r = detrec("-o", trace, program("assert_thread"))
    assert r.returncode == 134, r.stderr.decode()
    return trace, r.stderr.decode()


def crash_words() -> str:
    crash = marked_line("lock_fault", "CRASH")
    return rf"T1 died of SIGSEGV \(address 0x[0-9a-f]+\) in pthread_mutex_lock called at lock_fault\.c:{crash} " \
           r"\(consumer\)"


def test_crash_inside_a_pthread_call_is_named(crashed: tuple[Path, str]) -> None:
    """A fault inside pthread_mutex_lock (its mutex behind a cleared
    pointer): the thread, the signal, the call and the program's line."""
    trace, summary = crashed
    assert re.search(crash_words(), summary), summary
    unlock = line_of("lock_fault", "pthread_mutex_unlock(&gate)", line_of("lock_fault", "consumer(void"))
    last = rf"T1's last event: #2 mutex_unlock mutex \d+ \(gate\) at lock_fault\.c:{unlock} \(consumer\)"
    assert re.search(last, summary), summary
    info = detrec("info", trace).stdout.decode()
    assert re.search(r"^ended:      " + crash_words(), info, re.M), info
    assert re.search(last, info), info
    assert "deadlock" not in info and "all threads blocked" not in info, info
    end = json.loads(detrec("info", "--json", trace).stdout)["ending"]
    assert end["kind"] == "crash" and end["thread"] == 1, end


def test_assertion_in_a_thread_is_named_not_a_deadlock(asserted: tuple[Path, str]) -> None:
    """An assertion failing in T1 while T0 waits to join it: the assertion,
    its line and function, in T1; T0's wait is no deadlock."""
    trace, summary = asserted
    line = marked_line("assert_thread", "ASSERT")
    said = f"T1 failed an assertion: `balance >= 0 && \"overdrawn\"' at assert_thread.c:{line} (withdraw), SIGABRT"
    assert said in summary, summary
    info = detrec("info", trace).stdout.decode()
    assert f"ended:      {said}" in info, info
    assert re.search(r"T1's last event: #2 mutex_unlock mutex \d+ \(lock\) at assert_thread\.c:\d+ \(withdraw\)",
                     info), info
    assert "deadlock" not in info and "all threads blocked" not in info and "wait-for" not in info, info


def dump(*args: str | Path) -> subprocess.CompletedProcess:
    return detrec("dump", *args)


def test_dump_lists_events_with_names_sites_and_values(crashed: tuple[Path, str], tmp_path: Path) -> None:
    trace, _ = crashed
    r = dump(trace)
    assert r.returncode == 0, r.stderr.decode()
    lines = r.stdout.decode().splitlines()
    events = json.loads(detrec("info", "--json", trace).stdout)["events"]
    assert len(lines) == events, lines
    first_lock = line_of("lock_fault", "pthread_mutex_lock(&gate)", line_of("lock_fault", "int main"))
    assert re.match(rf"0 +T0 +#0 +mutex_lock +mutex \d+ \(gate\) +lock_fault\.c:{first_lock} \(main\)$",
                    lines[0]), lines[0]
    t1 = dump(trace, "--thread", "T1").stdout.decode().splitlines()
    assert t1 and all(re.match(r"\d+ +T1 ", x) for x in t1), t1
    assert t1 == [x for x in lines if re.match(r"\d+ +T1 ", x)]
    unlocks = dump(trace, "--kind", "mutex_unlock", "--from", "1", "--to", "4").stdout.decode().splitlines()
    assert unlocks == [x for x in lines[1:5] if " mutex_unlock " in x] and unlocks, unlocks
    rows = [json.loads(x) for x in dump(trace, "--json").stdout.decode().splitlines()]
    assert [r["seq"] for r in rows] == list(range(events))
    assert rows[0]["object"].endswith("(gate)") and rows[0]["site"] == f"lock_fault.c:{first_lock}"
    assert rows[0]["function"] == "main"

    # values, not error names: a descriptor, CPUs, a count (det.results)
    values = tmp_path / "values.db"
    r = detrec("-q", "-o", values, program("values"))
    assert r.returncode == 0, r.stderr.decode()
    cpus, fd, n = re.fullmatch(rb"cpus (\d+) fd (\d+) read (\d+) dfl 1\n", r.stdout).groups()  # (det's
    # entry for the signals that end a program is not the program's to see: their action is the default)
    text = dump(values).stdout.decode()
    for said in (f"sysconf={cpus.decode()}", f"fd_open={fd.decode()}", f"read={n.decode()}"):
        assert f" {said} " in text, text
    assert not re.search(r"=E[A-Z]+", text), text


@pytest.mark.parametrize("args, said", [
    (["--thread", "T9"], "the trace has no thread T9"),
    (["--thread", "x"], "--thread x: not a thread"),
    (["--kind", "nope"], "--kind nope: no such event kind"),
    (["--from", "4", "--to", "2"], "--to 2 is before --from 4"),
    (["--from", "-1"], "--from -1: events are numbered from 0"),
])
def test_dump_bad_arguments_say_one_line(crashed: tuple[Path, str], args: list[str], said: str) -> None:
    trace, _ = crashed
    r = dump(trace, *args)
    err = r.stderr.decode()
    assert r.returncode == 2 and r.stdout == b"", err
    assert err.count("\n") == 1 and err.startswith("detrec dump: ") and said in err, err


def test_dump_of_a_missing_trace_says_one_line(tmp_path: Path) -> None:
    r = dump(tmp_path / "none.db")
    err = r.stderr.decode()
    assert r.returncode != 0 and err.count("\n") == 1 and err.startswith("detrec dump: "), err


def test_dump_streams(tmp_path: Path) -> None:
    """The first line comes long before the last (a cursor, not a list)."""
    trace = tmp_path / "big.db"
    r = detrec("-q", "-o", trace, program("values"), "100000")
    assert r.returncode == 0, r.stderr.decode()
    t0 = time.monotonic()
    p = subprocess.Popen([str(DETREC), "dump", str(trace)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None
    first = p.stdout.readline()
    t_first = time.monotonic() - t0
    rest = p.stdout.read().count(b"\n")
    p.wait()
    t_all = time.monotonic() - t0
    assert first.startswith(b"0 ") and rest >= 200000, (first, rest)
    assert t_first < t_all / 3, f"first line after {t_first:.2f} s, all {rest + 1} after {t_all:.2f} s"


@pytest.mark.parametrize("mode, said", [
    ("segv", r"T1 died of SIGSEGV \(address 0x10\) at crash\.c:{line} \(victim\)"),
    ("abort", r"T1 died of SIGABRT in abort\(\) called at crash\.c:{line} \(victim\)"),
    ("fpe", r"T1 died of SIGFPE at crash\.c:{line} \(victim\)"),
])
def test_fault_and_abort_in_the_programs_code(mode: str, said: str, tmp_path: Path) -> None:
    """A fault in the program's own code is named at its line; abort() at
    the line that called it (the frames between are libc's)."""
    trace = tmp_path / "crash.db"
    r = detrec("-o", trace, program("crash"), mode)
    assert r.returncode >= 128, r.stderr.decode()
    line = line_of("crash", f'"{mode}"', line_of("crash", "victim(void")) + 1
    assert re.search(said.format(line=line), r.stderr.decode()), r.stderr.decode()
    assert re.search(r"T1's last event: #\d+ mutex_unlock mutex \d+ \(m\) at crash\.c:\d+ \(victim\)",
                     r.stderr.decode()), r.stderr.decode()


def test_until_fail_names_the_kept_failure(tmp_path: Path) -> None:
    """A hunt judges its runs without their traces; its summary still says
    which thread failed where, from the kept trace."""
    r = detrec("--until-fail", "3", "-o", tmp_path / "t.db", program("assert_thread"))
    assert r.returncode == 134, r.stderr.decode()
    line = marked_line("assert_thread", "ASSERT")
    assert f"T1 failed an assertion: `balance >= 0 && \"overdrawn\"' at assert_thread.c:{line} (withdraw)" \
        in r.stderr.decode(), r.stderr.decode()
