/*
 * preload/pids.c - process and thread ids between the program and the
 * kernel. In replay the program sees the recorded ids (getpid, gettid,
 * getppid, fork's and wait's results, si_pid); the kernel knows this run's.
 * Every id the program hands the kernel is made live here, and every id
 * the kernel hands back is made recorded again.
 *
 * Rules of this file:
 *  - One map: the region's process table (rec_pid -> pid) and thread slots
 *    (rec_ktid -> ktid), shared by the whole process tree. The supervisor
 *    fills the recorded ids from the trace before the program starts; each
 *    process and thread writes its live id as it starts. A parent outside
 *    the program joins the map when getppid names it (det_pid_note_parent).
 *    Any other id (another process on the machine) passes unchanged, and
 *    recording changes nothing.
 *  - The calls that take or return ids are wrapped here, at the syscall
 *    boundary, with the libc function's own semantics (real.X); syscall()
 *    by number comes here too (det_pids_syscall). kill, killpg and setpgid
 *    live in process.c and use det_pid_arg_to_live; the wait family
 *    (wait.c) replays recorded results and reaps by det_pid_to_real.
 *  - Nothing here is an event: these calls are outside the recorded order,
 *    as they were before ids were translated; but a ptrace request that
 *    stops a process of the program is a PROC_STOP event (in recording
 *    too), as a SIGSTOP sent to it is (signals.c).
 */
#include "process.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <linux/sockios.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <termios.h>
#include <unistd.h>

static inline int translating(void)
{
	return det_hdr && det_mode == DET_MODE_REPLAY;
}

static uint32_t nslots(void)
{
	uint32_t n = det_hdr->threads_recorded;
	return n < det_hdr->max_threads ? n : det_hdr->max_threads;
}

pid_t det_pid_to_real(pid_t pid)
{
	if (!translating() || pid <= 0)
		return pid;
	for (uint32_t i = 0; i < nprocs(); i++) {
		struct det_proc *p = proc_at(i);
		int32_t live = atomic_load(&p->pid);
		if (p->rec_pid == pid && live)
			return live;
	}
	for (uint32_t i = 0; i < nslots(); i++) {
		struct det_slot *s = det_shm_slot(det_hdr, i);
		if (s->rec_ktid == pid && s->ktid && atomic_load(&s->state) != DET_TS_FREE)
			return s->ktid;
	}
	for (uint32_t i = 0; i < nprocs(); i++) {
		struct det_proc *p = proc_at(i);
		int32_t live = atomic_load(&p->live_ppid);
		if (live && p->rec_ppid == pid)
			return live;
	}
	return pid;
}

int det_pid_of_program(pid_t pid)
{
	if (!det_hdr || pid <= 0)
		return 0;
	for (uint32_t i = 0; i < nprocs(); i++) {
		struct det_proc *p = proc_at(i);
		if (p->rec_pid == pid || atomic_load(&p->pid) == pid)
			return 1;
	}
	/* recording: every thread so far (the clock counts them); replay: the trace's */
	uint32_t n = translating() ? nslots() : det_threads_so_far();
	for (uint32_t i = 0; i < n; i++) {
		struct det_slot *s = det_shm_slot(det_hdr, i);
		if (s->rec_ktid == pid || s->ktid == pid)
			return 1;
	}
	return 0;
}

pid_t det_pid_to_rec(pid_t pid)
{
	if (!translating() || pid <= 0)
		return pid;
	for (uint32_t i = 0; i < nprocs(); i++) {
		struct det_proc *p = proc_at(i);
		if (atomic_load(&p->pid) == pid && p->rec_pid)
			return p->rec_pid;
	}
	for (uint32_t i = 0; i < nslots(); i++) {
		struct det_slot *s = det_shm_slot(det_hdr, i);
		if (s->ktid == pid && s->rec_ktid && atomic_load(&s->state) != DET_TS_FREE)
			return s->rec_ktid;
	}
	for (uint32_t i = 0; i < nprocs(); i++) {
		struct det_proc *p = proc_at(i);
		if (atomic_load(&p->live_ppid) == pid && p->rec_ppid)
			return p->rec_ppid;
	}
	return pid;
}

