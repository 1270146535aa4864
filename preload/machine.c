/*
 * preload/machine.c - identity and machine: process ids, the CPU count
 * and memory, resource use, pending signals, sched_yield.
 *
 * Rules of this file:
 *  - Those of preload/inputs.c, which holds what every input wrapper shares
 *    (preload/inputs.h): this file is one source of inputs, split out of it.
 */
#include "inputs.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <sys/signalfd.h>
#include <sys/inotify.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* identity and machine */

static int64_t simple_input(uint16_t kind, uint32_t aux, int64_t (*get)(uint32_t), uint64_t ra, int *passed)
{
	DET_ENTER(t);
	if (!t) {
		*passed = 1;
		return 0;
	}
	*passed = 0;
	struct det_op op = {0};
	int64_t res = det_input_begin(&op, t, kind, aux, ra) ? op.rec->result : get(aux);
	det_input_end(&op, res, NULL, 0);
	det_leave(t);
	return res;
}

static int64_t get_pid(uint32_t a)
{
	(void)a;
	return real.getpid();
}

static int64_t get_ppid(uint32_t a)
{
	(void)a;
	return real.getppid();
}

static int64_t get_cpu(uint32_t a)
{
	(void)a;
	int r = real.sched_getcpu();
	return r < 0 ? -(int64_t)errno : r;
}

static int64_t get_tid(uint32_t a)
{
	(void)a;
	return real.gettid();
}

static int64_t get_sysconf(uint32_t a)
{
	return real.sysconf((int)a);
}

/* Names above any _SC_* value stand for the get_* functions. */
enum { NAME_NPROCS = 100000, NAME_NPROCS_CONF, NAME_PHYS_PAGES, NAME_AVPHYS_PAGES };

static int64_t get_nprocs_of(uint32_t a)
{
	switch (a) {
	case NAME_NPROCS:
		return real.get_nprocs();
	case NAME_NPROCS_CONF:
		return real.get_nprocs_conf();
	case NAME_PHYS_PAGES:
		return real.get_phys_pages();
	default:
		return real.get_avphys_pages();
	}
}

static int64_t do_yield(uint32_t a)
{
	(void)a;
	return real.sched_yield() ? -(int64_t)errno : 0;
}

DET_IMPL pid_t det_impl_getpid(void)
{
	int passed;
	int64_t r = simple_input(DET_EV_GETPID, 0, get_pid, DET_RA(), &passed);
	return passed ? real.getpid() : (pid_t)r;
}

DET_IMPL pid_t det_impl_getppid(void)
{
	int passed;
	int64_t r = simple_input(DET_EV_GETPPID, 0, get_ppid, DET_RA(), &passed);
	if (passed)
		return real.getppid();
	det_pid_note_parent((pid_t)r); /* kill(getppid()) reaches it (pids.c) */
	return (pid_t)r;
}

DET_IMPL pid_t det_impl_gettid(void)
{
	int passed;
	int64_t r = simple_input(DET_EV_GETTID, 0, get_tid, DET_RA(), &passed);
	return passed ? real.gettid() : (pid_t)r;
}

/* Every name: most are constants, but some (free memory, processors
 * online) change from run to run and steer programs (sort's buffer size). */
DET_IMPL long det_impl_sysconf(int name)
{
	det_init();
	int passed;
	int64_t r = simple_input(DET_EV_SYSCONF, (uint32_t)name, get_sysconf, DET_RA(), &passed);
	return passed ? real.sysconf(name) : (long)r;
}

DET_IMPL int det_impl_get_nprocs(void)
{
	int passed;
	int64_t r = simple_input(DET_EV_SYSCONF, NAME_NPROCS, get_nprocs_of, DET_RA(), &passed);
	return passed ? real.get_nprocs() : (int)r;
}

DET_IMPL int det_impl_get_nprocs_conf(void)
{
	int passed;
	int64_t r = simple_input(DET_EV_SYSCONF, NAME_NPROCS_CONF, get_nprocs_of, DET_RA(), &passed);
	return passed ? real.get_nprocs_conf() : (int)r;
}

DET_IMPL long det_impl_get_phys_pages(void)
{
	int passed;
	int64_t r = simple_input(DET_EV_SYSCONF, NAME_PHYS_PAGES, get_nprocs_of, DET_RA(), &passed);
	return passed ? real.get_phys_pages() : (long)r;
}

DET_IMPL long det_impl_get_avphys_pages(void)
{
	int passed;
	int64_t r = simple_input(DET_EV_SYSCONF, NAME_AVPHYS_PAGES, get_nprocs_of, DET_RA(), &passed);
	return passed ? real.get_avphys_pages() : (long)r;
}

