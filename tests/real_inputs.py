"""tests/real_inputs.py - the inputs of tests/e2e/test_real_programs.py,
also recorded by bench/pack_sizes.py: one definition, so the benchmark measures
what the tests replay. Standard library only."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

THREADS_PY = Path(__file__).parent / "programs" / "threads.py"


def write_big_text(path: Path, size: int = 50_000_000) -> None:
    """About `size` bytes of compressible text: lines of 12 words drawn from
    5000 made-up ones, the same for every call."""
    rng = random.Random(7)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
             for _ in range(5000)]
    with open(path, "w") as f:
        n = 0
        while n < size:
            line = " ".join(rng.choice(words) for _ in range(12)) + "\n"
            f.write(line)
            n += len(line)


def write_threads_py(path: Path) -> None:
    shutil.copyfile(THREADS_PY, path)