/* getppid returned the recorded `rec`: a parent outside the program (the
 * top process's: a shell, a service manager) is known from here on as the
 * live one. A parent inside the program is in the table already. */
void det_pid_note_parent(pid_t rec)
{
	if (!translating() || rec <= 0 || det_pid_to_real(rec) != rec)
		return;
	struct det_proc *p = proc_at(det_proc);
	p->rec_ppid = rec;
	atomic_store(&p->live_ppid, (int32_t)det_sys(SYS_getppid, 0, 0, 0, 0, 0, 0));
}

/* A pid argument that may name a process group by its negation (kill,
 * F_SETOWN); 0 and -1 mean the caller's group and everyone. */
pid_t det_pid_arg_to_live(pid_t pid)
{
	if (pid > 0)
		return det_pid_to_real(pid);
	if (pid < -1)
		return -det_pid_to_real(-pid);
	return pid;
}

static pid_t pid_arg_to_rec(pid_t pid)
{
	if (pid > 0)
		return det_pid_to_rec(pid);
	if (pid < -1)
		return -det_pid_to_rec(-pid);
	return pid;
}

/* ------------------------------------------------------------------ */
/* /proc/PID/... and /proc/PID/task/TID/... */

/* An id at *p ending a path component: its value, and *p moved past it;
 * 0 (and *p unmoved) if the component is not a number. */
static pid_t path_id(const char **p)
{
	if (**p < '1' || **p > '9')
		return 0;
	char *end;
	long id = strtol(*p, &end, 10);
	if ((*end != '/' && *end) || id > INT32_MAX)
		return 0;
	*p = end;
	return (pid_t)id;
}

/* path with its /proc ids made live ("/proc/PID/...", "/proc/PID/task/TID/...",
 * "/proc/self/task/TID/..."), written in buf (n bytes); or path itself. */
const char *det_live_path(const char *path, char *buf, size_t n)
{
	if (!translating() || !path || strncmp(path, "/proc/", 6) != 0)
		return path;
	const char *p = path + 6, *name = p;
	pid_t pid = path_id(&p), tid = 0;
	if (!pid && strncmp(p, "self/", 5) == 0)
		p += 4;
	if (pid || p != name) {
		if (strncmp(p, "/task/", 6) == 0) {
			const char *t = p + 6;
			if ((tid = path_id(&t)))
				p = t;
		}
	}
	pid_t live_pid = det_pid_to_real(pid), live_tid = det_pid_to_real(tid);
	if (live_pid == pid && live_tid == tid)
		return path;
	int w = pid ? snprintf(buf, n, "/proc/%d", (int)live_pid) : snprintf(buf, n, "/proc/self");
	if (tid && w >= 0 && (size_t)w < n)
		w += snprintf(buf + w, n - (size_t)w, "/task/%d", (int)live_tid);
	if (w >= 0 && (size_t)w < n)
		w += snprintf(buf + w, n - (size_t)w, "%s", p);
	return w >= 0 && (size_t)w < n ? buf : path;
}

DET_IMPL DIR *det_impl_opendir(const char *path)
{
	det_init();
	char buf[PATH_MAX];
	return real.opendir(det_live_path(path, buf, sizeof(buf)));
}

/* ------------------------------------------------------------------ */
/* fcntl's owners */

static int owner_cmd(int cmd)
{
	return cmd == F_SETOWN || cmd == F_GETOWN || cmd == F_SETOWN_EX || cmd == F_GETOWN_EX;
}

/* fcntl(fd, cmd, arg) for an owner command, by `call` (libc's or the raw
 * syscall), with ids made live going in and recorded coming out. */
