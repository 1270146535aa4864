"""det.compare: comparing traces: diff (where two runs part), difftext (its
words), bisect (the event that decides) and cli (the detdiff command).

Rules of this package: it reads traces through det (the store) only; the
TUI and detdiff import it; diff and difftext import only the standard
library and det's stdlib-only modules (gdb's Python may load them).
"""
