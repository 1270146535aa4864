"""det: deterministic record/replay for multithreaded C/C++ programs.

This package (store/det) is the trace store and what every tool shares:
the trace's schema, reading, validation and seal, names and symbols, paths,
launching a program, the native library. The tools are its subpackages,
each in a folder of its own (setup.cfg's package_dir): det.record
(recording and detrec/dethunt/detrun), det.hunt (hunting engines),
det.compare (diff, bisect, detdiff), det.replay (detreplay), det.tui
(dettui), det.dap (det-dap), det.check (detcheck). They import det; det imports
none of them.

The modules of this package that gdb's Python loads (trace, schema, events,
analysis, symbols, errors) import only the standard library.
"""

__version__ = "0.1.0"
