"""dettui driven by Textual's pilot (App.run_test): navigation, search,
filter, go to, the deadlock, the diff view with det.compare.diff's results, the
bisection, and bad files said inside the UI.

Rules: expectations come from the trace itself (sqlite3 on the file) or
from the det tools' own output (detdiff --json), never from dettui.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from textual.pilot import Pilot
from tuitraces import SIZE, bank, bank_swapped, deadlock, in_tmp, recorded  # noqa: F401 - fixtures

from conftest import BIN, detrec, program, query, sample_bin
from det.compare.bisect import runner
from det.compare.bisect.runner import detreplay_command
from det.tui.app import DetTui
from det.tui.dialogs import ErrorScreen, FilterScreen, GotoScreen, HelpScreen

Body = Callable[[DetTui, Pilot], Awaitable[None]]


def drive(paths: list[str], body: Body, live: bool = False, size: tuple[int, int] = SIZE) -> None:
    async def go() -> None:
        app = DetTui([str(p) for p in paths], live=live)
        async with app.run_test(size=size) as pilot:
            await settle(app, pilot)
            await body(app, pilot)
    asyncio.run(go())


async def settle(app: DetTui, pilot: Pilot, timeout: float = 30) -> None:
    """Until the first screen has read what it reads in the background."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        await pilot.pause(0.05)
        s = app.screen
        if isinstance(s, ErrorScreen) or getattr(s, "lanes_loaded", False) or getattr(s, "result", None):
            break
    await pilot.pause(0.1)


async def focus(app: DetTui, pilot: Pilot, widget) -> None:  # noqa: ANN001 - any focusable widget
    """Focus a widget and wait until it has it: Widget.focus() only schedules the change, so a key
    pressed straight after it can still reach the widget that had the focus."""
    widget.focus()
    for _ in range(100):
        await pilot.pause(0.02)
        if app.focused is widget:
            return
    raise AssertionError(f"{widget!r} never got the focus (focused: {app.focused!r})")


def line_text(widget, y: int) -> str:  # noqa: ANN001 - a line-API widget
    return "".join(seg.text for seg in widget.render_line(y))


# ---------------------------------------------------------------- one trace


