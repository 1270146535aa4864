/*
 * replayer/enforce.h - replay's enforcement of the recorded order (replayer/enforce.c).
 *
 * Rules of this file:
 *  - Its own folder's files call these directly; preload/ and the other
 *    modes reach them through det_ops (preload/mode.h), which the table at
 *    the end of replayer/enforce.c fills.
 */
#ifndef DET_ENFORCE_H
#define DET_ENFORCE_H

#include "runtime.h"

/* Wait until the thread's next recorded event is due and check that it is
 * this one (kind, object, aux object). Diverges (does not return) when not. */
DET_HIDDEN const struct det_sched *det_replay_begin(struct det_op *op, const void *addr,
						    enum det_objkind objkind);
DET_HIDDEN void det_replay_end(struct det_op *op, int64_t result);
/* Inputs: check that the next recorded event is this input (kind, aux). */
DET_HIDDEN const struct det_sched *det_replay_input(struct det_op *op);
/* An ordered or relaxed replay that no debugger steps (not strict, no gdb). */
DET_HIDDEN int det_replay_free_running(void);
/* Replay: is this sched_yield or sleep (kind) an event (the recording made
 * one here), or one a polling loop makes more often than recorded? */
DET_HIDDEN int det_replay_polled(struct det_thread *t, uint16_t kind);
/* Replay: the canceler's pthread_cancel of thread object obj (th) was
 * replayed; a cancellation det did not see is sent for real (shm.h
 * DET_CANCEL_*). */
DET_HIDDEN void det_replay_cancel_request(uint32_t obj, pthread_t th);
/* Replay: the thread unwinds from such a request: its THREAD_CANCELED, if
 * next, is done (1). */
DET_HIDDEN int det_replay_canceled(struct det_thread *t);
/* Replay: the kind of t's next recorded event as an event of this kind would
 * meet it, for a call that decides by it (is this thread the initializer?):
 * recorded signals due first are delivered and a parallel recording's leftover
 * yields skipped, as det_replay_begin does. 0 past the recording's end. */
DET_HIDDEN uint16_t det_replay_next_kind(struct det_thread *t, uint16_t kind);
DET_HIDDEN void det_replay_take_block(struct det_thread *t);
/* An input that may act before its turn: t's next event when it is this
 * input and still waits for its turn in a free-running ordered replay (no
 * gdb, not strict); NULL otherwise. det_replay_wait_due waits for that turn,
 * at most about `ns`, and says whether it came. */
DET_HIDDEN const struct det_sched *det_replay_pending(struct det_thread *t, uint16_t kind, uint32_t aux);
DET_HIDDEN int det_replay_wait_due(struct det_thread *t, const struct det_sched *e, long ns);
/* How many events thread `num` (of any of the program's processes) has done. */
DET_HIDDEN uint64_t det_replay_done_count(uint32_t num);
DET_HIDDEN uint64_t det_replay_next_seq(uint32_t num);
DET_HIDDEN __attribute__((noreturn)) void det_diverge(struct det_thread *t, uint32_t reason,
						     uint16_t got_kind, const void *got_addr,
						     uint64_t ra, const char *what);
DET_HIDDEN void det_replay_attach(struct det_thread *t);
/* Replay: the thread goes on from t->idx (after attach, or in an exec'd image). */
DET_HIDDEN void det_replay_resume(struct det_thread *t);
/* Replay: the program starts (again, under gdb): forget the last run. */
DET_HIDDEN void det_replay_reset(void);
/* Replay: the process is ending; let its other threads finish their events. */
DET_HIDDEN void det_replay_before_exit(void);

/* Replay: the recording's call never came back; neither does this one. */
DET_HIDDEN __attribute__((noreturn)) void det_replay_vanish(struct det_op *op);
/* Replay: t's next event is its THREAD_CANCELED: take its turn and end the
 * thread as the cancellation did (cleanup handlers, then its exit). */
DET_HIDDEN __attribute__((noreturn)) void det_replay_cancel(struct det_thread *t);
/* Replay: is t's next event a THREAD_CANCELED? */
DET_HIDDEN int det_replay_cancel_next(struct det_thread *t);
/* Replay: thread t's recorded event idx (< sched_count), from its window
 * of the schedule; waits in the rare case the feeder has not written it
 * yet (replayer/schedule.c). */
DET_HIDDEN void det_sched_wait(struct det_thread *t, uint64_t idx);
/* Has the feeder written t's entry idx (t->sched_known refreshed)? */
DET_HIDDEN int det_sched_known(struct det_thread *t, uint64_t idx);

#endif /* DET_ENFORCE_H */
