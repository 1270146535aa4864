/*
 * preload/wait.c - the wait family: which child, and how it ended, are
 * inputs.
 *
 * Rules of this file:
 *  - Those of preload/process.c, which holds what the program's processes
 *    share (preload/process.h); this file is one of their calls, split out
 *    of it.
 */
#include "process.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))


/* ------------------------------------------------------------------ */
/* wait: which child, and how it ended, are inputs; replay reaps the
 * recorded child for real (it replays too) and returns what was recorded */

struct wait_data {
	int32_t status;
	int32_t has_rusage;
	struct rusage ru;
};

/* The child `pid` ended with `status`. Returns its recorded pid if the
 * image it last exec'd never took its thread on (never started det's
 * runtime) and yet exited by itself, else 0: see unattached_stop. */
static pid_t note_status(pid_t pid, int status)
{
	if (status < 0 || (!WIFEXITED(status) && !WIFSIGNALED(status)))
		return 0;
	pid_t lost = 0;
	for (uint32_t i = 0; i < nprocs(); i++) {
		struct det_proc *p = proc_at(i);
		if (atomic_load(&p->pid) == pid) {
			atomic_store(&p->status, status);
			atomic_store(&p->status_known, 1);
			/* (one killed by a signal may simply have died before the
			 * loader got to det: a parent's kill -9 replays the same) */
			if (atomic_exchange(&p->state, DET_PS_GONE) == DET_PS_EXEC && WIFEXITED(status))
				lost = p->rec_pid;
		}
	}
	return lost;
}

/* A waitid's report of a child that ended (and was reaped): its wait
 * status for note_status; -1 (neither exited nor signaled) otherwise. */
static int reaped_status(const siginfo_t *si, int options)
{
	if (!si->si_pid || (options & WNOWAIT))
		return -1;
	if (si->si_code == CLD_EXITED)
		return W_EXITCODE(si->si_status, 0);
	return si->si_code == CLD_KILLED || si->si_code == CLD_DUMPED ? si->si_status : -1;
}

/* After the wait event that reaped it (so that a replay stops at the same
 * wait): what the image did is not in the trace. recorder/det_record/engine.py
 * says the same of one nobody reaped. */
static void unattached_stop(pid_t lost)
{
	if (lost)
		det_fatal("process %d exec'd a program that never started det's runtime (its loader ignored "
			  "LD_PRELOAD, or failed): what it did is not in the trace",
			  lost);
}

/* Reap `pid` (a recorded pid) for real in replay; note_status's result. */
static pid_t reap_real(struct det_op *op, idtype_t type, pid_t rec_pid, int options)
{
	pid_t pid = det_pid_to_real(rec_pid), lost = 0;
	long r;
	do {
		if (type == P_PID) {
			int st;
			r = det_sys(SYS_wait4, pid, (long)&st, options & ~WNOHANG, 0, 0, 0);
			if (r > 0)
				lost = note_status(pid, st);
		} else {
			siginfo_t si;
			memset(&si, 0, sizeof(si));
			r = det_sys(SYS_waitid, P_PID, pid, (long)&si, options & ~WNOHANG, 0, 0);
			if (r == 0)
				lost = note_status(pid, reaped_status(&si, options));
		}
	} while (r == -EINTR);
	if (r < 0)
		det_ops.diverge(op->t, DET_DIV_RESULT, op->kind, NULL, op->ra,
			    "a child the recording waited for is not there to wait for");
	return lost;
}

