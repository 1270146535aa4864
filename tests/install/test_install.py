"""`make install` / `make uninstall` into a scratch DESTDIR, and the installed
commands run from elsewhere with a bare environment: no checkout on any
path, no .venv, no DET_LIBDIR. Also the generated man pages and bash
completion, read back against the parsers they come from.
"""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import det
from conftest import ROOT, build_packed_program, query, run, sample_bin
from det import tracedir

PREFIX = "/usr/local"
COMMANDS = ("detrec", "detreplay", "detdiff", "dettui", "det-dap")
NOBODY = 65534


@pytest.fixture(scope="module")
def dest(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("destdir")
    r = run(["make", "-s", "install", f"DESTDIR={d}", f"PREFIX={PREFIX}"], cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr.decode()
    return d


def bare_env(home: Path) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}


def installed(dest: Path, name: str) -> Path:
    return dest / PREFIX.lstrip("/") / "bin" / name


def test_layout_follows_the_fhs(dest: Path) -> None:
    root = dest / PREFIX.lstrip("/")
    for name in COMMANDS:
        cmd = root / "bin" / name
        assert cmd.is_file() and os.access(cmd, os.X_OK), cmd
        assert (root / "share/man/man1" / f"{name}.1").is_file()
        assert (root / "share/bash-completion/completions" / name).is_file()
    for lib in ("libdet.so", "libdetsup.so", "libdetiso.so"):
        assert (root / "lib/det" / lib).is_file()
    assert (root / "lib/det/python/det/record/engine.py").is_file()
    assert (root / "lib/det/python/det/replay/cli.py").is_file()
    assert (root / "lib/det/python/det/compare/bisect/search.py").is_file()
    # dettui's modules and its look (package data, not Python)
    assert (root / "lib/det/python/det/tui/app.py").is_file()
    assert (root / "lib/det/python/det/tui/dettui.tcss").is_file()
    assert (root / "lib/det/python/det/dap/adapter.py").is_file()
    # the gdb extension: a package with its commands in a subpackage
    assert (root / "share/det/gdb-ext/det_gdb/__init__.py").is_file()
    assert (root / "share/det/gdb-ext/det_gdb/commands/goto.py").is_file()
    # nothing outside PREFIX, nothing that points back into the checkout
    assert sorted(p.name for p in dest.iterdir()) == ["usr"]
    for f in root.rglob("*"):
        if f.is_file() and f.suffix in ("", ".py"):
            assert str(ROOT) not in f.read_text(errors="replace"), f


def test_installed_commands_work_from_anywhere(dest: Path, tmp_path: Path) -> None:
    env = bare_env(tmp_path / "home")
    for name in COMMANDS:
        r = run([installed(dest, name), "--version"], env=env, cwd="/")
        assert r.returncode == 0, r.stderr.decode()
        assert r.stdout.decode().strip() == f"{name} (det) {det.__version__}"
    for sub in ("info", "ls", "rm", "pack"):
        r = run([installed(dest, "detrec"), sub, "--version"], env=env, cwd="/")
        assert r.stdout.decode().strip() == f"detrec {sub} (det) {det.__version__}", r.stderr
    prog = sample_bin("pingpong_ok")
    r = run([installed(dest, "detrec"), "--", prog], env=env, cwd="/")
    assert r.returncode == 0, r.stderr.decode()
    traces = tmp_path / "home/.local/share/det/traces"
    trace = traces / "pingpong_ok-1.db"
    assert trace.is_file() and (trace.stat().st_mode & 0o777) == 0o600
    assert (traces.stat().st_mode & 0o777) == 0o700
    # the program ran with the installed libdet.so
    libs = [p for (p,) in query(trace, "SELECT path FROM modules") if p.endswith("libdet.so")]
    assert libs == [str(dest / PREFIX.lstrip("/") / "lib/det/libdet.so")]
    r = run([installed(dest, "detreplay")], env=env, cwd="/")
    assert r.returncode == 0, r.stderr.decode()
    assert "outcome matches" in r.stderr.decode()
    r = run([installed(dest, "detrec"), "ls"], env=env, cwd="/")
    assert "pingpong_ok-1 *" in r.stdout.decode()


def test_gdb_extension_is_found_installed(dest: Path, tmp_path: Path) -> None:
    env = bare_env(tmp_path / "home")
    trace = tmp_path / "t.db"
    r = run([installed(dest, "detrec"), "-o", trace, "--", sample_bin("pingpong_ok")], env=env)
    assert r.returncode == 0, r.stderr.decode()
    r = run([installed(dest, "detreplay"), "--gdb", trace, "--", "-nx", "-batch", "-ex", "det status"], env=env,
            timeout=120)
    out = r.stdout.decode() + r.stderr.decode()
    assert "det: at event 0 of " in out, out


def test_packed_trace_replays_unprivileged() -> None:
    """Not root: the replay of a packed trace makes a user namespace (no
    privilege needed) for its mount namespace, with and without gdb."""
    base = Path(tempfile.mkdtemp(prefix="det-unpriv-"))
    try:
        base.chmod(0o755)
        d = base / "dest"
        assert run(["make", "-s", "install", f"DESTDIR={d}", f"PREFIX={PREFIX}"], cwd=ROOT, timeout=600).returncode == 0
        work = base / "w"
        build_packed_program(work)
        trace = base / "t.db"
        env = bare_env(base)
        rec = run([installed(d, "detrec"), "--pack", "-o", trace, "--", "./main"], env=env, cwd=work)
        assert rec.returncode == 0, rec.stderr.decode()
        shutil.rmtree(work)
        os.chown(trace, NOBODY, NOBODY)
        as_nobody = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        r = run([*as_nobody, installed(d, "detreplay"), trace], env=env, cwd="/")
        assert r.returncode == 0, r.stderr.decode()
        assert r.stdout == rec.stdout
        r = run([*as_nobody, installed(d, "detreplay"), "--gdb", trace, "--", "-nx", "-batch", "-ex", "det goto 50",
                 "-ex", "continue"], env=env, cwd="/", timeout=180)
        out = r.stdout.decode() + r.stderr.decode()
        assert "det: event 50 of " in out and rec.stdout.decode().splitlines()[0] in out, out
        assert "exited normally" in out, out
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_uninstall_removes_everything(tmp_path: Path) -> None:
    d = tmp_path / "dest"
    assert run(["make", "-s", "install", f"DESTDIR={d}", f"PREFIX={PREFIX}"], cwd=ROOT, timeout=600).returncode == 0
    assert any(p.is_file() for p in d.rglob("*"))
    r = run(["make", "-s", "uninstall", f"DESTDIR={d}", f"PREFIX={PREFIX}"], cwd=ROOT)
    assert r.returncode == 0, r.stderr.decode()
    assert [str(p) for p in d.rglob("*") if not p.is_dir()] == []
    assert not (d / PREFIX.lstrip("/") / "lib/det").exists()
    assert not (d / PREFIX.lstrip("/") / "share/det").exists()


def _parsers() -> dict[str, object]:
    """Every command's and subcommand's parser, as the generator reads them."""
    sys.path.insert(0, str(ROOT / "tools"))
    from install import commands

    out = {}
    for name, (module, func) in commands().items():
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name == module:
                continue  # a command setup.cfg names before its module is written (none: gen_cli_docs says so)
            raise
        # (the module whose parser the command runs: its name)
        mod = importlib.import_module(getattr(getattr(mod, func), "cli_module", module))
        out[name] = mod.build_parser()
        for sub in getattr(mod, "SUBCOMMANDS", {}):
            out[f"{name} {sub}"] = mod.subcommand_parser(sub)
    return out


def test_man_pages_document_every_option(dest: Path) -> None:
    pages = {}
    for name in COMMANDS:
        page = dest / PREFIX.lstrip("/") / "share/man/man1" / f"{name}.1"
        r = run(["man", "--warnings", "-l", "-E", "UTF-8", page], env={"MANWIDTH": "200", "PATH": "/usr/bin:/bin"})
        assert r.returncode == 0, r.stderr.decode()
        assert r.stderr.decode() == "", r.stderr.decode()  # groff warnings
        pages[name] = r.stdout.decode().replace("\u2010", "-")
    for cmd, parser in _parsers().items():
        if cmd.split()[0] not in pages:
            page = dest / PREFIX.lstrip("/") / "share/man/man1" / f"{cmd.split()[0]}.1"
            assert page.is_file(), f"{cmd} has no man page"
            continue
        text = pages[cmd.split()[0]]
        if " " in cmd:
            assert cmd in text
        for action in parser._actions:
            for opt in action.option_strings:
                assert opt in text, f"{cmd}: {opt} missing from its man page"


def complete(dest: Path, words: list[str], env: dict[str, str]) -> list[str]:
    script = dest / PREFIX.lstrip("/") / "share/bash-completion/completions" / words[0]
    line = " ".join(words)
    prog = (f'source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; '
            f'COMP_LINE="{line}"; _det_{words[0]}; printf "%s\\n" "${{COMPREPLY[@]}}"')
    r = subprocess.run(["bash", "-c", prog], capture_output=True, env=env, timeout=30)
    assert r.returncode == 0, r.stderr.decode()
    return sorted(set(r.stdout.decode().split()))


def test_bash_completion(dest: Path, tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    for name in ("pigz-1.db", "pigz-2.db", "sort-1.db"):
        (traces / name).write_bytes(b"")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DET_TRACE_DIR": str(traces)}
    assert complete(dest, ["detreplay", "pi"], env) == ["pigz-1", "pigz-2"]
    assert complete(dest, ["detreplay", "--re"], env) == ["--relaxed"]
    assert complete(dest, ["detrec", "--unt"], env) == ["--until-fail"]
    assert "ls" in complete(dest, ["detrec", "l"], env)
    assert complete(dest, ["detrec", "ls", "--j"], env) == ["--json"]
    assert complete(dest, ["detrec", "rm", "so"], env) == ["sort-1"]
    assert "sha256sum" in complete(dest, ["detrec", "-o", "x.db", "--strict", "sha256"], env)
    assert complete(dest, ["detdiff", "--color", "a"], env) == ["always", "auto"]
    assert complete(dest, ["detdiff", "pigz-1", "so"], env) == ["sort-1"]


def test_trace_directory_fallbacks(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DET_TRACE_DIR")
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    assert tracedir.trace_dir() == tmp_path / "home/.local/share/det/traces"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/is/ignored")
    assert tracedir.trace_dir() == tmp_path / "home/.local/share/det/traces"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert tracedir.trace_dir() == tmp_path / "xdg/det/traces"
    monkeypatch.setenv("DET_TRACE_DIR", str(tmp_path / "mine"))
    assert tracedir.trace_dir() == tmp_path / "mine"