static long owner_fcntl(long (*call)(int, int, long), int fd, int cmd, long arg)
{
	switch (cmd) {
	case F_SETOWN:
		return call(fd, cmd, det_pid_arg_to_live((pid_t)arg));
	case F_GETOWN: {
		long r = call(fd, cmd, 0);
		return r == -1 ? r : pid_arg_to_rec((pid_t)r);
	}
	case F_SETOWN_EX: {
		const struct f_owner_ex *want = (const struct f_owner_ex *)arg;
		struct f_owner_ex live = *want;
		live.pid = det_pid_to_real(live.pid);
		return call(fd, cmd, (long)&live);
	}
	default: { /* F_GETOWN_EX */
		long r = call(fd, cmd, arg);
		struct f_owner_ex *got = (struct f_owner_ex *)arg;
		if (r == 0)
			got->pid = det_pid_to_rec(got->pid);
		return r;
	}
	}
}

static long libc_fcntl(int fd, int cmd, long arg)
{
	return real.fcntl(fd, cmd, arg);
}

static long raw_fcntl(int fd, int cmd, long arg)
{
	return real.syscall(SYS_fcntl, fd, cmd, arg, 0, 0, 0);
}

DET_IMPL int det_impl_fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	long arg = va_arg(ap, long); /* every command's argument fits (or is ignored) */
	va_end(ap);
	det_init();
	if (owner_cmd(cmd) && translating())
		return (int)owner_fcntl(libc_fcntl, fd, cmd, arg);
	if (det_mode && det_fcntl_lock_cmd(cmd))
		return (int)ret_of(det_fcntl_lock(fd, cmd, arg, DET_RA()));
	if (cmd == F_GETLK && translating()) { /* the holder's id, as the program knows it */
		struct flock *fl = (struct flock *)arg;
		int r = real.fcntl(fd, cmd, arg);
		if (r == 0 && fl && fl->l_type != F_UNLCK && fl->l_pid > 0)
			fl->l_pid = pid_arg_to_rec(fl->l_pid);
		return r;
	}
	if (det_likely(real.fcntl != NULL))
		return real.fcntl(fd, cmd, arg);
	long r = det_sys(SYS_fcntl, fd, cmd, arg, 0, 0, 0); /* det's own start-up, before libc's is found */
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return (int)r;
}

/* ioctl's owners and terminal groups: FIOSETOWN and SIOCSPGRP are
 * F_SETOWN (a negative id is a group), TIOCSPGRP takes a group; the GET
 * requests hand ids back. */
static int id_ioctl(unsigned long req)
{
	return req == FIOSETOWN || req == SIOCSPGRP || req == TIOCSPGRP || req == FIOGETOWN || req == SIOCGPGRP ||
	       req == TIOCGPGRP || req == TIOCGSID;
}

static long ids_ioctl(long (*call)(int, unsigned long, long), int fd, unsigned long req, long arg)
{
	int *id = (int *)arg;
	if (req == FIOSETOWN || req == SIOCSPGRP || req == TIOCSPGRP) {
		int live = id ? det_pid_arg_to_live(*id) : 0;
		return call(fd, req, id ? (long)&live : arg);
	}
	long r = call(fd, req, arg);
	if (r == 0 && id)
		*id = pid_arg_to_rec(*id);
	return r;
}

static long libc_ioctl(int fd, unsigned long req, long arg)
{
	return real.ioctl(fd, req, arg);
}

static long raw_ioctl(int fd, unsigned long req, long arg)
{
	return real.syscall(SYS_ioctl, fd, req, arg, 0, 0, 0);
}

DET_IMPL int det_impl_ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	va_start(ap, req);
	long arg = va_arg(ap, long);
	va_end(ap);
	det_init();
	if (id_ioctl(req) && translating())
		return (int)ids_ioctl(libc_ioctl, fd, req, arg);
	if (det_mode && det_ioctl_recorded(req))
		return det_ioctl_input(fd, req, (void *)arg, DET_RA());
	if (det_likely(real.ioctl != NULL))
		return real.ioctl(fd, req, arg);
	long r = det_sys(SYS_ioctl, fd, (long)req, arg, 0, 0, 0); /* det's own start-up */
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return (int)r;
}

