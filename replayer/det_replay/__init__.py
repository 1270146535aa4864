"""det.replay: re-run a recorded program under the recorded schedule.

    detreplay [--relaxed] [--force] [--gdb [-g N]] TRACE

Rules: the replay uses the recording's argv, environment, working directory
and binary, with ASLR off; it stops at the first divergence with one line
naming the event, and exits 125; otherwise it exits with the program's
status (as a shell reports it) after checking the outcome against the
recording. verify is that replay as a verdict, for detrec and dethunt
(whose entry points it holds).
"""
