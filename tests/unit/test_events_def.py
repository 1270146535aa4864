"""events.def is the one definition: Python's generated copy is current and
agrees with what the C compiler makes of the file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import ROOT

sys.path.insert(0, str(ROOT / "recorder"))
from det import events  # noqa: E402


def test_generated_copy_is_current() -> None:
    r = subprocess.run([sys.executable, ROOT / "tools" / "gen_events.py", "--check"], capture_output=True)
    assert r.returncode == 0, r.stderr.decode()


def test_c_and_python_agree(tmp_path: Path) -> None:
    src = tmp_path / "kinds.c"
    src.write_text(
        '#include <stdio.h>\n#include "det/events.h"\nint main(void) {\n'
        + "".join(f'printf("{e.name} %d\\n", DET_EV_{e.name});\n' for e in events.EVENTS)
        + "".join(f'printf("OBJ_{o.name} %d\\n", DET_OBJ_{o.name});\n' for o in events.OBJKINDS)
        + "return 0; }\n"
    )
    exe = tmp_path / "kinds"
    subprocess.run(["gcc", "-I", ROOT / "include", "-o", exe, src], check=True)
    out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    got = dict(line.rsplit(" ", 1) for line in out.splitlines())
    for e in events.EVENTS:
        assert int(got[e.name]) == e.number
    for o in events.OBJKINDS:
        assert int(got[f"OBJ_{o.name}"]) == o.number


def test_numbers_are_unique_and_fit_a_byte() -> None:
    nums = [e.number for e in events.EVENTS]
    assert len(nums) == len(set(nums))
    assert all(0 < n < 256 for n in nums)
