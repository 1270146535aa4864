/*
 * preload/rawsys.c - syscall(): the same calls by number as the wrappers
 * (reads, writes, readiness waits, accept, exec, signals sent and handled);
 * inputs det cannot replay stop the program here; calls that take process
 * or thread ids translate them as their wrappers do (preload/pids.c).
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
#include <sys/epoll.h>
#include <sys/select.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------ */
/* syscall(): the same calls by number; inputs det cannot replay stop here */

static const char *syscall_name(long nr)
{
	switch (nr) {
#define NAME(x)                                                                                    \
	case SYS_##x:                                                                              \
		return "SYS_" #x;
		NAME(io_uring_setup) NAME(io_uring_enter) NAME(io_submit) NAME(io_getevents)
		NAME(preadv2) NAME(fork) NAME(vfork) NAME(clone) NAME(clone3)
#undef NAME
	}
	return "?";
}

/* rt_sigaction by number: the kernel's struct sigaction (x86-64), through
 * det's sigaction, which keeps the program's handler and puts det's entry
 * in its place; the old one comes back with the kernel's restorer. */
struct ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	unsigned long mask;
};

#define K_SA_RESTORER 0x04000000ul

static long raw_sigaction(int sig, const struct ksigaction *act, struct ksigaction *old, size_t masklen)
{
	if (masklen != sizeof(act->mask))
		return real.syscall(SYS_rt_sigaction, sig, act, old, masklen); /* (EINVAL) */
	struct sigaction lact, lold;
	memset(&lact, 0, sizeof(lact));
	if (act) {
		lact.sa_handler = (sighandler_t)act->handler;
		lact.sa_flags = (int)(act->flags & ~K_SA_RESTORER);
		memcpy(&lact.sa_mask, &act->mask, sizeof(act->mask));
	}
	struct ksigaction kold;
	if (old && real.syscall(SYS_rt_sigaction, sig, NULL, &kold, masklen) != 0)
		return -1;
	if (sigaction(sig, act ? &lact : NULL, old ? &lold : NULL) != 0)
		return -1;
	if (old) {
		old->handler = (void *)lold.sa_handler;
		old->flags = (unsigned long)(unsigned)lold.sa_flags | (kold.flags & K_SA_RESTORER);
		old->restorer = kold.restorer;
		memcpy(&old->mask, &lold.sa_mask, sizeof(old->mask));
	}
	return 0;
}

