/*
 * preload/exec.c - what det can follow into a new image, and the calls
 * that start one: the exec family, posix_spawn, system and popen.
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
#include <sys/uio.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))


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
 * store/det/launch.py grants_capabilities.) */
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
	static char shm_entry[64]; /* (det_shm_name changes once a process holds the region) */
	if (det_shm_name[0])
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

/* Can n bytes at p be read? The kernel says, through a copy from this
 * process to itself (EFAULT: no). Where the call is refused (ENOSYS, EPERM),
 * det reads them as before. */
static int readable(const void *p, size_t n)
{
	char buf[256];
	while (n) {
		size_t k = n < sizeof(buf) ? n : sizeof(buf);
		struct iovec to = {buf, k}, from = {(void *)p, k};
		long r = det_sys(SYS_process_vm_readv, det_sys(SYS_getpid, 0, 0, 0, 0, 0, 0), (long)&to, 1, (long)&from,
				 1, 0);
		if (r == -EFAULT)
			return 0;
		if (r <= 0)
			return 1;
		p = (const char *)p + r;
		n -= (size_t)r;
	}
	return 1;
}

/* A NUL-terminated string, read a piece at a time up to the next page
 * boundary (a string that ends just before an unmapped page is good). */
static int readable_string(const char *s)
{
	for (;;) {
		size_t k = 4096 - ((uintptr_t)s & 4095);
		if (!readable(s, k))
			return 0;
		if (memchr(s, 0, k))
			return 1;
		s += k;
	}
}

/* A NULL-terminated vector of strings (NULL itself: empty, as Linux takes it). */
static int readable_vector(char *const v[])
{
	for (size_t i = 0; v; i++) {
		if (!readable(&v[i], sizeof(v[i])))
			return 0;
		if (!v[i])
			return 1;
		if (!readable_string(v[i]))
			return 0;
	}
	return 1;
}

static int det_exec(struct det_thread *t, const char *call, int dirfd, const char *path, char *const argv[],
		    char *const envp[], int flags, uint64_t ra)
{
	/* An exec whose path or vectors point nowhere fails in the kernel before
	 * it replaces anything (EFAULT, or first what opening the file says):
	 * det must not read them itself, and the same memory fails the same way
	 * in replay, so the call is made as it is, with no event. */
	if (!readable_string(path) || !readable_vector(argv) || !readable_vector(envp)) {
		long r = det_sys(SYS_execveat, dirfd, (long)path, (long)argv, (long)envp, flags, 0);
		errno = r < 0 ? (int)-r : EFAULT;
		return -1;
	}
	check_followable(call, dirfd, path);
	det_note_file(dirfd, path, -1, DET_FILE_EXEC);
	det_region_for_image(1);
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
		det_region_for_image(-1);
		free(owned);
		errno = (int)-r;
		return -1;
	} else {
		det_input_end(&op, 0, NULL, 0);
		/* The exec ends the process's other threads, as it did when
		 * recorded, and their events in the trace all came before that:
		 * some after the exec's own place (a thread that started while the
		 * exec ran), so they are done first, or never. */
		det_replay_wait_threads_of(det_proc, t->num, 1, UINT64_MAX);
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
	det_region_for_image(-1);
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
		      (int)real.syscall(SYS_execve, path, argv, envp));
}

DET_IMPL int det_impl_execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
	DET_EXEC_CALL("execveat", dirfd, path, argv, envp, flags,
		      (int)real.syscall(SYS_execveat, dirfd, path, argv, envp, flags));
}

DET_IMPL int det_impl_fexecve(int fd, char *const argv[], char *const envp[])
{
	DET_EXEC_CALL("fexecve", fd, "", argv, envp, AT_EMPTY_PATH,
		      (int)real.syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH));
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
	det_region_for_image(0);
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
	pid_t got = end_create(&op, idx, r == 0 ? pid : -(int64_t)r, 0);
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
	det_spin_lock(&popen_lock);
}

static void popen_give(void)
{
	det_spin_unlock(&popen_lock);
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
