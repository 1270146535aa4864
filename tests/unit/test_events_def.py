"""events.def is the one definition: Python's generated copy is current and
agrees with what the C compiler makes of the file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import ROOT

sys.path.insert(0, str(ROOT / "store"))
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


def test_generated_constants_are_what_the_compiler_sees(tmp_path: Path) -> None:
    """det.constants (generated from shm.h and sup.h by a line parser) holds the
    values the C compiler gives the same names, and the enums' members in the
    order and with the values C gives them."""
    from det import constants  # noqa: PLC0415

    scalars = {k: v for k, v in vars(constants).items() if k.startswith("DET_")}
    enums = {"THREAD_STATES": "DET_TS_", "PROC_STATES": "DET_PS_"}
    orders = {"CONVERT_SQL_ORDER": "DET_SQL_", "SCHED_SQL_ORDER": "DET_SCHED_SQL_"}
    lines = []
    for name, value in scalars.items():
        fmt = '\\"%s\\"' if isinstance(value, str) else "%lld"
        cast = "" if isinstance(value, str) else "(long long)"
        lines.append(f'printf("{name} {fmt}\\n", {cast}{name});')
    for py, prefix in enums.items():
        lines += [f'printf("{py}.{v} %d\\n", {prefix}{n.upper()});' for v, n in getattr(constants, py).items()]
    for py, prefix in orders.items():
        names = getattr(constants, py)
        lines += [f'printf("{py}.{i} %d\\n", {prefix}{n});' for i, n in enumerate(names)]
        lines.append(f'printf("{py}.count %d\\n", {prefix}COUNT);')
    src = tmp_path / "constants.c"
    sys.path.insert(0, str(ROOT / "tools"))
    import gen_events  # noqa: PLC0415 - the headers the generator copies from, each included here

    includes = "".join(f'#include "det/{h.name}"\n' for h in gen_events.HEADERS)
    src.write_text("#include <stdio.h>\n#include <stdint.h>\n" + includes +
                   "int main(void) {\n" + "\n".join(lines) + "\nreturn 0; }\n")
    exe = tmp_path / "constants"
    subprocess.run(["gcc", "-I", ROOT / "include", "-o", exe, src], check=True)
    got = dict(line.split(" ", 1) for line in subprocess.run([exe], capture_output=True, text=True,
                                                              check=True).stdout.splitlines())
    for name, value in scalars.items():
        assert got[name] == (f'"{value}"' if isinstance(value, str) else str(value)), name
    for py in enums:
        for v in getattr(constants, py):
            assert int(got[f"{py}.{v}"]) == v
    for py in orders:
        names = getattr(constants, py)
        assert [int(got[f"{py}.{i}"]) for i in range(len(names))] == list(range(len(names)))
        assert int(got[f"{py}.count"]) == len(names), f"{py}: C has members the generator did not copy"


def test_generator_refuses_a_header_without_a_name_it_copies(tmp_path: Path) -> None:
    """A constant Python needs that the header no longer defines stops the build
    (a rename in C cannot leave a stale Python copy behind)."""
    sys.path.insert(0, str(ROOT / "tools"))
    import gen_events  # noqa: PLC0415

    shm = (ROOT / "include" / "det" / "shm.h").read_text()
    shm = shm.replace("#define DET_EXIT_STOPPED", "#define DET_EXIT_HALTED")
    sup = (ROOT / "include" / "det" / "sup.h").read_text()
    try:
        gen_events.parse_headers([("shm.h", shm), ("sup.h", sup)])
    except SystemExit as e:
        assert "DET_EXIT_STOPPED" in str(e)
    else:
        raise AssertionError("gen_events accepted a header without DET_EXIT_STOPPED")
