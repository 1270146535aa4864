/*
 * preload/process.c - the program's child processes: fork, vfork,
 * posix_spawn, system, popen, the exec family, the wait family, and the
 * pids that replay translates. The calls live in fork.c, exec.c and wait.c
 * (preload/process.h); this file holds how a process starts and ends and
 * the pids; these rules hold for all of them.
 *
 * Rules of this file:
 *  - Every process of the program maps the same region. Threads are
 *    numbered across all of them and the global order covers them all; a
 *    process is an entry in the region's process table (include/det/shm.h).
 *  - fork is a creating event like pthread_create (aux = the child's first
 *    thread), and the child's first event is its THREAD_START. exec is an
 *    event published before the call; the new image finds its entry by pid
 *    and goes on as the same thread, from the same event index.
 *    posix_spawn starts an image without a fork det could follow: the
 *    parent leaves a claim in its own entry, which the new image takes (it
 *    knows its parent's pid). system and popen are written here over fork
 *    and exec, since the spawn glibc makes inside them is invisible.
 *  - Replay makes real processes too. The pids the program sees are the
 *    recorded ones (fork's result, getpid, wait's result); calls that take
 *    a pid (kill, waitpid...) translate them back through the table
 *    (preload/pids.c holds the map and the other calls that take ids).
 *  - A child det cannot follow (statically linked, set-user-ID, with file
 *    capabilities it would gain, not x86-64, started by a raw clone) stops
 *    the run with a message naming it: a trace without it would not replay.
 *    A raw clone that is a plain fork (any exit signal) is det's fork; one that shares the
 *    program's memory (a thread) stops the run at the call.
 *  - Nothing here runs on a hot path; it may allocate.
 */
#include "process.h"
#include "threads.h"

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

uint32_t det_proc;

extern char **environ;

static int32_t sys_getpid(void)
{
	return (int32_t)det_sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
}

/* Is pid one of the program's processes (in this run)? */
int det_pid_is_program(pid_t pid)
{
	if (!det_hdr || pid <= 0)
		return 0;
	for (uint32_t i = 0; i < nprocs(); i++)
		if (atomic_load(&proc_at(i)->pid) == pid)
			return 1;
	return 0;
}

static void note_exe(struct det_proc *p)
{
	char path[PATH_MAX];
	long n = det_sys(SYS_readlink, (long)"/proc/self/exe", (long)path, sizeof(path) - 1, 0, 0, 0);
	if (n <= 0)
		return;
	path[n] = 0;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	strncpy(p->exe, base, sizeof(p->exe) - 1);
	p->exe[sizeof(p->exe) - 1] = 0;
}

/* ------------------------------------------------------------------ */
/* a process starts */

/* Its first thread's first event, and the thread's handle bound to its
 * object (the handle's address is the parent's: the key tells them apart). */
static void first_event(struct det_thread *t, uint64_t ra)
{
	det_obj_bind((void *)pthread_self(), t->slot->obj, DET_OBJ_THREAD);
	uint32_t depth = t->depth;
	t->depth = 1;
	struct det_op op = {.id = t->slot->obj};
	det_acquire_begin(&op, t, DET_EV_THREAD_START, NULL, DET_OBJ_THREAD, ra);
	det_acquire_end(&op, 0);
	t->depth = depth;
}

void start_process(struct det_thread *t, uint32_t idx, uint32_t num, uint64_t ra)
{
	det_proc = idx;
	struct det_proc *p = proc_at(idx);
	atomic_store(&p->pid, sys_getpid());
	if (det_mode == DET_MODE_RECORD)
		p->rec_pid = p->pid;
	note_exe(p);
	atomic_store(&p->state, DET_PS_RUNNING);
	/* what the parent's thread was doing is not this thread's business */
	t->active = 0;
	t->exited = 0;
	t->holding = 0;
	t->nsigs = 0;
	t->sigs_held = 0;
	t->sig_due = 0;
	t->kick_armed = 0; /* POSIX timers are not inherited */
	t->self_signal = 0;
	t->once_ran = 0;
	det_threads_forked();
	det_thread_attach(t, num);
	first_event(t, ra);
}

