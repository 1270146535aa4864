/*
 * preload/process.c - the program's child processes: fork, vfork,
 * posix_spawn, system, popen, the exec family, the wait family, and the
 * pids that replay translates.
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
 *    a pid (kill, waitpid...) translate them back through the table.
 *  - A child det cannot follow (statically linked, set-user-ID, with file
 *    capabilities it would gain, not x86-64, started by a raw clone) stops
 *    the run with a message naming it: a trace without it would not replay.
 *    A raw clone that is a plain fork is det's fork; one that shares the
 *    program's memory (a thread) stops the run at the call.
 *  - Nothing here runs on a hot path; it may allocate.
 */
#include "runtime.h"

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

static struct det_proc *proc_at(uint32_t i)
{
	return det_shm_proc(det_hdr, i);
}

static uint32_t nprocs(void)
{
	uint32_t n = atomic_load(&det_hdr->next_proc);
	return n < det_hdr->max_procs ? n : det_hdr->max_procs;
}

static int32_t sys_getpid(void)
{
	return (int32_t)det_sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
}

pid_t det_pid_to_real(pid_t pid)
{
	if (!det_hdr || det_mode != DET_MODE_REPLAY || pid <= 0)
		return pid;
	for (uint32_t i = 0; i < nprocs(); i++) {
		struct det_proc *p = proc_at(i);
		int32_t real_pid = atomic_load(&p->pid);
		if (p->rec_pid == pid && real_pid)
			return real_pid;
	}
	return pid;
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

pid_t det_pid_to_rec(pid_t pid)
{
	if (!det_hdr || det_mode != DET_MODE_REPLAY || pid <= 0)
		return pid;
	for (uint32_t i = 0; i < nprocs(); i++) {
		struct det_proc *p = proc_at(i);
		if (atomic_load(&p->pid) == pid && p->rec_pid)
			return p->rec_pid;
	}
	return pid;
}

/* A process-group or pid argument: positive pids and negative groups. */
static pid_t translate(pid_t pid)
{
	if (pid > 0)
		return det_pid_to_real(pid);
	if (pid < -1)
		return -det_pid_to_real(-pid);
	return pid;
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

static void start_process(struct det_thread *t, uint32_t idx, uint32_t num, uint64_t ra)
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
/* what det can follow */

static int read_at(int fd, void *buf, size_t n, off_t off)
{
	return det_sys(SYS_pread64, fd, (long)buf, (long)n, off, 0, 0) == (long)n;
}

/* Would exec'ing the file open as fd grant capabilities (its
 * security.capability attribute)? Then the kernel runs it in secure mode,
 * as it does a set-ID file. capabilities(7) and the kernel's
 * cap_bprm_creds_from_file: for a real user other than root, the exec is
 * secure when the file's effective bit is set or the new permitted set,
 * (bounding & fP) | (inheritable & fI), is not empty, whatever the process
 * held before; a nosuid mount ignores the attribute. (The same rule as
 * recorder/det/launch.py grants_capabilities.) */
static int grants_capabilities(long fd)
{
	struct vfs_ns_cap_data caps;
	long n = det_sys(SYS_fgetxattr, fd, (long)"security.capability", (long)&caps, sizeof(caps), 0, 0);
	struct statfs fs;
	if (n < (long)sizeof(caps.magic_etc) || det_sys(SYS_getuid, 0, 0, 0, 0, 0, 0) == 0 ||
	    (det_sys(SYS_fstatfs, fd, (long)&fs, 0, 0, 0, 0) == 0 && (fs.f_flags & ST_NOSUID)))
		return 0;
	uint32_t rev = caps.magic_etc & VFS_CAP_REVISION_MASK;
	if (n != (rev == VFS_CAP_REVISION_1   ? (long)XATTR_CAPS_SZ_1
		  : rev == VFS_CAP_REVISION_2 ? (long)XATTR_CAPS_SZ_2
		  : rev == VFS_CAP_REVISION_3 ? (long)XATTR_CAPS_SZ_3
					      : -1))
		return 0; /* malformed: the kernel refuses the exec itself */
	if (caps.magic_etc & VFS_CAP_FLAGS_EFFECTIVE)
		return 1;
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct held[2] = {{0}};
	det_sys(SYS_capget, (long)&hdr, (long)held, 0, 0, 0, 0);
	for (int w = 0; w < (rev == VFS_CAP_REVISION_1 ? 1 : 2); w++) {
		if (caps.data[w].inheritable & held[w].inheritable)
			return 1;
		for (int bit = 0; bit < 32; bit++)
			if ((caps.data[w].permitted >> bit & 1) &&
			    det_sys(SYS_prctl, PR_CAPBSET_READ, w * 32 + bit, 0, 0, 0, 0) == 1)
				return 1;
	}
	return 0;
}

/* Why det cannot follow an exec of `path` (opened relative to dirfd), or
 * NULL when it can, or when the exec will fail by itself. */
static const char *unfollowable(int dirfd, const char *path, int depth)
{
	long fd = det_sys(SYS_openat, dirfd, (long)path, O_RDONLY | O_CLOEXEC, 0, 0, 0);
	if (fd < 0)
		return NULL;
	const char *why = NULL;
	struct stat st;
	if (det_sys(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) == 0 &&
	    (((st.st_mode & S_ISUID) && st.st_uid != geteuid()) ||
	     ((st.st_mode & S_ISGID) && st.st_gid != getegid()))) {
		why = "it is set-user-ID or set-group-ID, so the kernel drops det's LD_PRELOAD";
		goto out;
	}
	if (grants_capabilities(fd)) {
		why = "it has file capabilities that running it would grant, so the kernel drops det's LD_PRELOAD";
		goto out;
	}
	unsigned char head[128];
	if (!read_at((int)fd, head, 2, 0))
		goto out;
	if (head[0] == '#' && head[1] == '!' && depth == 0) {
		/* a script: its interpreter is what runs */
		long n = det_sys(SYS_pread64, fd, (long)head, sizeof(head) - 1, 0, 0, 0);
		head[n > 0 ? n : 0] = 0;
		char *p = (char *)head + 2, *e;
		while (*p == ' ' || *p == '\t')
			p++;
		for (e = p; *e && *e != ' ' && *e != '\t' && *e != '\n'; e++)
			;
		*e = 0;
		if (*p)
			why = unfollowable(AT_FDCWD, p, 1);
		goto out;
	}
	Elf64_Ehdr eh;
	if (!read_at((int)fd, &eh, sizeof(eh), 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
		goto out;
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
		/* (a 32-bit program runs, without det: its loader skips libdet.so) */
		why = "it is not an x86-64 program, and det records x86-64 programs only";
		goto out;
	}
	int interp = 0;
	for (unsigned i = 0; i < eh.e_phnum && i < 64; i++) {
		Elf64_Phdr ph;
		if (!read_at((int)fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)))
			break;
		if (ph.p_type == PT_INTERP)
			interp = 1;
	}
	if (!interp)
		why = "it is statically linked, so det's runtime cannot be preloaded into it";
out:
	det_sys(SYS_close, fd, 0, 0, 0, 0, 0);
	return why;
}

static void check_followable(const char *call, int dirfd, const char *path)
{
	const char *why = unfollowable(dirfd, path, 0);
	if (why)
		det_fatal("%s(%s): det cannot follow the program into it: %s", call, path, why);
}

/* The environment an exec'd image gets: det's two variables kept, even
 * when the program passes its own (env -i, a cleaned environment). */
static const char *libdet_file(void)
{
	static char path[PATH_MAX];
	if (!path[0]) {
		Dl_info info;
		if (dladdr((void *)libdet_file, &info) && info.dli_fname)
			strncpy(path, info.dli_fname, sizeof(path) - 1);
	}
	return path;
}

static char *const *with_det_env(char *const envp[], char ***owned)
{
	*owned = NULL;
	const char *lib = libdet_file();
	static char shm_entry[64];
	if (!shm_entry[0] && det_shm_name[0])
		snprintf(shm_entry, sizeof(shm_entry), "%s=%s", DET_SHM_ENV, det_shm_name);
	size_t n = 0, libn = strlen(lib), keyn = strlen(DET_SHM_ENV);
	int have_pre = 0, have_shm = 0;
	for (; envp && envp[n]; n++) {
		if (!strncmp(envp[n], "LD_PRELOAD=", 11) && strstr(envp[n] + 11, lib))
			have_pre = 1;
		if (!strncmp(envp[n], DET_SHM_ENV, keyn) && envp[n][keyn] == '=' && shm_entry[0] &&
		    !strcmp(envp[n], shm_entry))
			have_shm = 1;
	}
	if ((have_pre && have_shm) || !libn || !shm_entry[0])
		return envp;
	char **env = malloc((n + 3) * sizeof(*env));
	if (!env)
		return envp;
	size_t k = 0;
	char *pre = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(envp[i], "LD_PRELOAD=", 11)) {
			if (!have_pre && !pre && (pre = malloc(libn + strlen(envp[i]) + 2)))
				sprintf(pre, "LD_PRELOAD=%s%s%s", lib, envp[i][11] ? ":" : "", envp[i] + 11);
			continue;
		}
		if (!strncmp(envp[i], DET_SHM_ENV, keyn) && envp[i][keyn] == '=')
			continue;
		env[k++] = envp[i];
	}
	if (have_pre) {
		for (size_t i = 0; i < n; i++)
			if (!strncmp(envp[i], "LD_PRELOAD=", 11))
				env[k++] = envp[i];
	} else {
		if (!pre && (pre = malloc(libn + 12)))
			sprintf(pre, "LD_PRELOAD=%s", lib);
		if (pre)
			env[k++] = pre;
	}
	env[k++] = shm_entry;
	env[k] = NULL;
	*owned = env;
	return env;
}