def test_navigation_keys_move_list_timeline_and_details(recorded: Path) -> None:
    n = query(recorded, "SELECT count(*) FROM events")[0][0]
    seqs = [r[0] for r in query(recorded, "SELECT seq FROM events ORDER BY seq")]

    async def body(app: DetTui, pilot: Pilot) -> None:
        s = app.screen
        assert s.events.current_seq() == seqs[0]
        await pilot.press("j", "j", "down")
        await pilot.pause(0.2)
        assert s.events.current_seq() == seqs[3]
        assert s.timeline.cursor == 3
        assert s.details.border_title == f"Event {seqs[3]}"
        await pilot.press("k")
        assert s.events.current_seq() == seqs[2]
        await pilot.press("end")
        assert s.events.current_seq() == seqs[-1] and s.timeline.cursor == n - 1
        await pilot.press("home", "pagedown")
        assert s.events.cursor > 10
        # Enter: the timeline shows single events around the selected one.
        assert s.timeline.per > 1, "a sample's whole run does not fit one event a column"
        await pilot.press("enter")
        assert s.timeline.per == 1
        assert s.timeline.start <= s.timeline.cursor < s.timeline.start + s.timeline.columns
        # Zoom keys on the timeline, then back to the whole run.
        await focus(app, pilot, s.timeline)
        await pilot.press("minus", "minus")
        # Zoom steps are 1, 2, 5, ... and stop at the first that fits the whole run: a short
        # recording (bank's event count varies run to run) fits at 2 events a column.
        fit = -(-n // s.timeline.columns)
        assert s.timeline.per == (5 if fit > 2 else 2), (n, s.timeline.columns)
        await pilot.press("0")
        assert s.timeline.per == -(-n // s.timeline.columns) and s.timeline.start == 0

    drive([recorded], body)


def test_search_finds_kinds_threads_and_files(recorded: Path) -> None:
    rows = query(recorded, "SELECT seq, tid, kind FROM events ORDER BY seq")
    barrier = [seq for seq, _, kind in rows if kind in (40, 41)]   # barrier_arrive, barrier_depart
    t2_obj = query(recorded, "SELECT obj FROM threads WHERE tid = 2")[0][0]
    # T2's events, and the events on T2 (its creation, its join)
    t2 = [r[0] for r in query(recorded, "SELECT seq FROM events WHERE tid = 2 OR obj = ? ORDER BY seq", (t2_obj,))]

    async def body(app: DetTui, pilot: Pilot) -> None:
        s = app.screen
        await pilot.press("slash", *"barrier", "enter")
        await pilot.pause(0.1)
        assert s.events.current_seq() == barrier[0]
        await pilot.press("escape", "n")
        assert s.events.current_seq() == barrier[1]
        await pilot.press("N")
        assert s.events.current_seq() == barrier[0]
        await pilot.press("home", "slash")
        box = s.query_one("#search")
        box.value = "T2"
        await pilot.press("enter", "escape")
        assert s.events.current_seq() == t2[0]
        box.value = "bank_check_then_act.c"
        await pilot.press("slash", "enter", "escape")
        assert s.events.current_seq() > t2[0]
        box.value = "no such thing at all"
        await pilot.press("slash", "enter", "escape")
        assert s.events.current_seq() > t2[0], "a search that finds nothing does not move"

    drive([recorded], body)


def test_filter_and_thread_keys(recorded: Path) -> None:
    t1 = [r[0] for r in query(recorded, "SELECT seq FROM events WHERE tid = 1 ORDER BY seq")]
    locks_t2 = [r[0] for r in query(recorded, "SELECT seq FROM events WHERE tid = 2 AND kind = 10 ORDER BY seq")]
    n = query(recorded, "SELECT count(*) FROM events")[0][0]

    async def body(app: DetTui, pilot: Pilot) -> None:
        s = app.screen
        await pilot.press("f")
        assert isinstance(app.screen, FilterScreen)
        await pilot.press(*"T1", "enter")
        await pilot.pause(0.5)
        assert s.events.rows == len(t1)
        assert [s.events.seq_at(i) for i in range(len(t1))] == t1
        assert all(s.events.event_at(i).tid == 1 for i in range(min(50, len(t1))))
        assert f"({len(t1)} of {n}" in str(s.events.border_title)
        await pilot.press("F")
        assert s.events.rows == n
        # thread and kind together
        await pilot.press("f")
        dialog = app.screen
        dialog.query_one("#filter-thread").value = "2"
        dialog.query_one("#filter-kind").value = "mutex_lock"
        await pilot.click("#filter-apply")
        await pilot.pause(0.5)
        assert [s.events.seq_at(i) for i in range(s.events.rows)] == locks_t2
        await pilot.press("F", "home")
        # t: only the selected event's thread, and back
        await pilot.press("j", "j", "j")
        tid = s.events.event_at(s.events.cursor).tid
        await pilot.press("t")
        await pilot.pause(0.5)
        want = query(recorded, "SELECT count(*) FROM events WHERE tid = ?", (tid,))[0][0]
        assert s.events.rows == want
        await pilot.press("t")
        await pilot.pause(0.3)
        assert s.events.rows == n

    drive([recorded], body)


def test_goto_and_its_checks(recorded: Path) -> None:
    last = query(recorded, "SELECT max(seq) FROM events")[0][0]

    async def body(app: DetTui, pilot: Pilot) -> None:
        s = app.screen
        await pilot.press("g")
        assert isinstance(app.screen, GotoScreen)
        await pilot.press(*str(last + 5), "enter")
        assert isinstance(app.screen, GotoScreen), "a number past the end is refused in the dialog"
        assert "a number from" in str(app.screen.query_one("#goto-error").render())
        inp = app.screen.query_one("#goto-input")
        inp.value = "17"
        await pilot.press("enter")
        assert app.screen is s
        assert s.events.current_seq() == 17
        assert s.timeline.per == 1 and s.timeline.cursor == 17
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert app.screen is s

    drive([recorded], body)


def test_deadlock_is_shown_where_it_closed(deadlock: str) -> None:
    last = query(Path(deadlock), "SELECT max(seq) FROM events")[0][0]

    async def body(app: DetTui, pilot: Pilot) -> None:
        s = app.screen
        banner = str(s.query_one("#problem").render())
        assert "deadlock: T1 holds mutex 4 and waits for mutex 5; T2 holds mutex 5 and waits for mutex 4" in banner
        await pilot.press("x")
        assert s.events.current_seq() == last
        assert "then blocked" in s.events.notes[last]
        # The cycle's lanes are marked, and the threads blocked at the end drawn as such.
        rows = [line_text(s.timeline, y) for y in range(len(s.timeline.rows_meta))]
        assert rows[2].startswith("T1 ✖") and rows[3].startswith("T2 ✖") and rows[1].startswith("T0 ■")
        assert "━" in rows[1], "T0 waits in its join from its last event to the end"

    drive([deadlock], body)


def test_assertion_is_shown_as_the_end_not_a_deadlock(tmp_path: Path) -> None:
    """An assertion failing in T1 while T0 waits to join it: the banner says
    the assertion in T1 (det.ending), not "all threads blocked"; x goes to
    T1's last event, which says what then happened."""
    trace = tmp_path / "assert.db"
    r = detrec("-q", "-o", trace, program("assert_thread"))
    assert r.returncode == 134, r.stderr.decode()
    last = query(trace, "SELECT max(seq) FROM events WHERE tid = 1")[0][0]

    async def body(app: DetTui, pilot: Pilot) -> None:
        s = app.screen
        banner = str(s.query_one("#problem").render())
        assert "T1 failed an assertion: `balance >= 0 && \"overdrawn\"' at assert_thread.c:" in banner, banner
        assert "blocked" not in banner and "deadlock" not in banner, banner
        await pilot.press("x")
        assert s.events.current_seq() == last
        assert s.events.notes[last].startswith("then failed an assertion"), s.events.notes[last]

    drive([str(trace)], body)


def test_timeline_draws_single_events_and_waits(bank: str) -> None:
    rows = query(Path(bank), "SELECT seq, tid, kind FROM events ORDER BY seq")
    wait = next(seq for seq, tid, kind in rows if tid == 0 and kind == 20)      # cond_wait
    wake = next(seq for seq, tid, kind in rows if tid == 0 and kind == 23)      # cond_wake

    async def body(app: DetTui, pilot: Pilot) -> None:
        t = app.screen.timeline
        t.zoom_to(0)
        await pilot.pause(0.1)
        assert t.columns > len(rows), "the test trace fits the terminal at one event a column"
        t0 = line_text(t, 1)[t.label_width:]
        assert t0[:2] == "CC", "T0 creates two threads first"
        # T0 waits on the condition from its cond_wait to its cond_wake: a line.
        assert t0[wait] == "W" and t0[wake] == "w"
        assert set(t0[wait + 1:wake]) == {"─"}
        t1 = line_text(t, 2)[t.label_width:]
        assert t1[2] == ">" and "L" in t1 and "U" in t1

    drive([bank], body)


# ---------------------------------------------------------------- two traces


def test_diff_view_shows_detdiffs_comparison(bank: str, bank_swapped: str) -> None:
    r = subprocess.run([str(BIN / "detdiff"), "--json", "--limit", "0", bank, bank_swapped], capture_output=True)
    assert r.returncode == 1, r.stderr.decode()
    want = json.loads(r.stdout)
    pos = want["divergence"]["position"]

    async def body(app: DetTui, pilot: Pilot) -> None:
        s = app.screen
        assert s.result is not None
        assert s.result.divergence.position == pos
        assert s.result.inversion_count == want["inversion_count"]
        ea, eb = s.query_one("#events-a"), s.query_one("#events-b")
        assert ea.cursor == pos and eb.cursor == pos, "both sides open at the divergence"
        assert "the schedules part here" in ea.notes[want["divergence"]["a"]["seq"]]
        items = s.items
        assert len(items) == 1 + len(want["threads"]) + len(want["inversions"]) + len(want["one_side"]) \
            + len(want["results"]) + (1 if want["outcome"] else 0)
        # n: the next difference, both sides at its positions
        await pilot.press("n", "n")
        it = items[1]
        assert (ea.cursor, eb.cursor) == (it.a if it.a is not None else it.b, it.b if it.b is not None else it.a)
        # moving one list moves the other (aligned by position)
        await focus(app, pilot, ea)
        await pilot.press("j")
        await pilot.pause(0.1)
        assert eb.cursor == ea.cursor
        await pilot.press("d")
        assert ea.cursor == pos and eb.cursor == pos
        await pilot.press("b")
        for _ in range(100):
            await pilot.pause(0.1)
            if not s.bisecting:
                break
        assert s.bisect is None, "--bisect refuses traces that are not strict recordings"

    drive([bank, bank_swapped], body)


def test_diff_view_lists_fill_the_height(bank: str, bank_swapped: str) -> None:
    """At 160x45 the two event lists get the rows the lanes leave (they had 4)."""
    n = query(bank, "SELECT count(*) FROM threads")[0][0]

    async def body(app: DetTui, pilot: Pilot) -> None:
        s = app.screen
        assert s.result is not None
        for side in ("a", "b"):
            timeline = s.query_one(f"#timeline-{side}")
            assert timeline.size.height >= min(n, 6), f"the {side} lanes show the threads"
            rows = s.query_one(f"#events-{side}").scrollable_content_region.height
            assert rows >= 20, f"the {side} list shows {rows} rows of 45"
        assert s.query_one("#diff-items").size.height >= 20, "the differences list too"

    drive([bank, bank_swapped], body, size=(160, 45))


def strict_pair(tmp: Path) -> tuple[Path, Path]:
    """A failing and a passing strict recording of bank_check_then_act (chaos seeds, as tests/bisect does)."""
    fail, ok = tmp / "fail.db", tmp / "pass.db"
    exe = sample_bin("bank_check_then_act")
    for seed in range(1, 60):
        target = ok if not ok.exists() else fail
        r = detrec("-q", "--chaos", "--strict", "--seed", str(seed), "-o", tmp / "try.db", "--", exe, "50")
        if (r.returncode == 0) == (target == ok) and not target.exists():
            (tmp / "try.db").rename(target)
        if ok.exists() and fail.exists():
            return ok, fail
    pytest.fail("no passing and failing strict recordings of bank_check_then_act in 60 chaos seeds")


def test_diff_view_bisects_on_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ok, fail = strict_pair(tmp_path)

    async def body(app: DetTui, pilot: Pilot) -> None:
        s = app.screen
        assert s.result is not None
        await pilot.press("b")
        # (looked at from the key on: a short bisection may end within 0.3 s)
        bar_while_running = False
        steps = 0
        for _ in range(6000):
            if s.bisecting:
                bar_while_running |= s.query_one("#bisect-bar").has_class("running")
            steps = max(steps, int(s.query_one("#bisect-progress").progress))
            if not s.bisecting:
                break
            await pilot.pause(0.05)
        assert bar_while_running, "a progress bar while it replays"
        r = s.bisect
        assert r is not None and r.found and r.confirmed, r and r.message
        assert steps >= 1 and len(r.steps) >= steps
        assert not s.query_one("#bisect-bar").has_class("running")
        eb = s.query_one("#events-b")
        assert eb.cursor == r.first.position, "the B list jumps to the critical pair"
        assert eb.notes[r.first.seq].startswith("critical pair")
        assert "critical pair" in str(s.items[0].text)

    drive([ok, fail], body)

    # Quitting in the middle of a bisection stops the replay under way. Its
    # replays start late here (a detreplay that sleeps first), so that one is
    # under way when q comes, however loaded the machine (a real one may end
    # within a few tenths of a second: polling for it missed it under load).
    slow = tmp_path / "detreplay-slow"
    slow.write_text(f"#!/bin/sh\nsleep 120\nexec {detreplay_command()[0]} \"$@\"\n")
    slow.chmod(0o755)
    monkeypatch.setattr(runner, "detreplay_command", lambda: [str(slow)])

    async def quit_early(app: DetTui, pilot: Pilot) -> None:
        await pilot.press("b")
        for _ in range(600):
            if detreplay_children():
                break
            await pilot.pause(0.05)
        assert detreplay_children(), "the bisection runs detreplay"
        await pilot.press("q")

    drive([ok, fail], quit_early)
    end = time.monotonic() + 10
    while detreplay_children() and time.monotonic() < end:
        time.sleep(0.1)
    assert not detreplay_children(), "a replay outlived dettui"


def detreplay_children() -> list[int]:
    """Processes this test started (directly) that run detreplay, zombies aside."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
            cmd = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if fields[0] != "Z" and int(fields[1]) == os.getpid() and b"detreplay" in cmd:
            out.append(int(name))
    return out


# ---------------------------------------------------------------- live


def test_live_steps_a_real_gdb_session(tmp_path: Path) -> None:
    from det.gdbmi import session_pids

    trace = tmp_path / "c.db"
    r = detrec("-q", "-o", trace, "--", program("gdb_counter"))
    assert r.returncode == 0, r.stderr.decode()
    rows = query(trace, "SELECT seq, tid FROM events ORDER BY seq")
    sid: list[int] = []

    async def body(app: DetTui, pilot: Pilot) -> None:
        s = app.screen

        async def idle() -> None:
            for _ in range(1200):
                if not s.busy:
                    return
                await pilot.pause(0.1)
            pytest.fail("gdb did not finish a step in 120 s")

        await idle()
        assert s.session is not None, s.sub_title
        sid.append(s.session.sid)
        assert s.session.position.event == rows[0][0]
        assert session_pids(s.session.sid), "detreplay, gdb and the program run in the session"
        await pilot.press("n")
        await idle()
        assert s.session.position.event == rows[1][0] and s.events.current_seq() == rows[1][0]
        assert s.timeline.cursor == 1
        await pilot.press("n", )
        await idle()
        await pilot.press("b")
        await idle()
        assert s.session.position.event == rows[1][0], "det back went one event back"
        await pilot.press("g")
        app.screen.query_one("#goto-input").value = str(rows[6][0])
        await pilot.press("enter")
        await idle()
        assert s.session.position.event == rows[6][0] and s.events.current_seq() == rows[6][0]
        # s: the selected event's thread does its next event
        tid = rows[6][1]
        await pilot.press("s")
        await idle()
        assert any(f"T{tid} did its event {rows[6][0]}" in ln for ln in s.session.position.said)
        assert s.session.position.event > rows[6][0]
        assert s.threads_state and all(t.frames for t in s.threads_state), "every thread's backtrace"

    async def go() -> None:
        app = DetTui([str(trace)], live=True)
        async with app.run_test(size=SIZE) as pilot:
            await body(app, pilot)

    asyncio.run(go())
    time.sleep(0.5)
    assert sid and session_pids(sid[0]) == [], "quitting left processes of the gdb session behind"


# ---------------------------------------------------------------- bad input


def error_of(path: str) -> str:
    out: list[str] = []

    async def body(app: DetTui, pilot: Pilot) -> None:
        assert isinstance(app.screen, ErrorScreen), type(app.screen).__name__
        out.append(str(app.screen.query_one("#error-message").render()))
        out.append(str(app.screen.query_one("#error-facts").render()))
        await pilot.press("q")

    drive([path], body)
    return "\n".join(out)


def test_bad_files_are_said_inside_the_ui(recorded: Path, tmp_path: Path) -> None:
    data = recorded.read_bytes()
    cut = tmp_path / "cut.db"
    cut.write_bytes(data[: len(data) // 2])
    assert "truncated" in error_of(str(cut))
    newer = tmp_path / "newer.db"
    newer.write_bytes(data)
    db = sqlite3.connect(newer)
    db.execute("PRAGMA user_version = 99")
    db.commit()
    db.close()
    msg = error_of(str(newer))
    assert "trace format version 99, made by a newer det" in msg and "an SQLite file" in msg
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    assert "not a det trace" in error_of(str(text))
    assert "no such trace" in error_of(str(tmp_path / "missing.db"))
    # The same in a comparison.
    async def body(app: DetTui, pilot: Pilot) -> None:
        assert isinstance(app.screen, ErrorScreen)
    drive([str(recorded), str(newer)], body)


def test_incomplete_trace_opens_with_a_warning(tmp_path: Path) -> None:
    trace = tmp_path / "lost.db"
    p = subprocess.Popen([str(BIN / "detrec"), "-o", str(trace), str(program("spinner"))],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout.readline() == b"running\n"
    time.sleep(0.5)
    p.kill()
    p.wait()
    inc = Path(str(trace) + ".incomplete")
    assert inc.exists() and Path(str(inc) + ".log").exists()  # the events are still in the capture log

    async def body(app: DetTui, pilot: Pilot) -> None:
        # dettui turned the capture log into the trace, as detreplay and detrec info do
        assert not Path(str(inc) + ".log").exists()
        n = query(inc, "SELECT count(*) FROM events")[0][0]
        assert n > 100
        s = app.screen
        assert "is incomplete: the recording did not finish" in str(s.query_one("#problem").render())
        assert "incomplete" in str(s.query_one("#summary").render())
        assert s.events.rows == n
        await pilot.press("end")
        assert s.events.cursor == n - 1

    drive([str(inc)], body)


def test_missing_source_is_said_in_the_details(tmp_path: Path) -> None:
    src = tmp_path / "gone.c"
    src.write_text((Path(__file__).parent.parent / "programs" / "hello.c").read_text())
    exe = tmp_path / "gone"
    subprocess.run(["gcc", "-g", "-O0", "-pthread", "-o", str(exe), str(src)], check=True, cwd=tmp_path)
    trace = tmp_path / "gone.db"
    r = detrec("-q", "-o", trace, "--", exe)
    assert r.returncode == 0, r.stderr.decode()
    src.unlink()
    first = query(trace, "SELECT min(seq) FROM events WHERE site != 0")[0][0]
    assert first is not None, "hello records at least one call with a call site"

    async def body(app: DetTui, pilot: Pilot) -> None:
        s = app.screen
        s.events.select_seq(first)
        s.show_details(first)
        await pilot.pause(0.2)
        sv = s.details.source
        assert sv is not None and sv.message.startswith("source file") and "gone.c is not here" in sv.message

    drive([str(trace)], body)


def test_command_palette_runs_the_screens_actions(recorded: Path) -> None:
    async def body(app: DetTui, pilot: Pilot) -> None:
        s = app.screen
        await pilot.press("ctrl+p")
        await pilot.pause(0.3)
        await pilot.press(*"Filter")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause(0.5)
        assert isinstance(app.screen, FilterScreen), type(app.screen).__name__
        await pilot.press("escape")
        assert app.screen is s

    drive([recorded], body)


def test_live_says_why_gdb_could_not_start(tmp_path: Path) -> None:
    exe = tmp_path / "counter"
    exe.write_bytes(program("gdb_counter").read_bytes())
    exe.chmod(0o755)
    trace = tmp_path / "c.db"
    r = detrec("-q", "--no-keep-libs", "-o", trace, "--", exe)
    assert r.returncode == 0, r.stderr.decode()
    exe.unlink()          # detreplay refuses a trace whose program is gone (and no copy was kept)

    async def go() -> None:
        app = DetTui([str(trace)], live=True)
        async with app.run_test(size=SIZE) as pilot:
            s = app.screen
            for _ in range(600):
                if not s.busy:
                    break
                await pilot.pause(0.1)
            assert s.session is None
            assert "detreplay --gdb" in s.sub_title and str(exe) in s.sub_title, s.sub_title
            assert s.events.rows == query(trace, "SELECT count(*) FROM events")[0][0], "the trace is still shown"

    asyncio.run(go())
