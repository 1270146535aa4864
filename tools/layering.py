#!/usr/bin/env python3
"""tools/layering.py - who uses whom: det's folders form a DAG, and no file
imports another that imports it back.

    tools/layering.py [--edges] --lib NAME "CFLAGS" SRC... [--lib ...]   (make check passes the Makefile's)

Rules of this file:
  - C: each source of a library is compiled alone (-c, the library's own
    flags) and `nm` says which symbols it defines and which it uses; a use
    of a symbol another source defines is an edge between their files and,
    when they differ, between their folders. So is a header of another
    folder that a source includes (directly or not; include/ is everyone's).
    Folder cycles are errors.
  - Python: every module of the packages setup.cfg maps (package_dir), and
    gdb-ext's, is read with `ast`; every import is an edge, those inside
    functions ("lazy") too. A module's folder is the mapped folder it is in
    (a subpackage inside it belongs to that folder's job). Module cycles and
    folder cycles are errors, and so is a `from M import _name` of another
    module's private name.
  - It prints each error on a line of its own, then the counts, and exits 1
    when there is any. Standard library only (and the C compiler and nm).
"""

from __future__ import annotations

import argparse
import ast
import configparser
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXTRA_PY_ROOTS = ("gdb-ext",)  # top-level modules of their own (gdb's sys.path)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan,
    iterative: a long import chain is no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    nodes = set(edges) | {w for ws in edges.values() for w in ws}
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def edge_lines(lang: str, edges: dict[str, set[str]], why: dict[tuple[str, str], str]) -> list[str]:
    """`LANG A -> B (an example)`, one per folder edge, sorted."""
    return [f"{lang} {a} -> {b} ({why[(a, b)]})" for a in sorted(edges) for b in sorted(edges[a])]


# ---------------------------------------------------------------- C


def c_symbols(cc: list[str], flags: list[str], src: str, tmp: str) -> tuple[set[str], set[str]]:
    """(defined, used) global symbols of one source compiled alone."""
    obj = os.path.join(tmp, src.replace("/", "_") + ".o")
    r = subprocess.run([*cc, *flags, "-c", "-o", obj, src], cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"layering: cannot compile {src}:\n{r.stderr}")
    nm = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRVWG" and parts[1].isupper():
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
    return defined, used


INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def c_includes(src: str, flags: list[str]) -> Iterable[str]:
    """Every file of the tree that src includes with quotes, directly or not,
    found as the compiler would: beside the includer, then in each -I."""
    dirs = [f[2:] for f in flags if f.startswith("-I") and len(f) > 2]
    seen: set[str] = set()
    todo = [src]
    while todo:
        f = todo.pop()
        for name in INCLUDE_RE.findall((ROOT / f).read_text(errors="replace")):
            for d in (os.path.dirname(f), *dirs):
                cand = os.path.normpath(os.path.join(d, name))
                if (ROOT / cand).is_file():
                    if cand not in seen:
                        seen.add(cand)
                        todo.append(cand)
                        yield cand
                    break


def c_layers(cc: list[str],
             libs: list[tuple[str, list[str], list[str]]]) -> tuple[list[str], dict[str, int], list[str]]:
    errors: list[str] = []
    folder_edges: dict[str, set[str]] = defaultdict(set)
    why: dict[tuple[str, str], str] = {}
    files = 0
    with tempfile.TemporaryDirectory(prefix="det-layering-") as tmp:
        for name, flags, srcs in libs:
            defs: dict[str, str] = {}
            uses: dict[str, set[str]] = {}
            for src in srcs:
                d, u = c_symbols(cc, flags, src, tmp)
                for s in d:
                    defs[s] = src
                uses[src] = u
                files += 1
            for src in srcs:  # a header of another folder is a use of that folder too
                for inc in c_includes(src, flags):
                    a, b = os.path.dirname(src), os.path.dirname(inc)
                    if a != b and not b.startswith("include"):
                        folder_edges[a].add(b)
                        why.setdefault((a, b), f"{name}: {src} includes {inc}")
            for src, used in uses.items():
                for sym in used:
                    other = defs.get(sym)
                    if other is None or other == src:
                        continue
                    a, b = os.path.dirname(src), os.path.dirname(other)
                    if a != b:
                        folder_edges[a].add(b)
                        why.setdefault((a, b), f"{name}: {src} uses {sym} from {other}")
    found = cycles(folder_edges)
    for comp in found:
        members = set(comp)
        examples = [why[(a, b)] for a in comp for b in folder_edges[a] if b in members]
        errors.append(f"C folder cycle {' <-> '.join(comp)}: " + "; ".join(sorted(examples)[:6]))
    return errors, {"C files": files, "C folder edges": sum(len(v) for v in folder_edges.values()),
                    "C folder cycles": len(found)}, edge_lines("C", folder_edges, why)


# ---------------------------------------------------------------- Python


