/*
 * preload/fork.c - fork and vfork, and the raw clones det can follow as a
 * fork.
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
/* fork */

/* Fill the new process's entry and its first thread's slot. */
static void prepare_child(struct det_thread *t, uint32_t idx, uint32_t child, struct det_op *op)
{
	struct det_proc *p = proc_at(idx);
	p->parent = det_proc + 1;
	p->first_thread = child;
	p->create_seq = op->seq;
	p->execs = 0;
	atomic_store(&p->spawn_claim, 0);
	atomic_store(&p->exec_thread, 0);
	atomic_store(&p->status_known, 0);
	atomic_store(&p->pid, 0);
	atomic_store(&p->state, DET_PS_RESERVED);
	struct det_slot *cs = det_shm_slot(det_hdr, child);
	cs->parent = t->num;
	cs->create_seq = op->seq;
	cs->proc = idx;
	cs->obj = op->obj;
	atomic_store(&cs->state, DET_TS_STARTING);
}

/* Take the creating event's place and the child's numbers. Returns nonzero
 * in replay when the recording's call failed (result in op->rec). */
int begin_create(struct det_thread *t, struct det_op *op, uint16_t kind, uint64_t ra, uint32_t *child,
		 uint32_t *idx)
{
	op->t = t;
	op->kind = kind;
	op->ra = ra;
	if (det_replaying()) {
		op->id = UINT32_MAX;
		op->rec = det_ops.replay_begin(op, NULL, DET_OBJ_THREAD);
		if (op->rec->result < 0)
			return 1;
		*child = op->rec->aux;
		if (*child >= det_hdr->threads_recorded)
			det_ops.diverge(t, DET_DIV_THREAD, kind, NULL, ra, "a process that the recording does not have");
		*idx = det_shm_slot(det_hdr, *child)->proc;
	} else {
		*child = det_ops.rec_new_thread(op);
		if (*child >= det_hdr->max_threads)
			det_fatal("too many threads: T%u (this run allows %u, detrec --max-threads raises it)", *child,
				  det_hdr->max_threads);
		*idx = atomic_fetch_add(&det_hdr->next_proc, 1);
		if (*idx >= det_hdr->max_procs)
			det_fatal("too many processes: %u (this run allows %u, detrec --max-threads raises it)", *idx + 1,
				  det_hdr->max_procs);
		/* (a fork's child becomes runnable once it exists: its parent's
		 * at-fork handlers may give the turn away first) */
		if (det_strict && kind != DET_EV_PROC_FORK)
			det_ops.strict_created(*child);
	}
	prepare_child(t, *idx, *child, op);
	return 0;
}

/* The creating call returned `res` (the child's real pid, or -error);
 * ended: replay has ended its event already (fork_with_handlers). */
pid_t end_create(struct det_op *op, uint32_t idx, int64_t res, int ended)
{
	struct det_proc *p = proc_at(idx);
	if (res > 0) {
		atomic_store(&p->pid, (int32_t)res);
		if (!det_replaying())
			p->rec_pid = (int32_t)res;
	} else {
		atomic_store(&p->state, DET_PS_GONE);
	}
	if (!det_replaying()) {
		det_ops.rec_end(op, res);
		return (pid_t)res;
	}
	if ((res > 0) != (op->rec->result > 0))
		det_ops.diverge(op->t, DET_DIV_RESULT, op->kind, NULL, op->ra,
			    res > 0 ? "a process start that failed in the recording worked"
				    : "a process start that worked in the recording failed");
	if (!ended)
		det_ops.replay_end(op, op->rec->result);
	return (pid_t)op->rec->result;
}

int det_in_forked_child(const struct det_thread *t)
{
	return det_sys(SYS_getpid, 0, 0, 0, 0, 0, 0) != t->fork_parent;
}

/* libc's fork, whose at-fork handlers the program registered run inside
 * it: a prepare handler that locks a mutex another thread holds waits for
 * that thread, which in strict mode needs the turn this thread holds (it
 * waited for ever). Their calls are events in the parent, after the fork's
 * own, which replay ends first so that they can take their turns; the
 * child's handlers run before det starts the child and pass through. */
static pid_t fork_with_handlers(struct det_thread *t, struct det_op *op)
{
	if (det_replaying())
		det_ops.replay_end(op, op->rec->result);
	t->fork_parent = (int32_t)det_sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	t->depth = 0;
	pid_t pid = real.fork();
	int e = errno;
	t->depth = 1;
	t->fork_parent = 0;
	errno = e;
	return pid;
}

/* exit_signal: the signal the parent gets when the child ends. SIGCHLD is
 * libc's fork (its at-fork handlers and locks, as a fork has them); another
 * (a raw clone's, waited for with __WCLONE) is the kernel's clone with that
 * signal and nothing else, as glibc's clone() does it. */