/* A trapped rdtsc (preload/signals.c) stays trapped across exec, where
 * the dynamic loader reads the counter before det is there to answer. */
static void tsc_untrap(void)
{
	if (det_tsc_trapped)
		det_sys(SYS_prctl, PR_SET_TSC, PR_TSC_ENABLE, 0, 0, 0, 0);
}

static void tsc_retrap(void)
{
	if (det_tsc_trapped)
		det_sys(SYS_prctl, PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0, 0);
}

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
static int begin_create(struct det_thread *t, struct det_op *op, uint16_t kind, uint64_t ra, uint32_t *child,
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
		if (det_strict)
			det_ops.strict_created(*child);
	}
	prepare_child(t, *idx, *child, op);
	return 0;
}

/* The creating call returned `res` (the child's real pid, or -error). */
static pid_t end_create(struct det_op *op, uint32_t idx, int64_t res)
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
	det_ops.replay_end(op, op->rec->result);
	return (pid_t)op->rec->result;
}

static pid_t det_fork(struct det_thread *t, uint64_t ra)
{
	struct det_op op = {0};
	uint32_t child = 0, idx = 0;
	if (begin_create(t, &op, DET_EV_PROC_FORK, ra, &child, &idx)) {
		int64_t r = op.rec->result;
		det_ops.replay_end(&op, r);
		errno = (int)-r;
		return -1;
	}
	pid_t pid = real.fork();
	if (pid == 0) {
		start_process(t, idx, child, ra);
		return 0;
	}
	int e = errno;
	pid_t r = end_create(&op, idx, pid > 0 ? pid : -(int64_t)e);
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
	pid_t r = det_fork(t, ra);
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
 * thread it cannot tell apart. A plain fork is det's fork. */
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
	if ((c->flags & ~(uint64_t)CLONE_VFORK) || c->exit_signal != SIGCHLD || !c->plain)
		det_fatal("raw %s in " DET_CODE_AT " (flags %#llx): det follows a raw clone only when it is a plain "
			  "fork (SIGCHLD, no other flag or argument)",
			  c->call, (unsigned long long)ra, flags);
	pid_t r = det_fork(t, ra);
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

/* ------------------------------------------------------------------ */
/* exec */

/* path, then each argument, each NUL-terminated, cut at 2 KiB */
static uint32_t exec_data(char *buf, uint32_t cap, const char *path, char *const argv[])
{
	uint32_t n = 0;
	for (int i = -1; i < 0 || (argv && argv[i]); i++) {
		const char *s = i < 0 ? path : argv[i];
		size_t k = strlen(s) + 1;
		if (n + k > cap)
			break;
		memcpy(buf + n, s, k);
		n += (uint32_t)k;
	}
	return n;
}

static int det_exec(struct det_thread *t, const char *call, int dirfd, const char *path, char *const argv[],
		    char *const envp[], int flags, uint64_t ra)
{
	check_followable(call, dirfd, path);
	det_note_file(dirfd, path, -1, DET_FILE_EXEC);
	char **owned;
	char *const *env = with_det_env(envp, &owned);
	struct det_op op = {0};
	char data[2048];
	if (!det_input_begin(&op, t, DET_EV_PROC_EXEC, 0, ra)) {
		uint32_t len = exec_data(data, sizeof(data), path, argv);
		det_ops.rec_data(t, data, len);
		det_ops.rec_input(&op, 0, len); /* published before the call, which may not come back */
	} else if (op.rec->result < 0) {
		int64_t r = op.rec->result; /* it failed in the recording: fail the same way */
		det_input_end(&op, r, NULL, 0);
		free(owned);
		errno = (int)-r;
		return -1;
	} else {
		det_input_end(&op, 0, NULL, 0);
	}
	struct det_proc *p = proc_at(det_proc);
	t->slot->resume_idx = t->idx;
	atomic_store(&p->exec_thread, t->num + 1);
	atomic_store(&p->state, DET_PS_EXEC);
	tsc_untrap();
	long r = det_sys(SYS_execveat, dirfd, (long)path, (long)argv, (long)env, flags, 0);
	tsc_retrap();
	atomic_store(&p->state, DET_PS_RUNNING);
	atomic_store(&p->exec_thread, 0);
	free(owned);
	if (det_replaying())
		det_ops.diverge(t, DET_DIV_RESULT, DET_EV_PROC_EXEC, NULL, ra, "an exec that worked in the recording failed");
	det_ops.rec_fix_result(&op, r);
	errno = (int)-r;
	return -1;
}

#define DET_EXEC_CALL(call, dirfd, path, argv, envp, flags, pass)                                 \
	do {                                                                                       \
		struct det_thread *t = det_enter();                                                \
		if (!t)                                                                            \
			return pass;                                                               \
		int r = det_exec(t, call, dirfd, path, argv, envp, flags, DET_RA());              \
		int e = errno;                                                                     \
		det_leave(t);                                                                      \
		errno = e;                                                                         \
		return r;                                                                          \
	} while (0)

DET_IMPL int det_impl_execve(const char *path, char *const argv[], char *const envp[])
{
	DET_EXEC_CALL("execve", AT_FDCWD, path, argv, envp, 0,
		      (int)syscall(SYS_execve, path, argv, envp));
}

DET_IMPL int det_impl_execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	DET_EXEC_CALL("execveat", dirfd, path, argv, envp, flags,
		      (int)syscall(SYS_execveat, dirfd, path, argv, envp, flags));
}