/* The new image of a thread that called exec: the same thread, going on. */
static void resume_exec(uint32_t idx, uint32_t num)
{
	struct det_shm_header *h = det_hdr;
	struct det_thread *t = &det_tls;
	struct det_slot *s = det_shm_slot(h, num);
	struct det_proc *p = proc_at(idx);
	det_proc = idx;
	t->num = num;
	t->slot = s;
	t->idx = s->resume_idx;
	s->ktid = (int32_t)det_sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	s->pthread = (uint64_t)pthread_self();
	if (det_mode == DET_MODE_RECORD) {
		t->ring = det_shm_ring(h, s->ring - 1);
		t->ring_entries = h->ring_entries;
		t->head = atomic_load(&s->head);
		t->pos = t->head % t->ring_entries;
		t->tail_seen = atomic_load(&s->tail);
		t->published = t->head;
		t->kick_at = 0;
		if (det_strict || det_chaos)
			t->rng = (h->chaos_seed ^ (0x9E3779B97F4A7C15ull * (num + 1) + s->resume_idx)) | 1;
		if (det_strict && atomic_load(&h->strict_owner) == num + 1) {
			t->holding = 1;
			t->quantum = (int32_t)h->strict_quantum;
		}
	} else {
		t->sched = (const struct det_sched *)((char *)h + s->sched_off);
		t->sched_count = s->sched_count;
		det_ops.replay_resume(t);
	}
	/* the kernel ended the image's other threads */
	uint32_t n = (uint32_t)(atomic_load(&h->clock) >> DET_SEQ_BITS);
	if (det_mode == DET_MODE_REPLAY || n > h->max_threads)
		n = det_mode == DET_MODE_REPLAY ? h->threads_recorded : h->max_threads;
	for (uint32_t i = 0; i < n; i++) {
		struct det_slot *o = det_shm_slot(h, i);
		uint32_t st = atomic_load(&o->state);
		if (i != num && o->proc == idx && (st == DET_TS_RUNNING || st == DET_TS_STARTING)) {
			atomic_store(&o->strict_wants, 0);
			atomic_store(&o->state, DET_TS_EXITING);
		}
	}
	p->execs++;
	note_exe(p);
	atomic_store(&p->exec_thread, 0);
	atomic_store(&p->state, DET_PS_RUNNING);
	det_obj_bind((void *)pthread_self(), s->obj, DET_OBJ_THREAD);
	atomic_store(&s->state, DET_TS_RUNNING);
	t->active = 1;
}

int det_process_attach(void)
{
	struct det_shm_header *h = det_hdr;
	int32_t pid = sys_getpid();
	/* an image one of the program's threads exec'd */
	for (uint32_t i = 0; i < nprocs(); i++) {
		struct det_proc *p = proc_at(i);
		if (atomic_load(&p->state) == DET_PS_EXEC && atomic_load(&p->pid) == pid) {
			resume_exec(i, atomic_load(&p->exec_thread) - 1);
			return 0;
		}
	}
	/* an image posix_spawn started: its parent left a claim */
	int32_t ppid = (int32_t)det_sys(SYS_getppid, 0, 0, 0, 0, 0, 0);
	for (uint32_t i = 0; i < nprocs(); i++) {
		struct det_proc *p = proc_at(i);
		uint64_t claim = atomic_load(&p->spawn_claim);
		if (claim && atomic_load(&p->pid) == ppid &&
		    atomic_compare_exchange_strong(&p->spawn_claim, &claim, 0)) {
			struct det_thread *t = &det_tls;
			t->depth = 1;
			start_process(t, (uint32_t)(claim >> 32) - 1, (uint32_t)claim - 1, 0);
			t->depth = 0;
			return 0;
		}
	}
	/* the program itself (a replay under gdb starts it again and again) */
	uint32_t none = 0;
	if (det_mode == DET_MODE_REPLAY || atomic_compare_exchange_strong(&h->attached, &none, (uint32_t)pid)) {
		if (det_mode == DET_MODE_REPLAY)
			det_ops.replay_reset();
		det_proc = 0;
		struct det_proc *p = proc_at(0);
		atomic_store(&p->pid, pid);
		if (det_mode == DET_MODE_RECORD) {
			p->rec_pid = pid;
			p->create_seq = UINT64_MAX;
			if (atomic_load(&h->next_proc) == 0)
				atomic_store(&h->next_proc, 1);
		}
		note_exe(p);
		atomic_store(&p->state, DET_PS_RUNNING);
		det_note_stdin();
		return 1;
	}
	det_fatal("process %d was started by a call det does not follow (a raw clone, or a spawn inside "
		  "another library): det cannot record it",
		  pid);
}

/* ------------------------------------------------------------------ */
/* pids the program hands back to the kernel */

/*
 * Replay: a signal sent to another of the program's processes (by its
 * recorded pid, or to the group it leads) that the recording shows died of
 * that signal waits until the process has done all its recorded events:
 * in the recording they all came before the signal, but kill is no event,
 * and the inputs before it (a sleep, a wait) do not wait for their turn,
 * so it could come early and leave the target's events undone (a stall).
 * The target, once at its end, dies of the signal by itself too
 * (det_replay_thread_done); the real signal still ends one that computes
 * without events. A signal the target survived is left alone: replay
 * delivers those at their recorded events, and the target may need the
 * sender's later events first.
 */
