/*
 * replayer/turns_futex.c - the default enforcement backend: turnstiles on
 * futex words in the shared region (replayer/turns.h).
 *
 * Rules of this file:
 *  - A thread's progress is its slot's `done` counter, which enforce.c
 *    advances; the backend trusts it as the turn counter.
 *  - A thread sleeps on its own slot's `sleeping` word; a finished event
 *    wakes only the threads listed in its wake[] entries, and only those
 *    that sleep.
 *  - Works across processes: the region is shared, the futexes are not
 *    private.
 */
#include "turns.h"

#include <linux/futex.h>
#include <sys/syscall.h>

static long futex(_Atomic uint32_t *addr, int op, uint32_t val)
{
	return det_sys(SYS_futex, (long)addr, op, val, 0, 0, 0);
}

static void futex_thread_attach(struct det_thread *t)
{
	(void)t;
}

static uint64_t futex_done_count(uint32_t num)
{
	return atomic_load_explicit(&det_shm_slot(det_hdr, num)->done, memory_order_acquire);
}

static void futex_sleep(struct det_thread *t, const struct det_sched *e)
{
	struct det_slot *me = t->slot;
	for (int i = 0; i < 2; i++) {
		if (!e->dep_thread[i])
			continue;
		struct det_slot *d = det_shm_slot(det_hdr, e->dep_thread[i] - 1);
		for (;;) {
			/* Dekker with futex_done: sleeping is set before done is
			 * read again, done is set before sleeping is read. */
			atomic_store(&me->sleeping, 1);
			if (atomic_load(&d->done) > e->dep_idx[i])
				break;
			futex(&me->sleeping, FUTEX_WAIT, 1);
		}
		atomic_store(&me->sleeping, 0);
	}
}

static void futex_done(struct det_thread *t, const struct det_sched *e)
{
	(void)t;
	for (int i = 0; i < 2; i++) {
		uint32_t w = e->wake[i];
		if (!w)
			continue;
		struct det_slot *s = det_shm_slot(det_hdr, w - 1);
		if (atomic_load(&s->sleeping) && atomic_exchange(&s->sleeping, 0))
			futex(&s->sleeping, FUTEX_WAKE, 1);
	}
}

static void futex_reset(void)
{
	for (uint32_t i = 0; i < det_hdr->threads_recorded; i++)
		atomic_store(&det_shm_slot(det_hdr, i)->sleeping, 0);
}

const struct det_turns det_turns_futex = {
	.name = "futex",
	.thread_attach = futex_thread_attach,
	.done_count = futex_done_count,
	.sleep = futex_sleep,
	.done = futex_done,
	.reset = futex_reset,
};