DET_IMPL int det_impl_fexecve(int fd, char *const argv[], char *const envp[])
{
	DET_EXEC_CALL("fexecve", fd, "", argv, envp, AT_EMPTY_PATH,
		      (int)syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH));
}

DET_IMPL int det_impl_execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

/* execvp's search, as glibc does it: each PATH entry in turn; a file that
 * is not a binary or script the kernel knows runs under /bin/sh. */
DET_IMPL int det_impl_execvpe(const char *file, char *const argv[], char *const envp[])
{
	if (!*file) {
		errno = ENOENT;
		return -1;
	}
	if (strchr(file, '/')) {
		execve(file, argv, envp);
		if (errno == ENOEXEC)
			goto script;
		return -1;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin";
	size_t flen = strlen(file);
	int eacces = 0;
	for (const char *p = path;; p++) {
		const char *e = strchrnul(p, ':');
		char buf[PATH_MAX];
		size_t dlen = (size_t)(e - p);
		if (dlen + flen + 2 <= sizeof(buf)) {
			if (dlen) {
				memcpy(buf, p, dlen);
				buf[dlen++] = '/';
			}
			memcpy(buf + dlen, file, flen + 1);
			/* only candidates that exist become exec events */
			if (access(buf, F_OK) == 0) {
				execve(buf, argv, envp);
				if (errno == ENOEXEC) {
					file = buf;
					goto script_path;
				}
				if (errno == EACCES)
					eacces = 1;
				else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE && errno != ENODEV &&
					 errno != ETIMEDOUT)
					return -1;
			}
		}
		if (!*e)
			break;
		p = e;
	}
	errno = eacces ? EACCES : ENOENT;
	return -1;
script:
	;
	char keep[PATH_MAX];
	strncpy(keep, file, sizeof(keep) - 1);
	keep[sizeof(keep) - 1] = 0;
	file = keep;
script_path:
	;
	int n = 0;
	while (argv[n])
		n++;
	char **sh = malloc((size_t)(n + 2) * sizeof(*sh));
	if (!sh)
		return -1;
	sh[0] = (char *)"/bin/sh";
	sh[1] = (char *)file;
	for (int i = 1; i <= n; i++)
		sh[i + 1] = argv[i];
	execve("/bin/sh", sh, envp);
	int e = errno;
	free(sh);
	errno = e;
	return -1;
}

