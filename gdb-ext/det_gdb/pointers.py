"""Names for objects with no symbol (on the heap): the expression that reaches
one from the program's static data, one pointer away (det.names asks it
through ObjectNames.live while a replay runs).

Rules of this file:
  - As every det_gdb module: no inferior function calls (memory reads and
    gdb expressions only), standard library only.
"""

from __future__ import annotations

import gdb

from det_gdb import session as S

MAX_POINTEE = 4096   # a pointer at most this far below an object may point to the struct holding it
MAX_SCANNED = 1 << 20  # bytes of the program's static data read to find pointers


def pointer_expression(addr: int, kind: str) -> str | None:
    """The expression that reaches an object with no symbol (on the heap)
    from the program's static data, one pointer away: `q->lock`, `*p`,
    `pools[1]->locks[2]`; None if no static pointer leads to it, or the
    nearest one points to a block the object is not inside by the pointer's
    type (`(char *)scratch+64` named a freed queue's mutex by the block
    malloc handed out again)."""
    s = S.SESSION
    if s is None or not s.alive():
        return None
    names = s.model.names
    exe = s.cfg.get("binary", "")
    try:
        base = names.sym.bases[names.sym.paths.index(exe)]
    except ValueError:
        return None
    ds = names.data_symbols(exe)
    inf = gdb.selected_inferior()
    best: tuple[int, str, int] | None = None
    scanned = 0
    for start, end, name in zip(ds.starts, ds.ends, ds.names, strict=True):
        size = end - start
        if size < 8 or scanned + size > MAX_SCANNED:
            continue
        try:
            mem = bytes(inf.read_memory(base + start, size))
        except (gdb.error, gdb.MemoryError):
            continue
        scanned += size
        for off in range(0, size - 7, 8):
            p = int.from_bytes(mem[off:off + 8], "little")
            if p <= addr < p + MAX_POINTEE and (best is None or addr - p < best[0]):
                best = (addr - p, name, off)
    if best is None:
        return None
    delta, name, off = best
    try:
        holder = gdb.parse_and_eval(name)
        ptr = lvalue_path(holder.type, off, name)
        if ptr is None:
            return None
        target = gdb.parse_and_eval(ptr).type.strip_typedefs()
        if target.code != gdb.TYPE_CODE_PTR:
            return None
        pointee = target.target()
        if delta >= max(pointee.strip_typedefs().sizeof, 1):
            return None  # beyond what the pointer points to (a freed block, its memory another's): no name
        if delta == 0 and pointee.strip_typedefs().code != gdb.TYPE_CODE_STRUCT:
            return f"*{ptr}"
        inner = lvalue_path(pointee, delta, "")
    except gdb.error:
        return None
    if inner is None:
        return f"*{ptr}" if delta == 0 else f"(char *){ptr}+{delta}"
    if not inner:
        return f"*{ptr}"
    return f"{ptr}->{inner[1:]}" if inner.startswith(".") else f"(*{ptr}){inner}"


def lvalue_path(t: gdb.Type, off: int, prefix: str) -> str | None:
    """The C expression for the object at byte `off` inside an object of type
    t named prefix (`pool.jobs[2]`), down to a pthread type or a scalar."""
    t = t.strip_typedefs()
    if off == 0 and (t.code not in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_ARRAY)
                     or (t.name or "").startswith(("pthread_", "__pthread"))):
        return prefix
    if t.code == gdb.TYPE_CODE_ARRAY:
        elem = t.target()
        n = elem.sizeof
        if n <= 0:
            return None
        return lvalue_path(elem, off % n, f"{prefix}[{off // n}]")
    if t.code == gdb.TYPE_CODE_STRUCT:
        for f in t.fields():
            if f.bitpos is None or f.name is None:
                continue
            fo = f.bitpos // 8
            if fo <= off < fo + max(f.type.sizeof, 1):
                return lvalue_path(f.type, off - fo, f"{prefix}.{f.name}")
        return None
    return prefix if off == 0 else None
