/*
 * preload/rawsys.c - syscall(): the same calls by number as the wrappers;
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
		NAME(epoll_wait) NAME(epoll_pwait) NAME(ppoll) NAME(pselect6) NAME(select)
		NAME(preadv2) NAME(accept) NAME(accept4) NAME(fork) NAME(vfork) NAME(clone) NAME(clone3)
		NAME(execve) NAME(execveat) NAME(rt_sigaction)
#undef NAME
	}
	return "?";
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
	case SYS_io_uring_setup:
	case SYS_io_uring_enter:
	case SYS_io_submit:
	case SYS_io_getevents:
	case SYS_epoll_wait:
	case SYS_epoll_pwait:
	case SYS_ppoll:
	case SYS_pselect6:
	case SYS_select:
	case SYS_accept:
	case SYS_accept4:
	case SYS_execve:
	case SYS_execveat:
	case SYS_rt_sigaction:
	unsupported:
		if (det_enter())
			det_fatal("syscall(%s) is not supported by det: its result would not replay (use the libc "
				  "function, which det records)",
				  syscall_name(nr));
		break;
	}
	long r;
	if (det_pids_syscall(nr, a, &r)) /* a process or thread id in or out (pids.c) */
		return r;
	return real.syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
