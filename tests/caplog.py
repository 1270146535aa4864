"""tests/caplog.py - capture logs (recorder/logfmt.h, docs/TRACE_FORMAT.md)
taken apart and put back together, for tests that damage or craft them
(tests/e2e/test_bad_logs.py, tests/fuzz/fuzz_logs.py).

Rules of this file:
  - Written from docs/TRACE_FORMAT.md, not from det's code: the checksum is
    computed here independently (CRC-32C by table, in four lanes), so a log
    put back together checks only if both agree.
  - A chunk keeps its own header fields; write() recomputes a chunk's
    checksum only when asked (fix=True), so damage can be made either way.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

HEADER_BYTES = 64
CHUNK_HEADER = struct.Struct("<4I")  # type, bytes, check, thread
REC = struct.Struct("<QQIIIHH")  # struct det_rec: seq, ra/result/ts, obj, aux, dts, kind, flags
META, RING, THREAD, PROCS, MODULES, CLOCK, END = range(1, 8)


def _crc_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    return table


_CRC = _crc_table()


def _step(c: int, word: int) -> int:
    """SSE4.2's crc32 of a 64-bit word (CRC-32C, no inversions)."""
    c &= 0xFFFFFFFF
    for i in range(8):
        c = _CRC[(c ^ (word >> (8 * i))) & 0xFF] ^ (c >> 8)
    return c


def checksum(payload: bytes, type_: int, nbytes: int) -> int:
    """A chunk's `check`: four lanes seeded with type, bytes and two
    constants, folded."""
    words = struct.unpack_from(f"<{len(payload) // 8}Q", payload)
    lanes = [type_, nbytes, 0x9E3779B9, 0x85EBCA6B]
    whole = len(words) // 4 * 4
    for i in range(0, whole, 4):
        for k in range(4):
            lanes[k] = _step(lanes[k], words[i + k])
    for w in words[whole:]:
        lanes[0] = _step(lanes[0], w)
    h = _step(lanes[0], lanes[1])
    h = _step(h, lanes[2])
    return _step(h, lanes[3])


@dataclass
class Chunk:
    type: int
    bytes: int
    check: int
    thread: int
    payload: bytes

    def fixed(self) -> Chunk:
        """The same chunk with its length and checksum made right for its payload."""
        return Chunk(self.type, len(self.payload), checksum(self.payload, self.type, len(self.payload)),
                     self.thread, self.payload)


def chunk(type_: int, payload: bytes, thread: int = 0) -> Chunk:
    """A good chunk: the payload padded to 8 bytes, its checksum right."""
    payload += b"\0" * (-len(payload) % 8)
    return Chunk(type_, 0, 0, thread, payload).fixed()


def read(path: Path) -> tuple[bytes, list[Chunk], bytes]:
    """(header, whole chunks, what follows them) of a log."""
    data = path.read_bytes()
    off, chunks = HEADER_BYTES, []
    while off + CHUNK_HEADER.size <= len(data):
        t, n, check, thread = CHUNK_HEADER.unpack_from(data, off)
        if off + CHUNK_HEADER.size + n > len(data):
            break
        chunks.append(Chunk(t, n, check, thread, data[off + CHUNK_HEADER.size:off + CHUNK_HEADER.size + n]))
        off += CHUNK_HEADER.size + n
    return data[:HEADER_BYTES], chunks, data[off:]


def write(path: Path, header: bytes, chunks: list[Chunk], tail: bytes = b"") -> None:
    with open(path, "wb") as f:
        f.write(header)
        for c in chunks:
            f.write(CHUNK_HEADER.pack(c.type, c.bytes, c.check, c.thread))
            f.write(c.payload)
        f.write(tail)