/* A call that fills len bytes at ptr: its result and those bytes are the input. */
#define BYTES_INPUT(kind, aux, ptr, len, call, ok)                                \
	do {                                                                      \
		DET_ENTER(t);                                                     \
		if (!t)                                                           \
			return call;                                              \
		struct det_op op = {0};                                           \
		int64_t res;                                                      \
		if (det_input_begin(&op, t, kind, aux, DET_RA())) {               \
			res = op.rec->result;                                     \
			if (ok && op.rec->data_len == (len))                      \
				memcpy(ptr, det_replay_data(op.rec), (len));      \
			det_input_end(&op, res, NULL, 0);                         \
		} else {                                                          \
			res = call;                                               \
			res = res == -1 ? -(int64_t)errno : res;                  \
			det_input_end(&op, res, ptr, ok ? (uint32_t)(len) : 0);   \
		}                                                                 \
		det_leave(t);                                                     \
		return ret_of(res);                                               \
	} while (0)

/* A call that fills one struct. */
#define STRUCT_INPUT(kind, aux, ptr, call, ok) BYTES_INPUT(kind, aux, ptr, sizeof(*(ptr)), call, ok)

DET_IMPL int det_impl_sysinfo(struct sysinfo *info)
{
	STRUCT_INPUT(DET_EV_SYSINFO, 0, info, real.sysinfo(info), res == 0);
}

DET_IMPL int det_impl_sched_getcpu(void)
{
	int passed;
	int64_t r = simple_input(DET_EV_GETCPU, 0, get_cpu, DET_RA(), &passed);
	return passed ? real.sched_getcpu() : (int)ret_of(r);
}

DET_IMPL int det_impl_getrusage(int who, struct rusage *usage)
{
	STRUCT_INPUT(DET_EV_RUSAGE, (uint32_t)who, usage, real.getrusage(who, usage), res == 0 && usage);
}

DET_IMPL clock_t det_impl_times(struct tms *buf)
{
	STRUCT_INPUT(DET_EV_TIMES, 0, buf, real.times(buf), res >= 0 && buf);
}

/* A blocked signal waits in the kernel while recording; replay delivers
 * the recorded ones itself and has none there, so the set is an input. */
DET_IMPL int det_impl_sigpending(sigset_t *set)
{
	STRUCT_INPUT(DET_EV_SIGPENDING, 0, set, real.sigpending(set), res == 0);
}

/* What the scheduler says about a process: the machine's CPUs and policy,
 * or a process outside the program that is gone by replay; ids made live
 * as in pids.c. */
enum { SQ_SCHEDULER, SQ_PARAM, SQ_AFFINITY, SQ_RR_INTERVAL };

DET_IMPL int det_impl_sched_getscheduler(pid_t pid)
{
	char none;
	BYTES_INPUT(DET_EV_SCHED_QUERY, SQ_SCHEDULER, &none, 0, real.sched_getscheduler(det_pid_to_real(pid)), 0);
}

DET_IMPL int det_impl_sched_getparam(pid_t pid, struct sched_param *param)
{
	STRUCT_INPUT(DET_EV_SCHED_QUERY, SQ_PARAM, param, real.sched_getparam(det_pid_to_real(pid), param), res == 0);
}

DET_IMPL int det_impl_sched_getaffinity(pid_t pid, size_t n, cpu_set_t *set)
{
	BYTES_INPUT(DET_EV_SCHED_QUERY, SQ_AFFINITY, set, n, real.sched_getaffinity(det_pid_to_real(pid), n, set),
		    res == 0);
}

DET_IMPL int det_impl_sched_rr_get_interval(pid_t pid, struct timespec *interval)
{
	STRUCT_INPUT(DET_EV_SCHED_QUERY, SQ_RR_INTERVAL, interval,
		     real.sched_rr_get_interval(det_pid_to_real(pid), interval), res == 0);
}

DET_IMPL int det_impl_sched_yield(void)
{
	struct det_thread *t = det_replaying() ? det_enter() : NULL;
	if (t) {
		int event = det_ops.replay_polled(t, DET_EV_SCHED_YIELD);
		det_leave(t);
		if (!event)
			return real.sched_yield();
	}
	int passed;
	int64_t r = simple_input(DET_EV_SCHED_YIELD, 0, do_yield, DET_RA(), &passed);
	return passed ? real.sched_yield() : (int)ret_of(r);
}
