"""Constants Python shares with det's C code: GENERATED from include/det/shm.h,
include/det/sup.h, include/det/cc.h and include/det/rawsys_refused.def by
tools/gen_events.py. Do not edit; `make check` fails when this copy is stale."""

from __future__ import annotations

# #defines of include/det/cc.h
DET_ATOMIC_TRAPPED = 1 << 30

# #defines of include/det/shm.h
DET_SHM_ENV = "_DET_SHM"
DET_SYSCALL_SITES_ENV = "_DET_SYSCALL_SITES"
DET_F_RELAXED = 0x1
DET_F_STDIN_FED = 0x2
DET_F_TS_NS = 0x4
DET_F_STRICT = 0x8
DET_F_LOGICAL = 0x10
DET_F_CC_POINTS = 0x20
DET_F_NOTRACE = 0x40
DET_F_ALL_ORDERED = 0x80
DET_F_HOLD_FAULTS = 0x100
DET_SIG_BEFORE = 0x10000
DET_SIG_UNANCHORED = 0x20000
DET_SIG_IN_WAIT = 0x40000
DET_SIG_AT_CALL = 0x80000
DET_SIG_NUMBER = 0xffff
DET_RESULT_PENDING = -9223372036854775808
DET_FILE_OPENED = 1
DET_FILE_LOADED = 2
DET_FILE_EXEC = 3
DET_FILE_CUT = 0x100
DET_FILLED_BITS = 40
DET_EXIT_STOPPED = 125

# #defines of include/det/sup.h
DET_MARK_WINDOW = 1024

# enum det_thread_state (include/det/shm.h)
THREAD_STATES: dict[int, str] = {
    0: 'free',
    1: 'starting',
    2: 'running',
    3: 'exiting',
    4: 'parked',
}

# enum det_proc_state (include/det/shm.h)
PROC_STATES: dict[int, str] = {
    0: 'free',
    1: 'reserved',
    2: 'running',
    3: 'exec',
    4: 'gone',
}

# enum det_convert_sql (include/det/sup.h)
CONVERT_SQL_ORDER: tuple[str, ...] = (
    'CALL',
    'SITE',
    'OBJECT',
    'FIRST_EVENT',
    'EVENTS',
    'EVENT_ROW',
    'DATA',
    'MARK',
    'THREAD',
    'PROCESS',
    'MODULE',
    'RESULT',
    'META',
    'SCHED_ROWS',
    'SCHED_CLEAR',
    'SCHED_CHUNK',
    'SCHED_META',
    'INDEXES',
)

# enum det_sched_sql (include/det/sup.h)
SCHED_SQL_ORDER: tuple[str, ...] = (
    'ROWS',
    'CLEAR',
    'CHUNK',
    'META',
)

# syscall(SYS_x) that stops the program (include/det/rawsys_refused.def)
RAWSYS_REFUSED: frozenset[str] = frozenset({
    'io_uring_setup',
    'io_uring_enter',
    'io_submit',
    'io_getevents',
})
