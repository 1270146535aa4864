"""README's Layout names every folder of the tree, and only folders that
exist (a move that forgets the table fails here)."""

from __future__ import annotations

import re
import subprocess

from conftest import ROOT


def test_readme_layout_matches_the_tree() -> None:
    text = (ROOT / "README.md").read_text()
    table = text[text.index("## Layout\n"):]
    table = table[:table.index("\n## ", 1)]
    named = {m.rstrip("/") for m in re.findall(r"^\| `([^`]+)` \|", table, re.M)}
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    tops = {line.split("/", 1)[0] for line in tracked.splitlines() if "/" in line and not line.startswith(".")}
    covered = {n.split("/", 1)[0] for n in named}
    assert tops <= covered, f"folders README's Layout does not name: {sorted(tops - covered)}"
    missing = sorted(n for n in named if not (ROOT / n).is_dir())
    assert not missing, f"README's Layout names folders that do not exist: {missing}"
