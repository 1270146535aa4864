"""Where a recorded event happened, named as gdb names it (issue 23.9):
binutils 2.40's addr2line named the including .c file for code of a
function defined in a header (`kcmp.c:162` for `util.h:162`) under gcc
12's DWARF 5."""

from __future__ import annotations

from pathlib import Path

from conftest import detrec, program, query
from det import events as ev
from det.symbols import Symbolizer, addr2line_tool
from det.trace import Trace


def test_a_lock_in_a_header_function_is_named_in_the_header(tmp_path: Path) -> None:
    assert addr2line_tool(), "no addr2line (tools/setup.sh installs LLVM's and binutils')"
    trace = tmp_path / "h.det"
    r = detrec("-o", trace, program("header_site"))
    assert r.returncode == 0 and r.stdout == b"6\n", r.stderr.decode()
    ras = [ra for (ra,) in query(trace, "SELECT DISTINCT s.address FROM events e JOIN sites s ON s.site = e.site "
                                        "WHERE e.kind = ?", (ev.MUTEX_LOCK,))]
    assert len(ras) == 1, ras
    with Trace(trace) as tr:
        where = Symbolizer(tr.modules()).one(ras[0]).long()
    header = Path(__file__).parents[1] / "programs" / "header_site.h"
    lock_line = next(i for i, text in enumerate(header.read_text().splitlines(), 1) if "pthread_mutex_lock" in text)
    assert where == f"header_add at header_site.h:{lock_line}", where