/* glibc's terminal group calls use its own ioctl, out of det's sight */

DET_IMPL pid_t det_impl_tcgetpgrp(int fd)
{
	det_init();
	return det_pid_to_rec(real.tcgetpgrp(fd));
}

DET_IMPL int det_impl_tcsetpgrp(int fd, pid_t pgrp)
{
	det_init();
	return real.tcsetpgrp(fd, det_pid_to_real(pgrp));
}

DET_IMPL pid_t det_impl_tcgetsid(int fd)
{
	det_init();
	return det_pid_to_rec(real.tcgetsid(fd));
}

/* ------------------------------------------------------------------ */
/* calls that name a process or thread */

DET_IMPL int det_impl_tgkill(pid_t tgid, pid_t tid, int sig)
{
	det_init();
	return det_tgkill_live(det_pid_to_real(tgid), det_pid_to_real(tid), sig, DET_RA());
}

DET_IMPL int det_impl_sigqueue(pid_t pid, int sig, const union sigval value)
{
	det_init();
	return det_sigqueue_live(det_pid_to_real(pid), sig, value, DET_RA());
}

DET_IMPL int det_impl_pidfd_open(pid_t pid, unsigned int flags)
{
	det_init();
	return real.pidfd_open(det_pid_to_real(pid), flags);
}

DET_IMPL int det_impl_sched_setaffinity(pid_t pid, size_t n, const cpu_set_t *set)
{
	det_init();
	return real.sched_setaffinity(det_pid_to_real(pid), n, set);
}

DET_IMPL int det_impl_sched_setparam(pid_t pid, const struct sched_param *param)
{
	det_init();
	return real.sched_setparam(det_pid_to_real(pid), param);
}

DET_IMPL int det_impl_sched_setscheduler(pid_t pid, int policy, const struct sched_param *param)
{
	det_init();
	return real.sched_setscheduler(det_pid_to_real(pid), policy, param);
}

/* getpriority/setpriority: `who` is a pid or a group for PRIO_PROCESS and
 * PRIO_PGRP (0: the caller), a uid for PRIO_USER. */
static id_t prio_who(int which, id_t who)
{
	return which == PRIO_USER ? who : (id_t)det_pid_to_real((pid_t)who);
}

DET_IMPL int det_impl_getpriority(__priority_which_t which, id_t who)
{
	det_init();
	return real.getpriority(which, prio_who(which, who));
}

DET_IMPL int det_impl_setpriority(__priority_which_t which, id_t who, int prio)
{
	det_init();
	return real.setpriority(which, prio_who(which, who), prio);
}

DET_IMPL int det_impl_prlimit(pid_t pid, __rlimit_resource_t res, const struct rlimit *new, struct rlimit *old)
{
	det_init();
	return real.prlimit(det_pid_to_real(pid), res, new, old);
}

DET_IMPL ssize_t det_impl_process_vm_readv(pid_t pid, const struct iovec *local, unsigned long nl,
					   const struct iovec *remote, unsigned long nr, unsigned long flags)
{
	det_init();
	return real.process_vm_readv(det_pid_to_real(pid), local, nl, remote, nr, flags);
}

DET_IMPL ssize_t det_impl_process_vm_writev(pid_t pid, const struct iovec *local, unsigned long nl,
					    const struct iovec *remote, unsigned long nr, unsigned long flags)
{
	det_init();
	return real.process_vm_writev(det_pid_to_real(pid), local, nl, remote, nr, flags);
}

/* ptrace names its tracee by pid; what it reports about other processes
 * (a new child's pid as an event message, a signal's sender) is made
 * recorded again. A request that stops a process of the program takes its
 * place in the order (det_stop_in_order), as a SIGSTOP sent to it does. */
