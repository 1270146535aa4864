/*
 * replayer/turns_kmod.c - the enforcement backend that hands turns through
 * det's kernel module, /dev/detsched (kmod/detsched.c; the ABI and its
 * model are in include/det/detsched.h).
 *
 * Rules of this file:
 *  - The module holds the schedule (loaded by detreplay, replayer/sup_turns.c)
 *    and the only done counters this backend trusts; they are mapped
 *    read-only, so checking whether a turn is due costs no system call.
 *  - A thread enters the kernel only to sleep (WAIT) and to finish an event
 *    another thread waits for (DONE, when the event has wake[] entries);
 *    the module checks each finished event was due and wakes exactly the
 *    threads whose turn it now is. Events nobody waits for are marked done
 *    by the thread's next WAIT or DONE.
 *  - Every process image opens its own descriptor (attached by the id and
 *    key in the shared header), moved far above the program's descriptors,
 *    and maps the counters at a fixed address below the shared region, so
 *    the program's own descriptors and mappings are where they were when
 *    recorded. A forked child shares its parent's until it execs.
 *  - Any refusal by the module stops the program with a message naming
 *    the thread, the event and the reason.
 */
#include "turns.h"
#include "det/detsched.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#define WAIT_SLICE_NS (250ull * 1000 * 1000) /* a waiter wakes this often (a stall is detreplay's call) */
#define SPIN_ROUNDS 400 /* pauses before a waiter enters the module */

static int kmod_fd = -1;
static const _Atomic uint64_t *kmod_done;
static _Atomic int kmod_state; /* 0: not open in this image, 1: opening, 2: ready */

static long ioc(unsigned long cmd, void *arg)
{
	return det_sys(SYS_ioctl, kmod_fd, (long)cmd, (long)arg, 0, 0, 0);
}

static __attribute__((noreturn)) void refused(const char *what, long err, const struct det_thread *t)
{
	const char *why = strerror((int)-err);
	if (err == -EOWNERDEAD)
		why = "the schedule is gone (detreplay ended or was killed)";
	else if (err == -EPERM)
		why = "an event was done out of turn";
	else if (err == -EBADF)
		why = "the program closed det's descriptor";
	if (t)
		det_fatal("%s refused %s for T%u at its event %lu: %s", DETSCHED_DEVICE, what, t->num,
			  (unsigned long)t->idx, why);
	det_fatal("%s refused %s: %s", DETSCHED_DEVICE, what, why);
}

/* Open, attach and map, once per process image. */
static void kmod_open(void)
{
	int expected = 0;
	if (!atomic_compare_exchange_strong(&kmod_state, &expected, 1)) {
		while (atomic_load(&kmod_state) != 2)
			__builtin_ia32_pause();
		return;
	}
	long fd = det_sys(SYS_openat, AT_FDCWD, (long)DETSCHED_DEVICE, O_RDWR | O_CLOEXEC, 0, 0, 0);
	if (fd < 0)
		refused("to open", fd, NULL);
	struct rlimit rl;
	long floor = 256;
	if (det_sys(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, (long)&rl, 0, 0) == 0 && rl.rlim_cur > 64 &&
	    rl.rlim_cur < (1u << 20))
		floor = (long)rl.rlim_cur - 32;
	long high = det_sys(SYS_fcntl, fd, F_DUPFD_CLOEXEC, floor, 0, 0, 0);
	det_sys(SYS_close, fd, 0, 0, 0, 0, 0);
	if (high < 0)
		refused("a descriptor out of the program's way", high, NULL);
	kmod_fd = (int)high;
	struct detsched_attach a = {.id = det_hdr->turns_arg[0], .key = det_hdr->turns_arg[1]};
	long r = ioc(DETSCHED_IOC_ATTACH, &a);
	if (r < 0)
		refused("to attach to the replay's schedule", r, NULL);
	if (a.nthreads != det_hdr->threads_recorded)
		det_fatal("%s holds a schedule of %u threads, the trace has %u", DETSCHED_DEVICE, a.nthreads,
			  det_hdr->threads_recorded);
	size_t len = ((size_t)a.nthreads * sizeof(uint64_t) + 4095) & ~(size_t)4095;
	void *want = (void *)(DET_SHM_ADDR - len);
	long p = det_sys(SYS_mmap, (long)want, (long)len, PROT_READ, MAP_SHARED | MAP_FIXED_NOREPLACE, kmod_fd, 0);
	if (p != (long)want)
		refused("to map its turn counters", p < 0 ? p : -EEXIST, NULL);
	kmod_done = (const _Atomic uint64_t *)want;
	atomic_store(&kmod_state, 2);
}

static void kmod_thread_attach(struct det_thread *t)
{
	kmod_open();
	struct detsched_register r = {.thread = t->num};
	long e = ioc(DETSCHED_IOC_REGISTER, &r);
	if (e < 0)
		refused("to register the thread", e, t);
}

static uint64_t kmod_done_count(uint32_t num)
{
	return atomic_load_explicit(&kmod_done[num], memory_order_acquire);
}

static int kmod_due(const struct det_sched *e)
{
	for (int i = 0; i < 2; i++)
		if (e->dep_thread[i] && kmod_done_count(e->dep_thread[i] - 1) <= e->dep_idx[i])
			return 0;
	return 1;
}

static void kmod_wait(struct det_thread *t, const struct det_sched *e)
{
	/* the counters move only at events others wait for: spinning on
	 * them costs the thread doing its events nothing */
	for (int i = 0; i < SPIN_ROUNDS; i++) {
		if (kmod_due(e))
			return;
		__builtin_ia32_pause();
	}
	/* the module knows t's event t->idx */
	struct detsched_wait w = {.thread = t->num, .idx = t->idx, .timeout_ns = WAIT_SLICE_NS};
	for (;;) {
		long r = ioc(DETSCHED_IOC_WAIT, &w);
		if (r == 0)
			return;
		if (r != -ETIMEDOUT && r != -EINTR)
			refused("to wait for a turn", r, t);
	}
}

static void kmod_done_event(struct det_thread *t, const struct det_sched *e)
{
	/* enforce.c's done store is ordered before this read, as the feeder
	 * needs (replayer/schedule.c pending()) */
	if (!e->wake[0] && !e->wake[1])
		return; /* nobody waits for it: the next WAIT or DONE says it */
	struct detsched_done d = {.thread = t->num, .idx = t->idx - 1};
	long r = ioc(DETSCHED_IOC_DONE, &d);
	if (r < 0) {
		t->idx--; /* report the event that was refused */
		refused("an event's end", r, t);
	}
}

static void kmod_reset(void)
{
	kmod_open();
	long r = ioc(DETSCHED_IOC_RESET, NULL);
	if (r < 0)
		refused("to start the schedule again", r, NULL);
}

const struct det_turns det_turns_kmod = {
	.name = "kmod",
	.thread_attach = kmod_thread_attach,
	.done_count = kmod_done_count,
	.wait = kmod_wait,
	.done = kmod_done_event,
	.reset = kmod_reset,
};
