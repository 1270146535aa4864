"""det.record: recording a program, and detrec's, dethunt's and detrun's commands.

Rules of this package: engine records one run (capture, convert, judge) and
is the one recording engine; seeds is one run of a hunt (here or on a
cluster worker) built on it; cli (detrec), huntcli (dethunt) and run
(detrun) are the commands, and detrec's other commands are one module each
(info, salvage, pack, scrub, tracels); verifykept keeps a hunt's failure
once its trace replays it; native binds libdetsup.so's capture
(Recorder). It uses det (the store) and det.hunt (the hunt loop, handed
the run functions of seeds); neither imports it. The replay that verifies a
trace is handed to cli and huntcli by their entry points (det.replay.verify).
"""
