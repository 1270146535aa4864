"""det.hunt: hunting engines, run one program many times and merge what the runs say.

Rules of this package: hunt is the loop, its report and LocalEngine;
cluster is DaskEngine. Neither records anything itself: how one seed is
run, fetched and dropped is handed in by the caller (det.record.seeds), so
this package never imports det.record, and hunt never imports cluster
(the dethunt command chooses the engine).
"""
