"""Source lines of code addresses from a program's DWARF line table
(pyelftools), for the sites detcheck reports.

Rules of this file:
  - Only the compilation units that hold a reported address are decoded
    (found through .debug_aranges, else each unit's address ranges): a large
    program's whole line table is not read for a few sites.
  - No debug information, or damaged debug information, means no lines,
    never an error (sites then say function+offset).
"""

from __future__ import annotations

import bisect
import os


class Lines:
    def __init__(self, path: str) -> None:
        from elftools.elf.elffile import ELFFile

        self._file = open(path, "rb")  # noqa: SIM115 (pyelftools reads it lazily; closed by close())
        try:
            self._elf = ELFFile(self._file)
            self._dwarf = self._elf.get_dwarf_info() if self._elf.has_dwarf_info() else None
        except BaseException:
            self._file.close()
            raise
        self._aranges = None
        self._ranges: list[tuple[int, int, int]] | None = None  # (low, high, cu offset), without aranges
        self._rows: dict[int, tuple[list[int], list[tuple[str | None, int, bool]]]] = {}
        if self._dwarf is not None:
            try:
                self._aranges = self._dwarf.get_aranges()
            except Exception:  # noqa: BLE001 (damaged: fall back to the units' ranges)
                self._aranges = None

    @property
    def has_dwarf(self) -> bool:
        return self._dwarf is not None

    def close(self) -> None:
        self._file.close()

    def _cu_offset(self, addr: int) -> int | None:
        if self._aranges is not None:
            off = self._aranges.cu_offset_at_addr(addr)
            if off is not None:
                return off
        if self._ranges is None:
            self._ranges = []
            for cu in self._dwarf.iter_CUs():
                top = cu.get_top_DIE()
                low = top.attributes.get("DW_AT_low_pc")
                high = top.attributes.get("DW_AT_high_pc")
                if low is not None and high is not None:
                    hi = high.value if high.form == "DW_FORM_addr" else low.value + high.value
                    self._ranges.append((low.value, hi, cu.cu_offset))
                elif "DW_AT_ranges" in top.attributes:
                    rl = self._dwarf.range_lists()
                    if rl is None:
                        continue
                    base = low.value if low is not None else 0
                    for r in rl.get_range_list_at_offset(top.attributes["DW_AT_ranges"].value, cu=cu):
                        if hasattr(r, "begin_offset"):
                            self._ranges.append((base + r.begin_offset, base + r.end_offset, cu.cu_offset))
        for low, high, off in self._ranges:
            if low <= addr < high:
                return off
        return None

    def _table(self, cu_off: int) -> tuple[list[int], list[tuple[str | None, int, bool]]]:
        if cu_off in self._rows:
            return self._rows[cu_off]
        cu = self._dwarf.get_CU_at(cu_off)
        prog = self._dwarf.line_program_for_CU(cu)
        rows: list[tuple[int, str | None, int, bool]] = []
        if prog is not None:
            files = prog.header["file_entry"]
            v5 = prog.header["version"] >= 5
            for entry in prog.get_entries():
                st = entry.state
                if st is None:
                    continue
                i = st.file if v5 else st.file - 1
                name = files[i].name.decode(errors="replace") if 0 <= i < len(files) else None
                rows.append((st.address, name, st.line, st.end_sequence))
        rows.sort(key=lambda r: (r[0], not r[3]))  # an end of sequence before a row at the same address
        table = ([r[0] for r in rows], [(r[1], r[2], r[3]) for r in rows])
        self._rows[cu_off] = table
        return table

    def at(self, addr: int) -> tuple[str, int] | None:
        """(file name, line) of the code at addr, if the debug info says."""
        if self._dwarf is None:
            return None
        try:
            off = self._cu_offset(addr)
            if off is None:
                return None
            addrs, rows = self._table(off)
        except Exception:  # noqa: BLE001 (damaged debug info: no line, as without any)
            return None
        i = bisect.bisect_right(addrs, addr) - 1
        if i < 0:
            return None
        name, line, end = rows[i]
        if end or not name or not line:
            return None
        return os.path.basename(name), line