struct ptrace_args {
	long req;
	pid_t pid; /* live */
	void *addr, *data;
	int by_number; /* syscall(SYS_ptrace): PEEK requests store the word at data */
};

static long ptrace_live(void *arg)
{
	const struct ptrace_args *p = arg;
	long r = p->by_number ? real.syscall(SYS_ptrace, p->req, p->pid, (long)p->addr, (long)p->data, 0, 0)
			      : real.ptrace((enum __ptrace_request)p->req, p->pid, p->addr, p->data);
	return r == -1 ? -errno : r;
}

static long ptrace_translated(struct ptrace_args *p, uint64_t ra)
{
	long r;
	if (det_tls.nstops) /* (replay: an attach it made, sent now: see det_stops_send) */
		det_stops_send(&det_tls);
	if ((p->req == PTRACE_ATTACH || p->req == PTRACE_INTERRUPT) && det_pid_of_program(p->pid)) {
		r = det_stop_in_order(DET_AUX_PROC_STOP_PTRACE | (uint32_t)p->req, p->pid, 0, ra, ptrace_live, p);
		if (r < 0) {
			errno = (int)-r;
			return -1;
		}
		return r;
	}
	errno = 0;
	r = p->by_number ? real.syscall(SYS_ptrace, p->req, p->pid, (long)p->addr, (long)p->data, 0, 0)
			 : real.ptrace((enum __ptrace_request)p->req, p->pid, p->addr, p->data);
	if (r == 0 && translating() && p->data) {
		if (p->req == PTRACE_GETEVENTMSG)
			*(unsigned long *)p->data = (unsigned long)pid_arg_to_rec((pid_t) * (unsigned long *)p->data);
		else if (p->req == PTRACE_GETSIGINFO && ((siginfo_t *)p->data)->si_pid > 0)
			((siginfo_t *)p->data)->si_pid = pid_arg_to_rec(((siginfo_t *)p->data)->si_pid);
	}
	return r;
}

DET_IMPL long det_impl_ptrace(enum __ptrace_request req, ...)
{
	va_list ap;
	va_start(ap, req);
	pid_t pid = va_arg(ap, pid_t);
	void *addr = va_arg(ap, void *);
	void *data = va_arg(ap, void *);
	va_end(ap);
	det_init();
	struct ptrace_args p = {req, det_pid_to_real(pid), addr, data, 0};
	return ptrace_translated(&p, DET_RA());
}

/* calls that return a process group or session: the id of a process of
 * the program is its recorded pid */

DET_IMPL pid_t det_impl_getpgid(pid_t pid)
{
	det_init();
	return det_pid_to_rec(real.getpgid(det_pid_to_real(pid)));
}

DET_IMPL pid_t det_impl_getpgrp(void)
{
	det_init();
	return det_pid_to_rec(real.getpgrp());
}

DET_IMPL pid_t det_impl_getsid(pid_t pid)
{
	det_init();
	return det_pid_to_rec(real.getsid(det_pid_to_real(pid)));
}

DET_IMPL pid_t det_impl_setsid(void)
{
	det_init();
	return det_pid_to_rec(real.setsid());
}

/* A socket's peer (SO_PEERCRED): a process of the program is named by its
 * recorded pid. */
void det_peercred_to_rec(int level, int name, void *val, const socklen_t *len)
{
	if (translating() && level == SOL_SOCKET && name == SO_PEERCRED && val && len && *len >= sizeof(struct ucred))
		((struct ucred *)val)->pid = det_pid_to_rec(((struct ucred *)val)->pid);
}

const struct sigevent *det_live_sigevent(const struct sigevent *ev, struct sigevent *copy)
{
	if (!translating() || !ev || !(ev->sigev_notify & SIGEV_THREAD_ID))
		return ev;
	*copy = *ev;
	copy->_sigev_un._tid = det_pid_to_real(ev->_sigev_un._tid);
	return copy;
}

