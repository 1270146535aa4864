"""det.check: what det can reproduce in a binary, and in which mode
(`detcheck PROG`), read from the file alone: how it is linked, the
instructions in its own code det does not see (raw system calls, atomics
outside det-cc, rdrand...), the calls det refuses, a verdict per mode.

Rules of this package:
  - It reads files only: no program is run, nothing is written but its
    cache (det.check.quick, for detrec).
  - elf.py and quick.py are standard library only (detrec imports quick at
    every start); capstone and pyelftools are imported by scan.py and
    lines.py, when a full scan is asked for.
  - It uses det (store/) and nothing else of det's: detrec (recorder/)
    uses it.
"""
