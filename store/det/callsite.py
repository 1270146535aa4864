"""What the program's source says at a call site: the arguments of the call
on a line, and whether the function around it is a one-line wrapper that
only forwards its parameter to the call (`void lock(pthread_mutex_t *m)
{ pthread_mutex_lock(m); }`).

Used offline, where no live memory is at hand: det.symbols passes through
inlined wrappers to their caller's line, and det.names names a heap object
by the expression its caller passed (`&q->mut` -> `q->mut`).

Rules: standard library only (gdb's Python imports det.symbols). C-like
source read by regular expressions, not parsed: anything unexpected (no
source, a macro, a call spread oddly) gives None, never a wrong answer
on purpose and never an error. Source files are read once per process.
"""

from __future__ import annotations

import functools
import re

MAX_WRAPPER_LINES = 3   # a wrapper's call is at most this many lines below its function's name
MAX_CALL_LINES = 6      # a call's arguments may run over this many lines
IDENT = re.compile(r"[A-Za-z_]\w*\Z")
# The calls det interposes, by their families' prefixes.
INTERPOSED = r"(?:pthread_\w+|sem_\w+|mtx_\w+|cnd_\w+|thrd_\w+|omp_\w+)"


@functools.lru_cache(maxsize=256)
def _lines(path: str) -> tuple[str, ...] | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return tuple(f.read().splitlines())
    except OSError:
        return None


def _split_args(text: str) -> list[str] | None:
    """The top-level comma-separated arguments of text, which starts just
    after a call's `(`; None if its `)` is not there."""
    depth, cur, out = 0, [], []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                out.append("".join(cur).strip())
                return [a for a in out if a] if out != [""] else []
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    return None


def call_args(path: str | None, line: int | None, callee: str) -> list[str] | None:
    """The arguments of the first call of `callee` (a regular expression for
    its name) that starts on `line` of path."""
    lines = _lines(path) if path else None
    if not lines or not line or line > len(lines):
        return None
    m = re.search(rf"\b({callee})\s*\(", lines[line - 1])
    if not m:
        return None
    text = lines[line - 1][m.end():] + " " + " ".join(lines[line:line + MAX_CALL_LINES - 1])
    return _split_args(text)


def parameters(path: str | None, line: int | None, function: str | None) -> list[str] | None:
    """The parameter names of `function` when its definition starts at most
    MAX_WRAPPER_LINES above `line` (the function is that short), else None."""
    lines = _lines(path) if path else None
    if not lines or not line or not function or line > len(lines):
        return None
    name = function.split("(")[0].split("::")[-1]
    for at in range(line, max(line - MAX_WRAPPER_LINES, 0) - 1, -1):
        m = re.search(rf"\b{re.escape(name)}\s*\(", lines[at - 1])
        if m is None:
            continue
        params = _split_args(lines[at - 1][m.end():] + " " + " ".join(lines[at:line]))
        if params is None:
            return None
        names = []
        for p in params:
            words = re.findall(r"[A-Za-z_]\w*", p.split("[")[0])
            if words and p != "void":
                names.append(words[-1])
        return names
    return None


def forwarded(path: str | None, line: int | None, function: str | None, callee: str) -> int | None:
    """Which parameter (its index) a short function passes straight on as
    the first argument of its call of callee at `line`: a wrapper's; None
    when the function is not such a wrapper."""
    args = call_args(path, line, callee)
    if not args or not IDENT.match(args[0]):
        return None
    params = parameters(path, line, function)
    if not params or args[0] not in params:
        return None
    return params.index(args[0])


# An lvalue as programs spell an object's place: a name, then members and
# subscripts (`q->mut`, `pool.locks[i]`, `(*q).mut`); nothing computed.
PLACE = re.compile(r"(?:[A-Za-z_]\w*|\(\*[A-Za-z_]\w*\))(?:\s*(?:\.|->)\s*[A-Za-z_]\w*|\s*\[[\w\s.+\-*>]*\])*")


def object_expression(arg: str) -> str | None:
    """The object an argument points to, as an expression: `&q->mut` ->
    `q->mut`, `lk` -> `*lk`; None for anything computed (`c ? &a : &b`)."""
    arg = " ".join(arg.split())
    if arg.startswith("&") and not arg.startswith("&&"):
        inner = arg[1:].strip()
        if inner.startswith("(") and inner.endswith(")") and PLACE.fullmatch(inner[1:-1].strip()):
            inner = inner[1:-1].strip()
        return inner if PLACE.fullmatch(inner) else None
    return f"*{arg}" if PLACE.fullmatch(arg) else None