DET_IMPL int det_impl_execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

/* execl* build an argument vector and go through the exec* above. */
static char **collect_args(const char *arg0, va_list ap, char ***envp_out)
{
	size_t n = 1, cap = 16;
	char **argv = malloc(cap * sizeof(*argv));
	if (!argv)
		return NULL;
	argv[0] = (char *)arg0;
	for (char *a = arg0 ? va_arg(ap, char *) : NULL;; a = va_arg(ap, char *)) {
		if (n + 1 >= cap) {
			char **grown = realloc(argv, (cap *= 2) * sizeof(*argv));
			if (!grown) {
				free(argv);
				return NULL;
			}
			argv = grown;
		}
		argv[n++] = a;
		if (!a)
			break;
	}
	if (envp_out)
		*envp_out = va_arg(ap, char **);
	return argv;
}

/* Run the vector an execl* built, and free it if the exec failed. */
static int exec_built(const char *path, char **argv, char **envp, int search)
{
	if (!argv)
		return -1;
	if (search)
		execvp(path, argv);
	else
		execve(path, argv, envp ? envp : environ);
	int e = errno;
	free(argv);
	errno = e;
	return -1;
}

EXPORT int execl(const char *path, const char *arg0, ...)
{
	va_list ap;
	va_start(ap, arg0);
	char **argv = collect_args(arg0, ap, NULL);
	va_end(ap);
	return exec_built(path, argv, NULL, 0);
}

