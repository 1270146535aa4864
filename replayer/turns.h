/*
 * replayer/turns.h - replay's enforcement interface: wait for my turn,
 * I am done, wake whom that allows.
 *
 * Rules of this file:
 *  - replayer/enforce.c decides *what* a thread waits for (the event's
 *    prerequisites, struct det_sched.dep_*) and checks the program did the
 *    recorded thing; a backend only decides *how* to wait and wake.
 *  - A backend is one file, replayer/turns_<name>.c, plus its line in
 *    include/det/turns.def; enforce.c picks it by the shared header's
 *    `turns` field. No backend-specific branch lives anywhere else in the
 *    runtime.
 *  - done_count() is the backend's own record of progress, read without a
 *    system call; enforce.c calls wait() only for an event whose
 *    prerequisites it found not done, and the backend decides how long to
 *    spin before it sleeps.
 */
#ifndef DET_TURNS_H
#define DET_TURNS_H

#include "runtime.h"

struct det_turns {
	const char *name;
	/* A thread starts or resumes (after exec) replaying, t->idx set. */
	void (*thread_attach)(struct det_thread *t);
	/* Events thread `num` has done, as far as this backend knows: at
	 * least every event that some other thread waits for. */
	uint64_t (*done_count)(uint32_t num);
	/* Block until every prerequisite of e (t's next event, t->idx) is done. */
	void (*wait)(struct det_thread *t, const struct det_sched *e);
	/* The same for at most about `ns` (a pipe read that drains its pipe
	 * while it waits looks at the pipe again then); NULL: the caller naps. */
	void (*wait_for)(struct det_thread *t, const struct det_sched *e, long ns);
	/* t has done e (t->idx is past it): record that and wake the threads
	 * e names in wake[] whose turn it now is. */
	void (*done)(struct det_thread *t, const struct det_sched *e);
	/* The program starts again (gdb): forget the previous run. */
	void (*reset)(void);
};

#define DET_TURNS(name, number, description) extern DET_HIDDEN const struct det_turns det_turns_##name;
#include "det/turns.def"
#undef DET_TURNS

#endif /* DET_TURNS_H */