/* ------------------------------------------------------------------ */
/* syscall() by number */

int det_pids_syscall(long nr, const long a[6], long *result)
{
	if (nr == SYS_ptrace && det_hdr) { /* (recording too: a stop is an event) */
		struct ptrace_args p = {a[0], det_pid_to_real((pid_t)a[1]), (void *)a[2], (void *)a[3], 1};
		*result = ptrace_translated(&p, DET_RA());
		return 1;
	}
	if (!translating())
		return 0;
	long b[6];
	memcpy(b, a, sizeof(b));
	int id_result = 0;
	struct sigevent live_ev;
	switch (nr) {
	case SYS_fcntl:
		if (!owner_cmd((int)a[1]))
			return 0;
		*result = owner_fcntl(raw_fcntl, (int)a[0], (int)a[1], a[2]);
		return 1;
	case SYS_kcmp:
		b[0] = det_pid_to_real((pid_t)a[0]);
		b[1] = det_pid_to_real((pid_t)a[1]);
		break;
	case SYS_setpgid:
		b[0] = det_pid_to_real((pid_t)a[0]);
		b[1] = det_pid_to_real((pid_t)a[1]);
		break;
	case SYS_getpgid:
	case SYS_getsid:
		b[0] = det_pid_to_real((pid_t)a[0]);
		id_result = 1;
		break;
	case SYS_getpgrp:
	case SYS_setsid:
	case SYS_set_tid_address: /* (returns the caller's thread id) */
		id_result = 1;
		break;
	case SYS_ioctl:
		if (!id_ioctl((unsigned long)a[1]))
			return 0;
		*result = ids_ioctl(raw_ioctl, (int)a[0], (unsigned long)a[1], a[2]);
		return 1;
	case SYS_getpriority:
	case SYS_setpriority:
		b[1] = (long)prio_who((int)a[0], (id_t)a[1]);
		break;
	case SYS_ioprio_get:
	case SYS_ioprio_set:
		if (a[0] == 1 || a[0] == 2) /* IOPRIO_WHO_PROCESS, IOPRIO_WHO_PGRP */
			b[1] = det_pid_to_real((pid_t)a[1]);
		break;
	case SYS_pidfd_open:
	case SYS_sched_getaffinity:
	case SYS_sched_setaffinity:
	case SYS_sched_getparam:
	case SYS_sched_setparam:
	case SYS_sched_getscheduler:
	case SYS_sched_setscheduler:
	case SYS_sched_rr_get_interval:
	case SYS_sched_getattr:
	case SYS_sched_setattr:
	case SYS_prlimit64:
	case SYS_process_vm_readv:
	case SYS_process_vm_writev:
	case SYS_get_robust_list:
	case SYS_migrate_pages:
	case SYS_move_pages:
		b[0] = det_pid_to_real((pid_t)a[0]);
		break;
	case SYS_perf_event_open:
		b[1] = det_pid_to_real((pid_t)a[1]);
		break;
	case SYS_timer_create:
	case SYS_mq_notify: {
		int at = nr == SYS_timer_create; /* the sigevent's argument */
		const struct sigevent *ev = (const struct sigevent *)a[at];
		if (!ev || !(ev->sigev_notify & SIGEV_THREAD_ID))
			return 0;
		b[at] = (long)det_live_sigevent(ev, &live_ev);
		break;
	}
	case SYS_getsockopt: /* (an input: SO_PEERCRED's pid comes from the trace, a recorded one) */
		*result = getsockopt((int)a[0], (int)a[1], (int)a[2], (void *)a[3], (socklen_t *)a[4]);
		return 1;
	default:
		return 0;
	}
	long r = real.syscall(nr, b[0], b[1], b[2], b[3], b[4], b[5]);
	*result = id_result && r > 0 ? det_pid_to_rec((pid_t)r) : r;
	return 1;
}