static void replay_kill_in_turn(pid_t rec_pid, int sig)
{
	if (!det_hdr || det_mode != DET_MODE_REPLAY || rec_pid <= 0 || sig <= 0)
		return;
	uint32_t idx = UINT32_MAX;
	for (uint32_t i = 0; i < nprocs(); i++) {
		struct det_proc *p = proc_at(i);
		if (i != det_proc && p->rec_pid == rec_pid && p->rec_status_known && WIFSIGNALED(p->rec_status) &&
		    WTERMSIG(p->rec_status) == sig)
			idx = i;
	}
	if (idx != UINT32_MAX)
		det_replay_wait_threads_of(idx, UINT32_MAX, 0, UINT64_MAX);
}

static int still_before(uint32_t i, const struct det_slot *s, uint64_t before)
{
	return before == UINT64_MAX ? det_ops.replay_done_count(i) < s->sched_count
				    : det_ops.replay_next_seq(i) < before;
}

/* Threads from 1 to below this number have done all their recorded events
 * (they stay done; the main thread, 0, is looked at each time): each
 * thread's exit scans from here, not from 0, in a program that makes
 * thousands of threads one after another. */
static _Atomic uint32_t all_done_below = 1;

void det_replay_wait_threads_of(uint32_t idx, uint32_t except, int made, uint64_t before)
{
	uint32_t low = atomic_load(&all_done_below), was = low;
	for (uint32_t i = 0; i < det_hdr->threads_recorded; i = i ? i + 1 : low) {
		struct det_slot *s = det_shm_slot(det_hdr, i);
		if (det_ops.replay_done_count(i) >= atomic_load(&s->sched_count)) {
			if (low == i)
				low = i + 1;
			continue;
		}
		uint32_t st = atomic_load(&s->state);
		if (s->proc != idx || i == except || (made && st != DET_TS_RUNNING && st != DET_TS_STARTING))
			continue;
		/* (polled: their events wake only the threads that wait for
		 * them in the order, and this is no event) */
		/* (a thread's exit waits like this for threads a few events
		 * behind, thousands of times in a program that makes a thread
		 * per task: yield first, then nap from 20 us up to 1 ms; a
		 * 1 ms nap from the start made such a relaxed replay 6x slower) */
		for (long round = 0, ns = 20000;
		     still_before(i, s, before) && atomic_load(&proc_at(idx)->state) != DET_PS_GONE; round++) {
			if (round < 8) {
				det_sys(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
				continue;
			}
			struct timespec ts = {0, ns};
			det_sys(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
			if (ns < 1000000)
				ns *= 2;
		}
	}
	while (low > was && !atomic_compare_exchange_weak(&all_done_below, &was, low))
		;
}

DET_IMPL int det_impl_kill(pid_t pid, int sig)
{
	det_init();
	replay_kill_in_turn(pid < -1 ? -pid : pid, sig);
	return det_kill_live(det_pid_arg_to_live(pid), sig, DET_RA());
}

DET_IMPL int det_impl_killpg(pid_t pgrp, int sig)
{
	det_init();
	replay_kill_in_turn(pgrp, sig);
	return real.kill(pgrp > 1 ? -det_pid_to_real(pgrp) : -pgrp, sig);
}

DET_IMPL int det_impl_setpgid(pid_t pid, pid_t pgid)
{
	det_init();
	return (int)real.syscall(SYS_setpgid, det_pid_arg_to_live(pid), det_pid_arg_to_live(pgid));
}

/* A change of user may put the supervisor's descriptor out of reach of
 * the images this process execs: hold the region first (det_region_keep). */
DET_IMPL int det_impl_setuid(uid_t uid)
{
	det_init();
	det_region_keep();
	return real.setuid(uid);
}

DET_IMPL int det_impl_seteuid(uid_t uid)
{
	det_init();
	det_region_keep();
	return real.seteuid(uid);
}

DET_IMPL int det_impl_setreuid(uid_t ruid, uid_t euid)
{
	det_init();
	det_region_keep();
	return real.setreuid(ruid, euid);
}

DET_IMPL int det_impl_setresuid(uid_t ruid, uid_t euid, uid_t suid)
{
	det_init();
	det_region_keep();
	return real.setresuid(ruid, euid, suid);
}

/* ------------------------------------------------------------------ */
/* a process ends */

/* Replay: a thread has done all its recorded events. A child process that
 * a signal killed in the recording (a SIGPIPE from a reader that had
 * gone, a kill) dies of it here, once all its threads are at their end
 * and the rest of the program has made no event for a while
 * (DIE_AFTER_STILL rounds): the events that would have come next never
 * happened. Not at once: the process that kills it may first stop and
 * continue it and wait for each (its waits need it alive), and then send
 * the signal itself. */
#define DIE_AFTER_STILL 15 /* rounds of park's, 20 ms each */

void det_replay_thread_done(struct det_thread *t, unsigned still)
{
	struct det_proc *p = proc_at(det_proc);
	if (det_proc == 0 || still < DIE_AFTER_STILL || !p->rec_status_known || !WIFSIGNALED(p->rec_status))
		return;
	for (uint32_t i = 0; i < det_hdr->threads_recorded; i++) {
		struct det_slot *s = det_shm_slot(det_hdr, i);
		if (i != t->num && s->proc == det_proc && atomic_load(&s->state) != DET_TS_PARKED &&
		    atomic_load(&s->state) != DET_TS_EXITING && atomic_load(&s->state) != DET_TS_FREE)
			return;
	}
	int sig = WTERMSIG(p->rec_status);
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	real.sigaction(sig, &dfl, NULL);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, sig);
	pthread_sigmask(SIG_UNBLOCK, &one, NULL);
	det_sys(SYS_kill, sys_getpid(), sig, 0, 0, 0, 0);
}

/*
 * exit's last steps (libdet's destructor), or _exit. Replay lets the
 * process's other threads finish their recorded events first (in the
 * recording all of them happened before the process died). Strict
 * recording hands the turn on: nobody else in this process will use it.
 */
static void process_exit(void)
{
	struct det_thread *t = &det_tls;
	if (!det_hdr || !t->active)
		return;
	if (det_replaying()) {
		det_ops.replay_before_exit();
		return;
	}
	/* the whole process ends: its threads never take the strict token
	 * again, and (children) detrec frees their rings once drained; the
	 * program's own threads keep their state for the trace */
	if (det_strict)
		det_ops.strict_process_ending();
	for (uint32_t i = 0, n = det_threads_so_far(); i < n; i++) {
		struct det_slot *s = det_shm_slot(det_hdr, i);
		if (s->proc != det_proc)
			continue;
		atomic_store(&s->strict_wants, 0);
		uint32_t st = atomic_load(&s->state);
		if (det_proc != 0 && (st == DET_TS_RUNNING || st == DET_TS_STARTING))
			atomic_store(&s->state, DET_TS_EXITING);
	}
	if (det_strict) {
		t->exited = 1;
		/* (a thread that exits from inside a call det wraps, where a
		 * handler of a crash in that call called _exit, keeps the token:
		 * the trace says it ran last, and replay lets it into that call) */
		if (t->holding && !t->depth)
			det_ops.strict_release(t);
	}
}

__attribute__((destructor)) static void det_process_fini(void)
{
	/* objects dlopen'ed since the last scan (not in _exit, which a vfork
	 * child may call while another thread holds the loader's lock) */
	if (det_hdr && det_mode == DET_MODE_RECORD)
		det_note_modules();
	if (det_hdr && det_tls.active)
		det_flush_at_exit();
	process_exit();
}

DET_IMPL void det_impl__exit(int status)
{
	process_exit();
	for (;;)
		det_sys(SYS_exit_group, status, 0, 0, 0, 0, 0);
}

/* ------------------------------------------------------------------ */
/* prctl: the parent-death signal det set is det's, not the program's */

/* det set PR_SET_PDEATHSIG (SIGKILL) on the process detrec or detreplay
 * started, so that it dies with them: the program asks and sets its own
 * setting as if det had not (PR_GET_PDEATHSIG said 9), and the kernel keeps
 * det's SIGKILL while the program's is 0. Everything else is the kernel's. */
EXPORT int prctl(int option, ...)
{
	va_list ap;
	va_start(ap, option);
	unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long), a4 = va_arg(ap, unsigned long),
		      a5 = va_arg(ap, unsigned long);
	va_end(ap);
	int ours = det_pdeathsig_pid && det_pdeathsig_pid == (int)det_sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	long r;
	if (ours && option == PR_GET_PDEATHSIG) {
		if (!a2)
			r = -EFAULT;
		else {
			*(int *)a2 = det_prog_pdeathsig;
			r = 0;
		}
	} else if (ours && option == PR_SET_PDEATHSIG) {
		r = det_sys(SYS_prctl, option, a2 ? (long)a2 : SIGKILL, 0, 0, 0, 0);
		if (r == 0)
			det_prog_pdeathsig = (int)a2;
	} else {
		r = det_sys(SYS_prctl, option, (long)a2, (long)a3, (long)a4, (long)a5, 0);
	}
	return (int)ret_of(r);
}

