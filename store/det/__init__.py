"""det: deterministic record/replay for multithreaded C/C++ programs.

The modules of this package that gdb's Python loads (trace, schema, events,
analysis, symbols, errors) import only the standard library.
"""

__version__ = "0.1.0"