EXPORT int execlp(const char *file, const char *arg0, ...)
{
	va_list ap;
	va_start(ap, arg0);
	char **argv = collect_args(arg0, ap, NULL);
	va_end(ap);
	return exec_built(file, argv, NULL, 1);
}

EXPORT int execle(const char *path, const char *arg0, ...)
{
	char **envp = NULL;
	va_list ap;
	va_start(ap, arg0);
	char **argv = collect_args(arg0, ap, &envp);
	va_end(ap);
	return exec_built(path, argv, envp, 0);
}

/* ------------------------------------------------------------------ */
/* posix_spawn */

/* The file posix_spawnp would run, for the check only. */
static const char *spawn_target(const char *file, int search, char *buf, size_t cap)
{
	if (!search || strchr(file, '/'))
		return file;
	const char *path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin";
	for (const char *p = path;; p++) {
		const char *e = strchrnul(p, ':');
		size_t dlen = (size_t)(e - p);
		if (dlen + strlen(file) + 2 <= cap) {
			snprintf(buf, cap, "%.*s%s%s", (int)dlen, p, dlen ? "/" : "", file);
			if (access(buf, X_OK) == 0)
				return buf;
		}
		if (!*e)
			break;
		p = e;
	}
	return file;
}

static int det_spawn(struct det_thread *t, pid_t *pidp, const char *file, int search,
		     const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr, char *const argv[],
		     char *const envp[], uint64_t ra)
{
	char buf[PATH_MAX];
	check_followable(search ? "posix_spawnp" : "posix_spawn", AT_FDCWD, spawn_target(file, search, buf, sizeof(buf)));
	struct det_op op = {0};
	uint32_t child = 0, idx = 0;
	if (begin_create(t, &op, DET_EV_PROC_SPAWN, ra, &child, &idx)) {
		int64_t r = op.rec->result;
		det_ops.replay_end(&op, r);
		return (int)-r;
	}
	/* One claim at a time in this process's entry; the new image takes it. */
	struct det_proc *me = proc_at(det_proc);
	uint64_t claim = ((uint64_t)(idx + 1) << 32) | (child + 1);
	for (unsigned waited = 0;; waited++) {
		uint64_t none = 0;
		if (atomic_compare_exchange_strong(&me->spawn_claim, &none, claim))
			break;
		if (waited == 10000)
			det_fatal("the program's last posix_spawn child never started det's runtime (it cleared "
				  "LD_PRELOAD, or failed before running): det cannot follow it");
		struct timespec ts = {0, 1000 * 1000};
		det_sys(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
	}
	char **owned;
	char *const *env = with_det_env(envp, &owned);
	pid_t pid = 0;
	tsc_untrap();
	int r = search ? real.posix_spawnp(&pid, file, fa, attr, argv, env)
		       : real.posix_spawn(&pid, file, fa, attr, argv, env);
	tsc_retrap();
	free(owned);
	if (r != 0) {
		uint64_t mine = claim;
		atomic_compare_exchange_strong(&me->spawn_claim, &mine, 0);
	}
	pid_t got = end_create(&op, idx, r == 0 ? pid : -(int64_t)r);
	if (got < 0)
		return -got;
	if (pidp)
		*pidp = got;
	return 0;
}

DET_IMPL int det_impl_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.posix_spawn(pid, path, fa, attr, argv, envp);
	int r = det_spawn(t, pid, path, 0, fa, attr, argv, envp, DET_RA());
	det_leave(t);
	return r;
}

