"""Where det's own files are: in a checkout, or installed.

Rules: this module is the one place that decides, and it decides from where
it lies itself, so an installed tree works wherever it is unpacked (a
DESTDIR, `dpkg -x` into a scratch directory) and a checkout works without
installing. Installed (`make install`, the Debian package), the Python
package is PREFIX/lib/det/python/det, the native libraries are beside it in
PREFIX/lib/det, and the gdb extension is PREFIX/share/det/gdb-ext. In a
checkout they are build/ and gdb-ext/. $DET_LIBDIR overrides the native
libraries' directory. Standard library only.
"""

from __future__ import annotations

import os
from pathlib import Path

PKG_DIR = Path(__file__).resolve().parent

# PREFIX/lib/det/python/det: installed; anything else is a checkout
INSTALLED = PKG_DIR.parent.name == "python" and PKG_DIR.parent.parent.name == "det"

if INSTALLED:
    LIB_DIR = PKG_DIR.parent.parent
    PREFIX = LIB_DIR.parent.parent
    GDB_EXT_DIR = PREFIX / "share" / "det" / "gdb-ext"
    SOURCE_DIRS: list[Path] = []
else:
    REPO_DIR = PKG_DIR.parent.parent
    LIB_DIR = REPO_DIR / "build"
    GDB_EXT_DIR = REPO_DIR / "gdb-ext"
    SOURCE_DIRS = [REPO_DIR / "recorder", REPO_DIR / "replayer"]

# The directory that holds the `det` package (what gdb's Python puts on sys.path).
PYTHON_DIR = PKG_DIR.parent


def user_cache(name: str) -> Path | None:
    """NAME in the user's det cache ($XDG_CACHE_HOME/det, else ~/.cache/det;
    None without either): what det remembers between runs (traces known to
    be valid, file hashes, the empty trace). Callers make the directory
    private (mode 0700) before writing in it."""
    base = os.environ.get("XDG_CACHE_HOME") or (os.path.join(os.environ["HOME"], ".cache")
                                                 if os.environ.get("HOME") else None)
    return Path(base) / "det" / name if base else None
