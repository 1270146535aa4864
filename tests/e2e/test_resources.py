"""Resources a program asks the kernel for, with det's own beside them
(issue 23.7): det's shared region is gigabytes of address space that a
program's mlockall must not fault in and pin."""

from __future__ import annotations

from pathlib import Path

from conftest import detrec, detreplay, program, query

LOCKED = b"locked: the program's memory, not det's"


def test_mlockall_locks_the_program_not_det(tmp_path: Path) -> None:
    """mlockall(MCL_CURRENT | MCL_FUTURE) locks the program's 64 MiB buffer
    and not det's rings (on main: 4.3 GB locked, 31 s, exit 1)."""
    trace = tmp_path / "mlock.det"
    r = detrec("-o", trace, program("mlock_all"), timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == LOCKED, r.stdout + r.stderr
    for mode in ([], ["--relaxed"]):
        r = detreplay(*mode, trace, timeout=60)
        assert r.returncode == 0 and r.stdout.strip() == LOCKED, r.stdout + r.stderr
    strict = tmp_path / "mlock-strict.det"
    r = detrec("--strict", "-o", strict, program("mlock_all"), timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == LOCKED, r.stdout + r.stderr
    r = detreplay(strict, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == LOCKED, r.stdout + r.stderr


def test_objects_destroyed_give_their_room_and_id_back(tmp_path: Path) -> None:
    """many_objects: 4 threads make 40000 mutexes, condition variables and
    semaphores at 40000 addresses, destroying each after use, with room for
    1024 alive at once (detrec --max-objects; by default 2^20, which a
    program making 3 million over its life passed: det stopped it in one
    line). A destroyed object's table entry and id are taken again (an id
    once 1024 more of its kind were destroyed), so the trace names a few
    thousand, and every mode replays."""
    want = b"40000 objects, sum 40000, shared 40\n"
    for mode in ([], ["--strict"]):
        trace = tmp_path / f"objects{len(mode)}.det"
        r = detrec(*mode, "--max-objects", "1024", "-o", trace, program("many_objects"), "4", "40000", timeout=120)
        assert (r.returncode, r.stdout) == (0, want), r.stderr.decode()
        [(top, objects)] = query(trace, "SELECT max(obj), count(*) FROM objects")
        assert top < 3 * (1024 + 1) + 50, (top, objects)  # quarantined ids of 3 kinds (DET_OBJ_QUARANTINE), a few alive
        for replay in ([], ["--relaxed"]) if not mode else ([],):
            for _ in range(3):
                r = detreplay(*replay, trace, timeout=120)
                assert (r.returncode, r.stdout) == (0, want), r.stderr.decode()


def test_more_objects_alive_than_room_stops_the_program_in_one_line(tmp_path: Path) -> None:
    """The same program destroying none: more than 1024 alive at once."""
    r = detrec("--max-objects", "1024", "-o", tmp_path / "keep.det", program("many_objects"), "3", "3000", "keep",
               timeout=60)
    err = r.stderr.decode()
    assert r.returncode == 125, err
    assert "more synchronization objects alive at once than det records in a run (1024" in err, err