EXPORT long syscall(long nr, ...)
{
	va_list ap;
	long a[6];
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	det_init();
	if (!det_mode)
		return real.syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	switch (nr) {
	case SYS_gettid:
		return gettid();
	case SYS_getpid:
		return getpid();
	case SYS_getppid:
		return getppid();
	case SYS_getrandom:
		return getrandom((void *)a[0], (size_t)a[1], (unsigned)a[2]);
	case SYS_clock_gettime:
		return clock_gettime((clockid_t)a[0], (struct timespec *)a[1]);
	case SYS_gettimeofday:
		return gettimeofday((struct timeval *)a[0], (void *)a[1]);
	case SYS_time:
		return time((time_t *)a[0]);
	case SYS_read:
		return read((int)a[0], (void *)a[1], (size_t)a[2]);
	case SYS_pread64:
		return pread((int)a[0], (void *)a[1], (size_t)a[2], (off_t)a[3]);
	case SYS_readv:
		return readv((int)a[0], (const struct iovec *)a[1], (int)a[2]);
	case SYS_recvfrom:
		return recvfrom((int)a[0], (void *)a[1], (size_t)a[2], (int)a[3], (struct sockaddr *)a[4],
				(socklen_t *)a[5]);
	case SYS_recvmsg:
		return recvmsg((int)a[0], (struct msghdr *)a[1], (int)a[2]);
	case SYS_recvmmsg:
		return recvmmsg((int)a[0], (struct mmsghdr *)a[1], (unsigned)a[2], (int)a[3], (struct timespec *)a[4]);
	case SYS_preadv:
		return preadv((int)a[0], (const struct iovec *)a[1], (int)a[2], (off_t)a[3]);
	case SYS_preadv2: /* without flags (RWF_NOWAIT...), preadv; at offset -1, readv */
		if (a[5] != 0)
			goto unsupported;
		return a[3] == -1 ? readv((int)a[0], (const struct iovec *)a[1], (int)a[2])
				  : preadv((int)a[0], (const struct iovec *)a[1], (int)a[2], (off_t)a[3]);
	case SYS_pwritev2: /* (the kernel's offset is split in two longs: a[3] low, a[4] high) */
		return pwritev2((int)a[0], (const struct iovec *)a[1], (int)a[2], (off_t)a[3], (int)a[5]);
	case SYS_epoll_pwait2:
		return epoll_pwait2((int)a[0], (struct epoll_event *)a[1], (int)a[2], (const struct timespec *)a[3],
				    (const sigset_t *)a[4]);
	case SYS_write:
		return write((int)a[0], (const void *)a[1], (size_t)a[2]);
	case SYS_writev:
		return writev((int)a[0], (const struct iovec *)a[1], (int)a[2]);
	case SYS_sendto:
		return sendto((int)a[0], (const void *)a[1], (size_t)a[2], (int)a[3], (const struct sockaddr *)a[4],
			      (socklen_t)a[5]);
	case SYS_sendmsg:
		return sendmsg((int)a[0], (const struct msghdr *)a[1], (int)a[2]);
	case SYS_sendmmsg:
		return sendmmsg((int)a[0], (struct mmsghdr *)a[1], (unsigned)a[2], (int)a[3]);
	case SYS_poll:
		return poll((struct pollfd *)a[0], (nfds_t)a[1], (int)a[2]);
	case SYS_sched_yield:
		return sched_yield();
	case SYS_nanosleep:
		return nanosleep((const struct timespec *)a[0], (struct timespec *)a[1]);
	case SYS_close:
		return close((int)a[0]);
	case SYS_kill: /* a signal sent to the program's own process or thread is an event (signals.c) */
		return kill((pid_t)a[0], (int)a[1]);
	case SYS_tgkill:
		return tgkill((pid_t)a[0], (pid_t)a[1], (int)a[2]);
	case SYS_tkill:
		return det_tkill_live(det_pid_to_real((pid_t)a[0]), (int)a[1], DET_RA());
	case SYS_rt_sigqueueinfo:
	case SYS_rt_tgsigqueueinfo: {
		int tg = nr == SYS_rt_tgsigqueueinfo;
		const siginfo_t *info = (const siginfo_t *)a[2 + tg];
		if (!info)
			break; /* (EFAULT from the kernel) */
		return det_sigqueueinfo_live(det_pid_to_real((pid_t)a[0]), tg ? det_pid_to_real((pid_t)a[1]) : 0,
					     (int)a[1 + tg], info, DET_RA());
	}
	case SYS_fork:
	case SYS_vfork:
	case SYS_clone:
	case SYS_clone3: {
		char call[40];
		snprintf(call, sizeof(call), "syscall(%s)", syscall_name(nr));
		return det_clone_syscall(nr, a, call, DET_RA());
	}
	case SYS_accept:
		return accept((int)a[0], (struct sockaddr *)a[1], (socklen_t *)a[2]);
	case SYS_accept4:
		return accept4((int)a[0], (struct sockaddr *)a[1], (socklen_t *)a[2], (int)a[3]);
	case SYS_select:
		return select((int)a[0], (fd_set *)a[1], (fd_set *)a[2], (fd_set *)a[3], (struct timeval *)a[4]);
	case SYS_pselect6: { /* the sixth argument: {const sigset_t *, size_t} */
		const struct {
			const sigset_t *set;
			size_t len;
		} *mask = (const void *)a[5];
		return pselect((int)a[0], (fd_set *)a[1], (fd_set *)a[2], (fd_set *)a[3], (const struct timespec *)a[4],
			       mask ? mask->set : NULL);
	}
	case SYS_ppoll:
		return ppoll((struct pollfd *)a[0], (nfds_t)a[1], (const struct timespec *)a[2], (const sigset_t *)a[3]);
	case SYS_epoll_wait:
		return epoll_wait((int)a[0], (struct epoll_event *)a[1], (int)a[2], (int)a[3]);
	case SYS_epoll_pwait:
		return epoll_pwait((int)a[0], (struct epoll_event *)a[1], (int)a[2], (int)a[3], (const sigset_t *)a[4]);
	case SYS_execve:
		return execve((const char *)a[0], (char *const *)a[1], (char *const *)a[2]);
	case SYS_execveat:
		return execveat((int)a[0], (const char *)a[1], (char *const *)a[2], (char *const *)a[3], (int)a[4]);
	case SYS_futex:
		return det_futex_syscall(a, DET_RA());
	case SYS_rt_sigaction:
		return raw_sigaction((int)a[0], (const struct ksigaction *)a[1], (struct ksigaction *)a[2], (size_t)a[3]);
#define DET_RAWSYS_REFUSED(name) case SYS_##name:
#include "det/rawsys_refused.def"
#undef DET_RAWSYS_REFUSED
	unsupported:
		if (det_enter())
			det_fatal("syscall(%s) is not supported by det: Linux AIO and io_uring complete I/O in "
				  "the kernel, out of det's sight, so their results would not replay (det records "
				  "read, write, their p and v forms, poll and epoll)",
				  syscall_name(nr));
		break;
	}
	long r;
	if (det_pids_syscall(nr, a, &r)) /* a process or thread id in or out (pids.c) */
		return r;
	r = real.syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (r == -1 && errno == EINTR) { /* a handler interrupted it: it has run when the call returns */
		det_signals_at_call();
		errno = EINTR;
	}
	return r;
}
