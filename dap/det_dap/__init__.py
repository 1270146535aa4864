"""det.dap: `det-dap`, a Debug Adapter Protocol server on stdio for det's
replays (det.gdbmi's `detreplay --gdb` session), so editors (VS Code,
nvim-dap, ...) step, step back and move through a trace's events.

It imports det (the store) and det.tui.model (the trace's names and source
lines, as dettui shows them); nothing imports it.
"""