DET_IMPL int det_impl_posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.posix_spawnp(pid, file, fa, attr, argv, envp);
	int r = det_spawn(t, pid, file, 1, fa, attr, argv, envp, DET_RA());
	det_leave(t);
	return r;
}

/* ------------------------------------------------------------------ */
/* system and popen, over fork and exec (what POSIX describes) */

static int attached(void)
{
	struct det_thread *t = det_enter();
	if (!t)
		return 0;
	det_leave(t);
	return 1;
}

DET_IMPL int det_impl_system(const char *cmd)
{
	if (!attached())
		return real.system(cmd);
	if (!cmd)
		return access("/bin/sh", X_OK) == 0;
	struct sigaction ign = {.sa_handler = SIG_IGN}, oint, oquit;
	sigset_t chld, omask;
	sigaction(SIGINT, &ign, &oint);
	sigaction(SIGQUIT, &ign, &oquit);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &omask);
	int status = -1;
	pid_t pid = fork();
	if (pid == 0) {
		sigaction(SIGINT, &oint, NULL);
		sigaction(SIGQUIT, &oquit, NULL);
		sigprocmask(SIG_SETMASK, &omask, NULL);
		execl("/bin/sh", "sh", "-c", "--", cmd, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		while (waitpid(pid, &status, 0) < 0)
			if (errno != EINTR) {
				status = -1;
				break;
			}
	int e = errno;
	sigaction(SIGINT, &oint, NULL);
	sigaction(SIGQUIT, &oquit, NULL);
	sigprocmask(SIG_SETMASK, &omask, NULL);
	errno = e;
	return status;
}

/* popen's streams and their children; the lock is a plain flag, since the
 * table is touched only between events of the same call */
static struct {
	FILE *f;
	pid_t pid;
	int fd;
} popens[256];
static _Atomic int popen_lock;

static void popen_take(void)
{
	while (atomic_exchange(&popen_lock, 1))
		det_sys(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
}

static void popen_give(void)
{
	atomic_store(&popen_lock, 0);
}

DET_IMPL FILE *det_impl_popen(const char *cmd, const char *mode)
{
	if (!attached())
		return real.popen(cmd, mode);
	int reading = mode && mode[0] == 'r', cloexec = mode && strchr(mode, 'e') != NULL;
	if (!mode || (mode[0] != 'r' && mode[0] != 'w')) {
		errno = EINVAL;
		return NULL;
	}
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return NULL;
	int mine = reading ? fds[0] : fds[1], theirs = reading ? fds[1] : fds[0], target = reading ? 1 : 0;
	pid_t pid = fork();
	if (pid == 0) {
		/* POSIX: the child does not keep the streams of earlier popens */
		for (int i = 0; i < 256; i++)
			if (popens[i].f)
				close(popens[i].fd);
		if (theirs == target)
			fcntl(theirs, F_SETFD, 0);
		else if (dup2(theirs, target) < 0)
			_exit(127);
		execl("/bin/sh", "sh", "-c", "--", cmd, (char *)NULL);
		_exit(127);
	}
	int e = errno;
	close(theirs);
	if (pid < 0) {
		close(mine);
		errno = e;
		return NULL;
	}
	if (!cloexec)
		fcntl(mine, F_SETFD, 0);
	FILE *f = fdopen(mine, reading ? "r" : "w");
	if (!f) {
		e = errno;
		close(mine);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		errno = e;
		return NULL;
	}
	popen_take();
	int i = 0;
	while (i < 256 && popens[i].f)
		i++;
	if (i < 256) {
		popens[i].f = f;
		popens[i].pid = pid;
		popens[i].fd = mine;
	}
	popen_give();
	if (i == 256)
		det_fatal("more than 256 popen streams open at once");
	return f;
}

DET_IMPL int det_impl_pclose(FILE *f)
{
	pid_t pid = -1;
	popen_take();
	for (int i = 0; i < 256; i++)
		if (popens[i].f == f) {
			pid = popens[i].pid;
			popens[i].f = NULL;
			break;
		}
	popen_give();
	if (pid < 0)
		return real.pclose(f); /* one glibc opened before det was there */
	fclose(f);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return status;
}

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
 * wait): what the image did is not in the trace. recorder/det/record.py
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
	if (!det_input_begin(&op, t, DET_EV_PROC_WAIT, (uint32_t)options | 0x80000000u, DET_RA())) {
		do
			r = BLOCKING(&op, det_sys(SYS_waitid, type, id, (long)&si, options, 0, 0));
		while (r == -EINTR && !t->nsigs);
		pid_t lost = r == 0 ? note_status(si.si_pid, reaped_status(&si, options)) : 0;
		det_input_end(&op, r, r == 0 ? &si : NULL, r == 0 ? sizeof(si) : 0);
		unattached_stop(lost);
	} else {
		r = op.rec->result;
		pid_t lost = 0;
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

/* ------------------------------------------------------------------ */
/* pids the program hands back to the kernel */

DET_IMPL int det_impl_kill(pid_t pid, int sig)
{
	det_init();
	return real.kill(translate(pid), sig);
}

DET_IMPL int det_impl_killpg(pid_t pgrp, int sig)
{
	det_init();
	return real.kill(pgrp > 1 ? -det_pid_to_real(pgrp) : -pgrp, sig);
}

DET_IMPL int det_impl_setpgid(pid_t pid, pid_t pgid)
{
	det_init();
	return (int)syscall(SYS_setpgid, translate(pid), translate(pgid));
}

/* ------------------------------------------------------------------ */
/* a process ends */

/* Replay: a thread has done all its recorded events. A child process that
 * a signal killed in the recording (a SIGPIPE from a reader that had
 * gone, a kill) dies of it here, once all its threads are at their end:
 * the events that would have come next never happened. */
void det_replay_thread_done(struct det_thread *t)
{
	struct det_proc *p = proc_at(det_proc);
	if (det_proc == 0 || !p->rec_status_known || !WIFSIGNALED(p->rec_status))
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
	uint32_t n = (uint32_t)(atomic_load(&det_hdr->clock) >> DET_SEQ_BITS);
	for (uint32_t i = 0; i < n && i < det_hdr->max_threads; i++) {
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
		if (t->holding)
			det_ops.strict_release(t);
	}
}

__attribute__((destructor)) static void det_process_fini(void)
{
	/* objects dlopen'ed since the last scan (not in _exit, which a vfork
	 * child may call while another thread holds the loader's lock) */
	if (det_hdr && det_mode == DET_MODE_RECORD)
		det_note_modules();
	process_exit();
}

DET_IMPL void det_impl__exit(int status)
{
	process_exit();
	for (;;)
		det_sys(SYS_exit_group, status, 0, 0, 0, 0, 0);
}

