#!/usr/bin/env python3
"""tools/install.py - stage, install and uninstall det (make stage/install/uninstall).

    install.py stage STAGE
    install.py install --prefix P [--destdir D] --stage STAGE [--file DEST=SRC ...]
    install.py uninstall --prefix P [--destdir D] [--file DEST=SRC ...]

Rules:
  - What is installed is data, not code: the Python packages and commands
    come from setup.cfg ([options] package_dir/packages, console_scripts);
    everything else is a DEST=SRC pair the Makefile passes (DEST relative to
    the prefix), so a new library or data file is one Makefile line.
  - The layout is the one det.paths expects: PREFIX/bin/COMMAND,
    PREFIX/lib/det/ (native libraries) with the package in
    PREFIX/lib/det/python, PREFIX/share/det/ (the gdb extension),
    PREFIX/share/man/man1, PREFIX/share/bash-completion/completions.
  - Each command's man page and bash completion are generated from its
    argument parser at build time (tools/gen_cli_docs.py, into build/).
  - A command is a small python3 script that finds lib/det/python relative
    to its own real location, so the tree works from any DESTDIR.
  - uninstall removes exactly what install puts there, then the directories
    det owns (lib/det, share/det) and nothing else.
  - Standard library only: it runs in a Debian package build, without .venv.
"""

from __future__ import annotations

import argparse
import configparser
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = "/usr/bin/python3"
GENERATED = ROOT / "build"  # man/ and completion/, made by tools/gen_cli_docs.py

COMMAND = '''#!{python}
"""{name}: det's command, installed by det's `make install` (see det.paths)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "lib", "det", "python"))
from {module} import {func}  # noqa: E402

sys.exit({func}())
'''


def setup_cfg() -> configparser.ConfigParser:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return cfg


def packages() -> dict[str, Path]:
    """Python package name -> its source directory."""
    cfg = setup_cfg()
    dirs = {}
    for line in cfg["options"]["package_dir"].strip().splitlines():
        name, src = (s.strip() for s in line.split("="))
        dirs[name] = ROOT / src
    out = {}
    for name in (p.strip() for p in cfg["options"]["packages"].replace("\n", ",").split(",")):
        if not name:
            continue
        # a package without its own package_dir line lives under its parent's directory
        parent, _, leaf = name.rpartition(".")
        out[name] = dirs[name] if name in dirs else out[parent] / leaf
    return out


def commands() -> dict[str, tuple[str, str]]:
    """Command name -> (module, function), from console_scripts."""
    out = {}
    for line in setup_cfg()["options.entry_points"]["console_scripts"].strip().splitlines():
        name, target = (s.strip() for s in line.split("="))
        module, func = target.split(":")
        out[name] = (module, func)
    return out


def package_data() -> dict[str, list[str]]:
    """Package name -> glob patterns of its files that are not Python ([options.package_data])."""
    cfg = setup_cfg()
    if "options.package_data" not in cfg:
        return {}
    return {name: pats.split() for name, pats in cfg["options.package_data"].items()}


def stage(dest: Path) -> None:
    """Copy the Python packages (and their data files) as they are laid out when installed."""
    if dest.exists():
        shutil.rmtree(dest)
    data = package_data()
    for name, src in packages().items():
        target = dest.joinpath(*name.split("."))
        target.mkdir(parents=True, exist_ok=True)
        for pattern in ["*.py", *data.get(name, [])]:
            for f in sorted(src.glob(pattern)):
                shutil.copy2(f, target / f.name)


def pairs(items: list[str]) -> list[tuple[str, Path]]:
    out = []
    for item in items:
        dest, _, src = item.partition("=")
        if not src:
            sys.exit(f"install.py: --file wants DEST=SRC, got {item!r}")
        out.append((dest, ROOT / src))
    return out


def plan(prefix: Path, stage_dir: Path | None, files: list[str]) -> list[tuple[Path, Path | str, int]]:
    """(destination, source file or text, mode) for everything installed.
    Generated sources (in GENERATED) may be missing: gen_cli_docs said why."""
    out: list[tuple[Path, Path | str, int]] = []
    if stage_dir is not None:
        for f in sorted(p for p in stage_dir.rglob("*") if p.is_file()):
            out.append((prefix / "lib/det/python" / f.relative_to(stage_dir), f, 0o644))
    for name, (module, func) in commands().items():
        rel = Path(*module.split("."))
        if stage_dir is not None and not (stage_dir / rel.with_suffix(".py")).exists() \
                and not (stage_dir / rel / "__init__.py").exists():
            print(f"install.py: {name}: its module {module} does not exist yet; not installed", file=sys.stderr)
            continue
        out.append((prefix / "bin" / name, COMMAND.format(python=PYTHON, name=name, module=module, func=func),
                    0o755))
        # generated from the command's parser (tools/gen_cli_docs.py)
        out.append((prefix / "share/man/man1" / f"{name}.1", GENERATED / "man" / f"{name}.1", 0o644))
        out.append((prefix / "share/bash-completion/completions" / name, GENERATED / "completion" / name, 0o644))
    for dest, src in pairs(files):
        mode = 0o755 if os.access(src, os.X_OK) and not src.name.endswith((".py", ".so")) else 0o644
        out.append((prefix / dest / src.name, src, mode))
    return out


def rooted(destdir: str, path: Path) -> Path:
    return Path(destdir + str(path)) if destdir else path


def install(ns: argparse.Namespace) -> None:
    prefix = Path(ns.prefix)
    for dest, src, mode in plan(prefix, Path(ns.stage), ns.file):
        target = rooted(ns.destdir, dest)
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(src, Path):
            if not src.exists():
                if src.is_relative_to(GENERATED / "man") or src.is_relative_to(GENERATED / "completion"):
                    print(f"install.py: {src.relative_to(ROOT)} was not generated; not installed", file=sys.stderr)
                    continue
                sys.exit(f"install.py: {src} is missing: run `make` first")
            shutil.copyfile(src, target)
        else:
            target.write_text(src)
        os.chmod(target, mode)
    print(f"installed det into {rooted(ns.destdir, prefix)}")


def uninstall(ns: argparse.Namespace) -> None:
    prefix = Path(ns.prefix)
    for dest, _src, _mode in plan(prefix, None, ns.file):
        rooted(ns.destdir, dest).unlink(missing_ok=True)
    for owned in ("lib/det", "share/det"):
        shutil.rmtree(rooted(ns.destdir, prefix / owned), ignore_errors=True)
    print(f"removed det from {rooted(ns.destdir, prefix)}")


def main() -> None:
    p = argparse.ArgumentParser(description="Stage, install or uninstall det.")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("stage")
    s.add_argument("dest")
    for name in ("install", "uninstall"):
        s = sub.add_parser(name)
        s.add_argument("--prefix", required=True)
        s.add_argument("--destdir", default="")
        s.add_argument("--file", action="append", default=[], metavar="DEST=SRC")
        if name == "install":
            s.add_argument("--stage", required=True)
    ns = p.parse_args()
    if ns.cmd == "stage":
        stage(Path(ns.dest))
    elif ns.cmd == "install":
        install(ns)
    else:
        uninstall(ns)


if __name__ == "__main__":
    main()