static pid_t det_wait4(struct det_thread *t, pid_t pid, int *status, int options, struct rusage *ru, uint64_t ra)
{
	struct det_op op = {0};
	struct wait_data d = {0};
	if (!det_input_begin(&op, t, DET_EV_PROC_WAIT, (uint32_t)options, ra)) {
		long r;
		do
			r = BLOCKING(&op, det_sys(SYS_wait4, pid, (long)&d.status, options, ru ? (long)&d.ru : 0, 0, 0));
		while (r == -EINTR && !t->nsigs);
		d.has_rusage = ru != NULL;
		pid_t lost = r > 0 ? note_status((pid_t)r, d.status) : 0;
		det_input_end(&op, r, r > 0 ? &d : NULL, r > 0 ? sizeof(d) : 0);
		unattached_stop(lost);
		if (r < 0) {
			errno = (int)-r;
			return -1;
		}
		if (status)
			*status = d.status;
		if (ru)
			*ru = d.ru;
		return (pid_t)r;
	}
	int64_t r = op.rec->result;
	pid_t lost = 0;
	det_stops_send(t); /* (a stop it made, which this wait may see) */
	if (r > 0) {
		if (op.rec->data_len == sizeof(d))
			memcpy(&d, det_replay_data(op.rec), sizeof(d));
		if (WIFEXITED(d.status) || WIFSIGNALED(d.status) || !(options & WNOWAIT))
			lost = reap_real(&op, P_PID, (pid_t)r, options);
	}
	det_input_end(&op, r, NULL, 0);
	unattached_stop(lost);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	if (r > 0 && status)
		*status = d.status;
	if (r > 0 && ru)
		*ru = d.ru;
	return (pid_t)r;
}

#define DET_WAIT_CALL(pid, status, options, ru, pass)                                              \
	do {                                                                                       \
		DET_ENTER(t);                                                                      \
		if (!t)                                                                            \
			return pass;                                                               \
		pid_t r = det_wait4(t, pid, status, options, ru, DET_RA());                        \
		int e = errno;                                                                     \
		det_leave(t);                                                                      \
		errno = e;                                                                         \
		return r;                                                                          \
	} while (0)

DET_IMPL pid_t det_impl_wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
	DET_WAIT_CALL(pid, status, options, ru, (pid_t)syscall(SYS_wait4, pid, status, options, ru));
}

DET_IMPL pid_t det_impl_waitpid(pid_t pid, int *status, int options)
{
	DET_WAIT_CALL(pid, status, options, NULL, (pid_t)syscall(SYS_wait4, pid, status, options, NULL));
}

DET_IMPL pid_t det_impl_wait(int *status)
{
	DET_WAIT_CALL(-1, status, 0, NULL, (pid_t)syscall(SYS_wait4, -1, status, 0, NULL));
}

DET_IMPL pid_t det_impl_wait3(int *status, int options, struct rusage *ru)
{
	DET_WAIT_CALL(-1, status, options, ru, (pid_t)syscall(SYS_wait4, -1, status, options, ru));
}

DET_IMPL int det_impl_waitid(idtype_t type, id_t id, siginfo_t *info, int options)
{
	DET_ENTER(t);
	if (!t)
		return (int)syscall(SYS_waitid, type, id, info, options, NULL);
	struct det_op op = {0};
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	int64_t r;
	if (!det_input_begin(&op, t, DET_EV_PROC_WAIT, (uint32_t)options | DET_AUX_PROC_WAIT_WAITID, DET_RA())) {
		do
			r = BLOCKING(&op, det_sys(SYS_waitid, type, id, (long)&si, options, 0, 0));
		while (r == -EINTR && !t->nsigs);
		pid_t lost = r == 0 ? note_status(si.si_pid, reaped_status(&si, options)) : 0;
		det_input_end(&op, r, r == 0 ? &si : NULL, r == 0 ? sizeof(si) : 0);
		unattached_stop(lost);
	} else {
		r = op.rec->result;
		pid_t lost = 0;
		det_stops_send(t);
		if (r == 0 && op.rec->data_len == sizeof(si)) {
			memcpy(&si, det_replay_data(op.rec), sizeof(si));
			if (si.si_pid)
				lost = reap_real(&op, P_ALL, si.si_pid, options);
		}
		det_input_end(&op, r, NULL, 0);
		unattached_stop(lost);
	}
	if (r == 0 && info)
		*info = si;
	det_leave(t);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return 0;
}