def py_roots() -> dict[str, Path]:
    """Package name -> its folder, from setup.cfg's package_dir, plus
    gdb-ext's top level ('' maps a folder whose modules are top-level)."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    roots: dict[str, Path] = {}
    for line in cfg.get("options", "package_dir", fallback="").splitlines():
        if "=" in line:
            pkg, folder = (x.strip() for x in line.split("=", 1))
            roots[pkg] = ROOT / folder
    for extra in EXTRA_PY_ROOTS:
        roots[f"<{extra}>"] = ROOT / extra
    return roots


def py_modules(roots: dict[str, Path]) -> dict[str, Path]:
    """Module name -> file. A subpackage mapped to a folder of its own is
    found under that folder only."""
    mapped = {p.resolve() for p in roots.values()}
    mods: dict[str, Path] = {}
    for pkg, folder in roots.items():
        prefix = "" if pkg.startswith("<") else pkg
        for dirpath, dirnames, filenames in os.walk(folder):
            here = Path(dirpath)
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__"
                                 and (here / d).resolve() not in mapped)
            for f in sorted(filenames):
                if not f.endswith(".py"):
                    continue
                rel = (here / f).relative_to(folder).with_suffix("")
                parts = [p for p in rel.parts if p != "__init__"]
                name = ".".join(([prefix] if prefix else []) + parts)
                if name:
                    mods[name] = here / f
    return mods


def _resolve(mods: dict[str, Path], current: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = current.split(".") if is_pkg else current.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(mods: dict[str, Path], name: str, path: Path) -> Iterable[tuple[str, str | None]]:
    """(module imported, the name taken from it or None), every import in the file."""
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, None
        elif isinstance(node, ast.ImportFrom):
            m = _resolve(mods, name, is_pkg, node)
            for a in node.names:
                if f"{m}.{a.name}" in mods:
                    yield f"{m}.{a.name}", None
                else:
                    yield m, a.name


def py_layers() -> tuple[list[str], dict[str, int], list[str]]:
    roots = py_roots()
    mods = py_modules(roots)
    errors: list[str] = []
    mod_edges: dict[str, set[str]] = defaultdict(set)
    folder_edges: dict[str, set[str]] = defaultdict(set)
    why: dict[tuple[str, str], str] = {}

    tops = sorted((p.resolve() for p in roots.values()), key=lambda p: -len(str(p)))

    def folder(m: str) -> str:
        """The mapped folder a module's file is in (a subpackage inside it is
        part of that folder's job: det.compare's bisect is det.compare's)."""
        f = mods[m].resolve()
        return str(next(t for t in tops if f.is_relative_to(t)).relative_to(ROOT))

    for name, path in mods.items():
        for target, taken in imports_of(mods, name, path):
            while target and target not in mods:  # `import a.b.c` of a module: its deepest known part
                target = target.rpartition(".")[0]
            if not target or target == name:
                continue
            mod_edges[name].add(target)
            if taken and taken.startswith("_") and not taken.startswith("__"):
                errors.append(f"private import: {name} takes {taken} from {target}")
            a, b = folder(name), folder(target)
            if a != b:
                folder_edges[a].add(b)
                why.setdefault((a, b), f"{name} imports {target}")
    for comp in cycles(mod_edges):
        errors.append(f"Python module cycle: {' <-> '.join(comp)}")
    fcycles = cycles(folder_edges)
    for comp in fcycles:
        members = set(comp)
        examples = [why[(a, b)] for a in comp for b in folder_edges[a] if b in members]
        errors.append(f"Python folder cycle {' <-> '.join(comp)}: " + "; ".join(sorted(examples)[:6]))
    return errors, {"Python modules": len(mods),
                    "Python module cycles": len(cycles(mod_edges)),
                    "Python folder cycles": len(fcycles),
                    "private imports": sum(1 for e in errors if e.startswith("private import"))}, \
        edge_lines("Python", folder_edges, why)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="det's layering: folder and module dependency cycles")
    p.add_argument("--cc", default="cc", help="the C compiler (a command line)")
    p.add_argument("--lib", nargs="+", action="append", default=[], metavar=("NAME", "CFLAGS"),
                   help='a library: its name, its compiler flags (one argument), its sources')
    p.add_argument("--edges", action="store_true", help="also print every folder edge, with an example")
    ns = p.parse_args(argv)
    libs = []
    for spec in ns.lib:
        if len(spec) < 3:
            p.error("--lib needs a name, the flags and at least one source")
        libs.append((spec[0], shlex.split(spec[1]), spec[2:]))
    errors, counts, edges = py_layers()
    if libs:
        c_errors, c_counts, c_edges = c_layers(shlex.split(ns.cc), libs)
        errors += c_errors
        counts.update(c_counts)
        edges = c_edges + edges
    if ns.edges:
        for e in edges:
            print(f"layering: {e}")
    for e in errors:
        print(f"layering: {e}")
    print("layering: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