static pid_t det_fork(struct det_thread *t, uint64_t ra, int exit_signal)
{
	struct det_op op = {0};
	uint32_t child = 0, idx = 0;
	if (begin_create(t, &op, DET_EV_PROC_FORK, ra, &child, &idx)) {
		int64_t r = op.rec->result;
		det_ops.replay_end(&op, r);
		errno = (int)-r;
		return -1;
	}
	pid_t pid = exit_signal == SIGCHLD ? fork_with_handlers(t, &op)
					   : (pid_t)det_sys(SYS_clone, exit_signal, 0, 0, 0, 0, 0);
	if (pid < 0 && exit_signal != SIGCHLD) {
		errno = -pid;
		pid = -1;
	}
	if (pid == 0) {
		start_process(t, idx, child, ra);
		return 0;
	}
	int e = errno;
	if (pid > 0 && det_strict && !det_replaying())
		det_ops.strict_created(child);
	pid_t r = end_create(&op, idx, pid > 0 ? pid : -(int64_t)e, exit_signal == SIGCHLD);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

static pid_t fork_from(uint64_t ra)
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.fork();
	pid_t r = det_fork(t, ra, SIGCHLD);
	int e = errno;
	det_leave(&det_tls);
	errno = e;
	return r;
}

DET_IMPL pid_t det_impl_fork(void)
{
	return fork_from(DET_RA());
}

/* A vfork child may only exec or _exit, which a forked child does as well;
 * sharing memory with the parent would share det's state too. */
DET_IMPL pid_t det_impl_vfork(void)
{
	return fork_from(DET_RA());
}

/* ------------------------------------------------------------------ */
/* raw clone */

/* glibc's own threads and spawns call the kernel themselves
 * (__clone_internal), so these see the program's calls only. A task that
 * shares the caller's memory would share its det state too (its TLS, its
 * event ring): det stops the program at the call rather than record a
 * thread it cannot tell apart. A fork-like clone (no sharing, any exit
 * signal) is det's fork. */
DET_IMPL long det_impl_det_clone(const struct det_clone_call *c, uint64_t ra)
{
	struct det_thread *t = det_enter();
	if (!t)
		return c->fn ? real.clone(c->fn, c->stack, (int)(c->flags | c->exit_signal), c->arg, c->ptid, c->tls,
					  c->ctid)
			     : real.syscall(c->nr, c->args[0], c->args[1], c->args[2], c->args[3], c->args[4], c->args[5]);
	unsigned long long flags = c->flags | c->exit_signal;
	if (c->flags & CLONE_VM)
		det_fatal("raw %s thread in " DET_CODE_AT " (CLONE_VM, flags %#llx): det records threads made with "
			  "pthread_create only",
			  c->call, (unsigned long long)ra, flags);
	if ((c->flags & ~(uint64_t)CLONE_VFORK) || c->exit_signal >= _NSIG || !c->plain)
		det_fatal("raw %s in " DET_CODE_AT " (flags %#llx): det follows a raw clone only when it is a plain "
			  "fork (an exit signal, no other flag or argument)",
			  c->call, (unsigned long long)ra, flags);
	pid_t r = det_fork(t, ra, (int)c->exit_signal);
	int e = errno;
	det_leave(&det_tls);
	errno = e;
	return r;
}

/* The child of a fork-like clone runs fn on the stack it is on rather than
 * the one given (its memory is a copy either way), and ends with _exit,
 * which det records (glibc's ends the calling thread only: the same in a
 * child that made no thread). */
EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
	if (!fn || !stack) { /* (glibc's check, before any system call) */
		errno = EINVAL;
		return -1;
	}
	va_list ap;
	va_start(ap, arg);
	struct det_clone_call c = {
		.call = "clone()",
		.flags = (uint32_t)flags & ~(uint32_t)CSIGNAL,
		.exit_signal = (uint32_t)flags & CSIGNAL,
		.plain = 1,
		.fn = fn,
		.stack = stack,
		.arg = arg,
		/* (read whether passed or not, as glibc's clone reads them) */
		.ptid = va_arg(ap, pid_t *),
		.tls = va_arg(ap, void *),
		.ctid = va_arg(ap, pid_t *),
	};
	va_end(ap);
	long r = det_clone(&c, DET_RA());
	if (r == 0)
		_exit(fn(arg));
	return (int)r;
}

long det_clone_syscall(long nr, const long a[6], const char *call, uint64_t ra)
{
	struct det_clone_call c = {.call = call, .exit_signal = SIGCHLD, .plain = 1, .nr = nr, .args = a};
	if (nr == SYS_clone) { /* x86-64: flags, stack, parent_tid, child_tid, tls */
		c.flags = (uint64_t)a[0] & ~(uint64_t)CSIGNAL;
		c.exit_signal = (uint64_t)a[0] & CSIGNAL;
		c.plain = a[1] == 0;
	} else if (nr == SYS_clone3) {
		const struct clone_args *ca = (const struct clone_args *)a[0];
		uint64_t size = (uint64_t)a[1];
		if (!ca || size < CLONE_ARGS_SIZE_VER0)
			return real.syscall(nr, a[0], a[1], 0, 0, 0, 0); /* EINVAL or EFAULT: no task */
		c.flags = ca->flags;
		c.exit_signal = ca->exit_signal;
		c.plain = size <= sizeof(*ca) && !ca->stack && !ca->stack_size && !ca->tls &&
			  (size <= CLONE_ARGS_SIZE_VER0 || (!ca->set_tid && !ca->set_tid_size)) &&
			  (size <= CLONE_ARGS_SIZE_VER1 || !ca->cgroup);
	}
	return det_clone(&c, ra);
}
