#!/usr/bin/env python3
"""The screenshots in docs/tui.md: the real dettui on real recordings of
the samples, saved as SVG by Textual.

    .venv/bin/python tools/tui_screenshots.py [--out docs/tui]

Rules: every picture is the app itself (App.run_test at 140x40, the keys a
user would press), on traces recorded here by the real detrec; traces are
named relatively (no temporary paths in the pictures). Run it again when
the UI changes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
SIZE = (140, 40)


def detrec(*args: str) -> int:
    return subprocess.run([str(BIN / "detrec"), "-q", *args], capture_output=True).returncode


def events(trace: str) -> int:
    from det.trace import Trace

    with Trace(trace) as tr:
        return tr.event_count()


def record_all(d: Path) -> None:
    inv = str(ROOT / "samples" / "bin" / "lock_order_inversion")
    for _ in range(20):
        # A deadlock after some transfers makes a better picture than one at the first.
        if detrec("--until-fail", "200", "--timeout", "2", "-o", "hang.db", "--", inv) == 0:
            sys.exit("tui_screenshots: lock_order_inversion did not deadlock in 200 runs")
        if events("hang.db") >= 200:
            break
    bank = str(ROOT / "samples" / "bin" / "bank_check_then_act")
    for seed in range(1, 100):
        code = detrec("--chaos", "--strict", "--seed", str(seed), "-o", "try.db", "--", bank, "50")
        target = Path("pass.db" if code == 0 else "fail.db")
        if not target.exists():
            Path("try.db").rename(target)
        if Path("pass.db").exists() and Path("fail.db").exists():
            return
    sys.exit("tui_screenshots: no passing and failing strict recordings of bank_check_then_act")


async def shoot(out: Path) -> None:
    from det.tui.app import DetTui

    async def settle(app: DetTui, pilot) -> None:  # noqa: ANN001 - Textual's Pilot
        for _ in range(600):
            s = app.screen
            if getattr(s, "lanes_loaded", False) or getattr(s, "result", None) is not None:
                break
            await pilot.pause(0.05)
        await pilot.pause(0.5)

    # One trace: the deadlock, where it closed.
    app = DetTui(["hang.db"])
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("x")
        await pilot.pause(1.0)
        app.clear_notifications()
        await pilot.pause(0.3)
        app.save_screenshot(str(out / "trace.svg"))
        await pilot.press("f", *"T2")
        await pilot.pause(0.3)
        app.save_screenshot(str(out / "filter.svg"))

    # Two traces, bisected.
    app = DetTui(["pass.db", "fail.db"])
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("b")
        await pilot.pause(1.0)
        app.save_screenshot(str(out / "bisect-running.svg"))
        for _ in range(3000):
            if not app.screen.bisecting:
                break
            await pilot.pause(0.1)
        app.clear_notifications()
        await pilot.pause(0.5)
        app.save_screenshot(str(out / "diff.svg"))

    # Live: a few steps in gdb.
    app = DetTui(["hang.db"], live=True)
    async with app.run_test(size=SIZE) as pilot:
        s = app.screen
        for keys in ([], ["n"], ["n"], ["n"], ["s"]):
            while s.busy:
                await pilot.pause(0.1)
            await pilot.press(*keys)
            await pilot.pause(0.2)
        while s.busy:
            await pilot.pause(0.1)
        app.clear_notifications()
        await pilot.pause(0.5)
        app.save_screenshot(str(out / "live.svg"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(ROOT / "docs" / "tui"))
    ns = p.parse_args()
    out = Path(ns.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="det-tui-shots-") as d:
        os.chdir(d)
        record_all(Path(d))
        asyncio.run(shoot(out))
    for f in sorted(out.glob("*.svg")):
        print(f"{f} ({f.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
