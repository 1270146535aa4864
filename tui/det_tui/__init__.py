"""dettui: det's terminal UI (Textual), installed as `det.tui`.

Rules of this package: it reads traces only through det.trace.Trace,
compares with det.compare.diff, bisects with det.compare.bisect and steps replays with
det's gdb commands; it holds no second implementation of any of them.
One module per job: model (what a trace says, read by window), timeline,
eventlist and details (the widgets), trace_screen, diff_screen and live
(the three modes), dialogs, messages, app (arguments and the App).
"""
