"""tools/layering.py finds what it is there to find: a cycle between two C
folders (from the symbols each source uses, compiled alone), and a cycle
between Python modules counted through a lazy import."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import layering  # noqa: E402


def test_c_folder_cycle_is_found(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "one.c").write_text("int two(void);\nint one(void) { return two(); }\n")
    (tmp_path / "b" / "two.c").write_text("int one(void);\nint two(void) { return 1; }\n"
                                          "int three(void) { return one(); }\n")
    srcs = [str(tmp_path / "a" / "one.c"), str(tmp_path / "b" / "two.c")]
    errors, counts, edges = layering.c_layers(["cc"], [("t", ["-O2"], srcs)])
    assert counts["C folder cycles"] == 1, errors
    assert any("uses two" in e for e in errors) and any("uses one" in e for e in errors), errors
    # one way only: no cycle
    (tmp_path / "b" / "two.c").write_text("int two(void) { return 1; }\n")
    errors, counts, edges = layering.c_layers(["cc"], [("t", ["-O2"], srcs)])
    assert counts["C folder cycles"] == 0 and not errors, errors
    assert len(edges) == 1 and " -> " in edges[0]


def test_module_cycles_count_every_member() -> None:
    found = layering.cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert found == [["a", "b", "c"]]
    assert layering.cycles({"a": {"b"}, "b": set()}) == []


def test_lazy_import_is_an_edge(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("def late():\n    from det import trace\n    return trace\n")
    got = {target for target, _ in layering.imports_of({"det.m": f, "det.trace": f}, "det.m", f)}
    assert "det.trace" in got, got


def test_a_header_of_another_folder_is_a_use(tmp_path: Path) -> None:
    """b/two.c calls a/one.c, and a/one.c includes a header of b/: a cycle nm alone cannot see."""
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
    (tmp_path / "b" / "h.h").write_text("static inline int helper(void) { return 2; }\n")
    (tmp_path / "a" / "one.c").write_text('#include "../b/h.h"\nint one(void) { return helper(); }\n')
    (tmp_path / "b" / "two.c").write_text("int one(void);\nint two(void) { return one(); }\n")
    srcs = [str(tmp_path / "a" / "one.c"), str(tmp_path / "b" / "two.c")]
    errors, counts, _ = layering.c_layers(["cc"], [("t", ["-O2"], srcs)])
    assert counts["C folder cycles"] == 1 and any("includes" in e for e in errors), errors
