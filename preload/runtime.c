/*
 * preload/runtime.c - libdet.so start-up, threads and objects.
 *
 * Rules of this file:
 *  - det_obj for a known object takes no lock, makes no syscall and
 *    allocates nothing (it is on every event's path).
 *  - Never call an interposed function from here; use real.* or raw syscalls.
 *  - Memory ordering arguments assume x86-64 (TSO); they are spelled out
 *    where they matter.
 */
#include "runtime.h"

#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <x86intrin.h>

struct det_real real;
__thread struct det_thread det_tls __attribute__((tls_model("initial-exec")));
struct det_shm_header *det_hdr;
int det_mode;
int det_chaos;
int det_strict;
int det_logical;
int det_debug; /* DET_DEBUG=1: print every replayed event (for det's developers) */
char det_shm_name[32]; /* DET_SHM_ENV's value, kept for exec'd images even if the program clears it */
int det_pdeathsig_pid; /* the process det set PR_SET_PDEATHSIG on, or 0 */
int det_prog_pdeathsig; /* the program's own setting there */
int det_region_fd = -1;

static _Atomic int init_state; /* 0 not started, 1 running, 2 done */
static __thread int initialising __attribute__((tls_model("initial-exec")));

_Static_assert(sizeof(struct det_rec) == 32, "ring entry size is ABI");
_Static_assert(sizeof(struct det_slot) == 448, "slot size is ABI");
_Static_assert(sizeof(struct det_sched) == 64, "schedule entry size is ABI");
_Static_assert(sizeof(struct det_proc) == 128, "process entry size is ABI");

/* ------------------------------------------------------------------ */
/* messages */

static void det_write_all(const char *buf, size_t len)
{
	while (len) {
		long n = det_sys(SYS_write, 2, (long)buf, (long)len, 0, 0, 0);
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

static void det_vmsg(const char *fmt, va_list ap)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf), "det: ");
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	det_write_all(buf, (size_t)n);
}

void det_msg(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	det_vmsg(fmt, ap);
	va_end(ap);
}

/* Stop the program. The reason goes to the shared header, where detrec or
 * detreplay (or det's gdb commands) report it; it is printed here only
 * when no supervisor is there to read it. */
void det_fatal(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (det_hdr) {
		uint32_t expected = 0;
		if (atomic_compare_exchange_strong(&det_hdr->failed, &expected, DET_FAILED_WRITING)) {
			vsnprintf(det_hdr->error, sizeof(det_hdr->error), fmt, ap);
			atomic_store(&det_hdr->failed, DET_FAILED_WRITTEN);
		} else {
			/* Another thread is writing its reason: exiting now would end
			 * it mid-sentence (threads of a program often reach the same
			 * limit together). Bounded: it may itself be stopped. */
			for (int i = 0; i < 2000 && atomic_load(&det_hdr->failed) == DET_FAILED_WRITING; i++) {
				struct timespec ms = {0, 1000000};
				det_sys(SYS_nanosleep, (long)&ms, 0, 0, 0, 0, 0);
			}
		}
	} else {
		det_vmsg(fmt, ap);
	}
	va_end(ap);
	det_sys(SYS_exit_group, DET_EXIT_STOPPED, 0, 0, 0, 0, 0);
	__builtin_unreachable();
}

/* ------------------------------------------------------------------ */
/* start-up */

static void resolve_real(void)
{
#define DET_REAL(ret, name, args)                                                 \
	real.name = (ret(*) args)dlsym(RTLD_NEXT, #name);                          \
	if (!real.name)                                                           \
		det_fatal("cannot find %s in libc", #name);
#define DET_REAL_V(ret, name, args, version)                                      \
	real.name = (ret(*) args)dlvsym(RTLD_NEXT, #name, version);                \
	if (!real.name)                                                           \
		real.name = (ret(*) args)dlsym(RTLD_NEXT, #name);                  \
	if (!real.name)                                                           \
		det_fatal("cannot find %s in libc", #name);
#include "real.def"
#undef DET_REAL
}

void *det_real_late(const char *name, const char *soname)
{
	void *f = dlsym(RTLD_NEXT, name);
	if (!f) { /* loaded privately by a dlopen'ed library */
		void *h = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
		if (h)
			f = dlsym(h, name);
	}
	if (!f)
		det_fatal("cannot find %s in %s", name, soname);
	return f;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	det_sys(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&ts, 0, 0, 0, 0);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void map_region(void)
{
	const char *env = getenv(DET_SHM_ENV);
	if (!env || !*env)
		return; /* not under detrec/detreplay: pass everything through */
	/* "PID:FD": the supervisor's own descriptor, reopened through /proc,
	 * so that every process of the program (exec'd images too) finds the
	 * region without holding a descriptor the program could see or close
	 * (but one that changed its user: det_region_keep). */
	char *end;
	long pid = strtol(env, &end, 10), fd = -1;
	if (*end == ':')
		fd = strtol(end + 1, &end, 10);
	if (*end || pid <= 0 || fd < 0)
		det_fatal("%s=%s does not name det's shared memory", DET_SHM_ENV, env);
	/* The program detrec or detreplay started dies with it: set here, not
	 * between fork and exec, so that Python spawns it with vfork
	 * (det/launch.py); a parent gone before this point is the watchdog's. */
	if (det_sys(SYS_getppid, 0, 0, 0, 0, 0, 0) == pid) {
		/* (the program's own setting stays what it was, for prctl: process.c) */
		det_sys(SYS_prctl, PR_GET_PDEATHSIG, (long)&det_prog_pdeathsig, 0, 0, 0, 0);
		det_sys(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0, 0);
		det_pdeathsig_pid = (int)det_sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/%ld/fd/%ld", pid, fd);
	strncpy(det_shm_name, env, sizeof(det_shm_name) - 1);
	/* Out of the program's sight: its value (detrec's or detreplay's pid)
	 * differs between recording and replay, and a program that prints its
	 * environment would print another line. exec, posix_spawn, system and
	 * popen put it back for the next image (preload/exec.c); the string
	 * stays on the stack, so /proc/PID/environ still names the run for
	 * det's watchdog, and the stack is the same size in every mode. */
	unsetenv(DET_SHM_ENV);
	long mfd = det_sys(SYS_openat, AT_FDCWD, (long)path, O_RDWR | O_CLOEXEC, 0, 0, 0);
	if (mfd >= 0 && pid == det_sys(SYS_getpid, 0, 0, 0, 0, 0, 0)) {
		/* this process held it over its exec (det_region_for_image): it
		 * holds it on, for its next exec */
		det_region_fd = (int)fd;
		det_sys(SYS_fcntl, fd, F_SETFD, FD_CLOEXEC, 0, 0, 0);
	}
	struct stat st;
	if (mfd < 0 || fstat((int)mfd, &st) != 0 || (size_t)st.st_size < sizeof(struct det_shm_header))
		det_fatal("cannot open det's shared memory %s (%s): is detrec/detreplay still running?", path,
			  strerror(mfd < 0 ? (int)-mfd : errno));
	void *p = mmap((void *)DET_SHM_ADDR, (size_t)st.st_size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_FIXED_NOREPLACE, (int)mfd, 0);
	int err = errno;
	det_sys(SYS_close, mfd, 0, 0, 0, 0, 0); /* the mapping keeps it */
	if (p == MAP_FAILED || p != (void *)DET_SHM_ADDR)
		det_fatal("cannot map det's shared memory at %#lx: %s", DET_SHM_ADDR, strerror(err));
	struct det_shm_header *h = p;
	if (h->magic != DET_SHM_MAGIC || h->version != DET_SHM_VERSION)
		det_fatal("shared memory version %u, this libdet.so speaks %u: mixed det builds?",
			  h->version, DET_SHM_VERSION);
	det_hdr = h;
	det_mode = (int)h->mode;
	if (det_mode == DET_MODE_RECORD && (h->flags & DET_F_STRICT)) {
		det_strict = 1;
		det_logical = (h->flags & DET_F_LOGICAL) != 0; /* strict's waits, turns by clock */
	}
	else if (det_mode == DET_MODE_RECORD && h->chaos_seed)
		det_chaos = 1;
}

/*
 * A process that changes its user (setuid to nobody) can no longer open the
 * supervisor's descriptor through /proc (another user's process), which an
 * image it execs needs. Before the change it opens the region once more and
 * holds it, high and close-on-exec: only such processes hold a descriptor
 * of det's. Its execs hand it to the new image (same pid), its spawns name
 * it through its pid.
 */
void det_region_keep(void)
{
	if (!det_hdr || det_region_fd >= 0 || !det_shm_name[0])
		return;
	char *end;
	long pid = strtol(det_shm_name, &end, 10), fd = *end == ':' ? strtol(end + 1, &end, 10) : -1;
	if (*end || pid <= 0 || fd < 0)
		return;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%ld/fd/%ld", pid, fd);
	long mfd = det_sys(SYS_openat, AT_FDCWD, (long)path, O_RDWR | O_CLOEXEC, 0, 0, 0);
	if (mfd < 0)
		return;
	struct rlimit rl;
	long base = 3;
	if (det_sys(SYS_getrlimit, RLIMIT_NOFILE, (long)&rl, 0, 0, 0, 0) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur > 128)
		base = (long)rl.rlim_cur - 64; /* out of the way of the numbers programs use */
	long high = det_sys(SYS_fcntl, mfd, F_DUPFD_CLOEXEC, base, 0, 0, 0);
	if (high >= 0) {
		det_sys(SYS_close, mfd, 0, 0, 0, 0, 0);
		mfd = high;
	}
	det_region_fd = (int)mfd;
}

void det_region_for_image(int exec)
{
	if (det_region_fd < 0)
		return;
	if (exec >= 0)
		snprintf(det_shm_name, sizeof(det_shm_name), "%ld:%d", det_sys(SYS_getpid, 0, 0, 0, 0, 0, 0),
			 det_region_fd);
	det_sys(SYS_fcntl, det_region_fd, F_SETFD, exec > 0 ? 0 : FD_CLOEXEC, 0, 0, 0);
}

/* ------------------------------------------------------------------ */
/* what the program read and loaded, for `detrec pack` and symbolizing */

static uint64_t path_hash(const char *p)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	return h | 1;
}

/* `path` made absolute against dirfd, into buf; 0 if it did not fit */
static int absolute_path(int dirfd, const char *path, char *buf, size_t cap)
{
	size_t n = 0;
	if (path[0] != '/') {
		long r;
		if (dirfd == AT_FDCWD) {
			r = det_sys(SYS_getcwd, (long)buf, (long)cap, 0, 0, 0, 0);
			r = r > 0 ? (long)strlen(buf) : -1;
		} else {
			char link[40];
			snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
			r = det_sys(SYS_readlink, (long)link, (long)buf, (long)cap - 1, 0, 0, 0);
		}
		if (r <= 0)
			return 0;
		n = (size_t)r;
		if (n + 1 < cap && buf[n - 1] != '/')
			buf[n++] = '/';
	}
	size_t k = strlen(path);
	if (n + k + 1 > cap) {
		memcpy(buf + n, path, cap - n - 1);
		buf[cap - 1] = 0;
		return 0;
	}
	memcpy(buf + n, path, k + 1);
	return 1;
}

void det_note_file(int dirfd, const char *path, int fd, uint32_t how)
{
	struct det_shm_header *h = det_hdr;
	if (!h || det_mode != DET_MODE_RECORD || !path || !*path || !h->files_cap)
		return;
	char abs[sizeof(((struct det_file *)0)->path)];
	int whole = absolute_path(dirfd, path, abs, sizeof(abs));
	struct stat st;
	long r = fd >= 0 ? det_sys(SYS_fstat, fd, (long)&st, 0, 0, 0, 0)
			 : det_sys(SYS_newfstatat, AT_FDCWD, (long)abs, (long)&st, 0, 0, 0);
	if (r != 0 || !S_ISREG(st.st_mode))
		return;
	_Atomic uint64_t *keys = (_Atomic uint64_t *)((char *)h + h->file_keys_off);
	if (!det_set_insert(keys, 2 * (uint64_t)h->files_cap - 1, path_hash(abs) ^ (uint64_t)st.st_ino << 1))
		return; /* seen (or the set is full: files_count says so) */
	uint32_t idx = atomic_fetch_add(&h->files_count, 1);
	if (idx >= h->files_cap)
		return;
	struct det_file *f = det_shm_file(h, idx);
	f->size = st.st_size;
	f->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	memcpy(f->path, abs, sizeof(abs));
	atomic_store(&f->how, how | (whole ? 0 : DET_FILE_CUT));
}

struct module_scan {
	int first; /* the first object is the program itself */
};

static int note_module(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct module_scan *scan = data;
	struct det_shm_header *h = det_hdr;
	char path[sizeof(h->modules[0].path)];
	if (scan->first) {
		scan->first = 0;
		long len = det_sys(SYS_readlink, (long)"/proc/self/exe", (long)path, sizeof(path) - 1, 0, 0, 0);
		path[len > 0 ? len : 0] = 0;
	} else if (!info->dlpi_name || !*info->dlpi_name) {
		return 0; /* the vDSO and other nameless objects */
	} else {
		strncpy(path, info->dlpi_name, sizeof(path) - 1);
		path[sizeof(path) - 1] = 0;
	}
	uint32_t n = atomic_load(&h->module_count);
	for (uint32_t i = 0; i < n && i < DET_MAX_MODULES; i++)
		if (h->modules[i].base == info->dlpi_addr && !strcmp(h->modules[i].path, path))
			return 0; /* noted before (this process, or another one with the same layout) */
	det_note_file(AT_FDCWD, path, -1, DET_FILE_LOADED);
	n = atomic_fetch_add(&h->module_count, 1);
	if (n >= DET_MAX_MODULES)
		return 1;
	struct det_module *m = &h->modules[n];
	memcpy(m->path, path, sizeof(path));
	m->base = info->dlpi_addr;
	return 0;
}

void det_note_modules(void)
{
	struct module_scan scan = {1};
	if (det_hdr)
		dl_iterate_phdr(note_module, &scan);
}

/* ------------------------------------------------------------------ */
/* the modes' operations (preload/mode.h) */

struct det_mode_ops det_ops;
/* The tables the modes registered (DET_MODE_REGISTER), bounds set by the linker. */
extern const struct det_mode_ops *const __start_det_modes[] DET_HIDDEN;
extern const struct det_mode_ops *const __stop_det_modes[] DET_HIDDEN;

/* Merge the modes' tables into det_ops, member by member (all are function
 * pointers); a member no mode filled stops the program here, not at its
 * first call. */
static void gather_modes(void)
{
	typedef void (*op_fn)(void);
	enum { SLOTS = sizeof(struct det_mode_ops) / sizeof(op_fn) };
	_Static_assert(sizeof(struct det_mode_ops) % sizeof(op_fn) == 0, "det_mode_ops holds function pointers only");
	for (const struct det_mode_ops *const *m = __start_det_modes; m < __stop_det_modes; m++)
		for (size_t i = 0; i < SLOTS; i++) {
			op_fn f;
			memcpy(&f, (const char *)*m + i * sizeof(f), sizeof(f));
			if (f)
				memcpy((char *)&det_ops + i * sizeof(f), &f, sizeof(f));
		}
	for (size_t i = 0; i < SLOTS; i++) {
		op_fn f;
		memcpy(&f, (const char *)&det_ops + i * sizeof(f), sizeof(f));
		if (!f)
			det_fatal("libdet.so: no mode fills operation %zu of struct det_mode_ops", i);
	}
}

static void init_region(void);

void det_init(void)
{
	int st = atomic_load_explicit(&init_state, memory_order_acquire);
	if (det_likely(st == 2))
		return;
	if (initialising)
		return; /* an interposed call made by det_init itself */
	int expected = 0;
	if (!atomic_compare_exchange_strong(&init_state, &expected, 1)) {
		while (atomic_load_explicit(&init_state, memory_order_acquire) != 2)
			__builtin_ia32_pause();
		return;
	}
	initialising = 1;
	det_call_on_boot_stack(init_region);
	initialising = 0;
	atomic_store_explicit(&init_state, 2, memory_order_release);
}

/* det_init's work, on det's boot stack (preload/stack.c): it runs other
 * code in each mode, which on the program's stack would leave mode-dependent
 * bytes where main's deepest frames later find their uninitialised locals. */
static void init_region(void)
{
	gather_modes();
	resolve_real();
	det_debug = getenv("DET_DEBUG") != NULL;
	map_region();
	if (det_hdr) {
		det_signals_init();
		det_atomics_init(); /* (before the program's code runs: its atomics trap) */
		det_syscalls_init(); /* (and its raw futex calls) */
		det_stdio_reads_init();
		/* the program itself, or one of its children (preload/process.c) */
		if (det_process_attach()) {
			det_note_modules();
			det_find_unwinder(); /* (a C++ program has it from the start) */
			det_hdr->tsc0 = det_now();
			det_hdr->mono0 = mono_ns();
			det_thread_attach(&det_tls, 0);
			atomic_store(&det_hdr->attached, (uint32_t)det_sys(SYS_getpid, 0, 0, 0, 0, 0, 0));
		}
	}
}

__attribute__((constructor)) static void det_ctor(void)
{
	det_init();
}

/* ------------------------------------------------------------------ */
/* threads */

void det_thread_attach(struct det_thread *t, uint32_t num)
{
	struct det_shm_header *h = det_hdr;
	if (num >= h->max_threads)
		det_fatal("too many threads: T%u (this run allows %u, detrec --max-threads raises it)", num,
			  h->max_threads);
	det_stack_attach(num); /* (stack.c: det's work runs off the program's stack) */
	t->num = num;
	t->slot = det_shm_slot(h, num);
	t->idx = 0;
	t->slot->num = num;
	if (det_mode == DET_MODE_RECORD)
		t->slot->proc = det_proc; /* (replay: from the trace) */
	t->slot->ktid = (int32_t)det_sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	t->slot->pthread = (uint64_t)pthread_self();
	if (det_mode == DET_MODE_RECORD) {
		det_ops.rec_claim_ring(t);
		if (det_strict || det_chaos)
			t->rng = (det_hdr->chaos_seed ^ (0x9E3779B97F4A7C15ull * (num + 1))) | 1;
		if (det_strict)
			det_ops.strict_start(t);
		if (num == 0) {
			/* T0's object: the main thread's handle. */
			t->active = 1;
			t->slot->obj = det_obj(t, (void *)pthread_self(), DET_OBJ_THREAD);
			t->active = 0;
			/* Publish the object now: T0 may never have an event. */
			atomic_store_explicit(&t->slot->head, t->head, memory_order_release);
			atomic_fetch_add(&h->clock, DET_THREAD_ONE);
		}
	} else {
		det_ops.replay_attach(t);
	}
	atomic_store(&t->slot->state, DET_TS_RUNNING);
	t->active = 1;
	if (det_mode == DET_MODE_REPLAY)
		det_replay_signals_attached(t);
}

void det_thread_exit(struct det_thread *t)
{
	t->exited = 1;
	atomic_store(&t->slot->state, DET_TS_EXITING);
	if (det_strict)
		det_ops.strict_release(t);
}

/* ------------------------------------------------------------------ */
/* objects: address -> id, open addressing with linear probing. Finding an
 * address takes no lock; claiming an entry for a new one does (obj_lock),
 * so that a deleted entry (a destroyed object's) is taken again without
 * two threads putting one address in two entries. In record, a destroyed
 * object's id is given back too, for the next new object of its kind: a
 * program that makes millions of objects over its life, a few thousand
 * at a time, stays within the table and within the ids a trace holds. */

static void obj_lock(void)
{
	DET_ATOMIC(uint32_t) *l = &det_hdr->obj_lock;
	uint32_t free_ = 0;
	while (!atomic_compare_exchange_weak_explicit(l, &free_, 1, memory_order_acquire, memory_order_relaxed)) {
		free_ = 0;
		__builtin_ia32_pause();
	}
}

static void obj_unlock(void)
{
	atomic_store_explicit(&det_hdr->obj_lock, 0, memory_order_release);
}

static __attribute__((noinline)) struct det_objent *obj_claim(uint64_t addr, int *fresh)
{
	struct det_objent *tab = det_shm_objects(det_hdr), *deleted = NULL;
	uint64_t mask = det_hdr->objects_cap - 1;
	obj_lock();
	for (uint64_t i = det_obj_hash(addr) & mask, n = 0; n <= mask; i = (i + 1) & mask, n++) {
		uint64_t cur = atomic_load_explicit(&tab[i].addr, memory_order_acquire);
		if (cur == addr) {
			obj_unlock(); /* another thread claimed it first */
			return &tab[i];
		}
		if (cur == DET_OBJ_DELETED && !deleted)
			deleted = &tab[i];
		if (cur == 0 || (n == mask && deleted)) {
			struct det_objent *e = deleted ? deleted : &tab[i];
			atomic_store_explicit(&e->id, 0, memory_order_relaxed); /* (a finder waits for the new one) */
			atomic_store_explicit(&e->addr, addr, memory_order_release);
			obj_unlock();
			*fresh = 1;
			return e;
		}
	}
	obj_unlock();
	det_fatal("the program has more synchronization objects alive at once than det records in a run (%u; every "
		  "pthread_*_init, and the first use of an address, makes one, until it is destroyed)",
		  det_hdr->objects_cap);
}

/* Delete an entry: deleted (a finder goes on past it), or empty when the
 * entry after it is (no address's probe passes it), and so the deleted ones
 * before it. Else a table that millions of objects went through, a few at
 * a time, has no empty entry left, and every miss reads all of it. Under
 * the lock, so that no claim fills the empty entry meanwhile. */
static int obj_delete(struct det_objent *e, uint64_t key)
{
	struct det_objent *tab = det_shm_objects(det_hdr);
	uint64_t mask = det_hdr->objects_cap - 1, i = (uint64_t)(e - tab);
	obj_lock();
	if (atomic_load_explicit(&e->addr, memory_order_relaxed) != key) {
		obj_unlock();
		return 0; /* another thread forgot it first */
	}
	if (atomic_load_explicit(&tab[(i + 1) & mask].addr, memory_order_relaxed) != 0) {
		atomic_store_explicit(&e->addr, DET_OBJ_DELETED, memory_order_release);
	} else {
		uint64_t n = 0;
		do {
			atomic_store_explicit(&tab[i].addr, 0, memory_order_release);
			i = (i - 1) & mask;
		} while (++n <= mask && atomic_load_explicit(&tab[i].addr, memory_order_relaxed) == DET_OBJ_DELETED);
	}
	obj_unlock();
	return 1;
}

/* Find addr, or claim an entry for it (*fresh = 1). */
static struct det_objent *obj_lookup(uint64_t addr, int create, int *fresh)
{
	struct det_objent *tab = det_shm_objects(det_hdr);
	uint64_t mask = det_hdr->objects_cap - 1;
	*fresh = 0;
	for (uint64_t i = det_obj_hash(addr) & mask, n = 0; n <= mask; i = (i + 1) & mask, n++) {
		uint64_t cur = atomic_load_explicit(&tab[i].addr, memory_order_acquire);
		if (cur == addr)
			return &tab[i];
		if (cur == 0)
			break;
	}
	return create ? obj_claim(addr, fresh) : NULL;
}

static uint32_t objent_id(struct det_objent *e)
{
	uint32_t id;
	/* Another thread may have claimed the entry and not stored the id yet. */
	while ((id = atomic_load_explicit(&e->id, memory_order_acquire)) == 0)
		__builtin_ia32_pause();
	return id;
}

static uint32_t *free_next(uint32_t id)
{
	return &((struct det_objseq *)((char *)det_hdr + det_hdr->objseq_off))[id].free_next;
}

/* Record: an id for a new object of this kind: the oldest given back if more
 * than DET_OBJ_QUARANTINE wait, else the next. */
static uint32_t obj_new_id(enum det_objkind kind)
{
	uint32_t id = 0;
	if ((unsigned)kind < DET_OBJ_FREE_KINDS && det_hdr->obj_free[kind].count > DET_OBJ_QUARANTINE) {
		struct det_obj_free *q = &det_hdr->obj_free[kind];
		obj_lock();
		if (q->count > DET_OBJ_QUARANTINE) {
			id = q->head;
			q->head = *free_next(id);
			q->count--;
		}
		obj_unlock();
	}
	return id ? id : atomic_fetch_add(&det_hdr->next_obj, 1) + 1;
}

/* Record: give a destroyed object's id back. Called after its last event
 * took its place on it: a new object given the id comes after that event
 * in the id's order, in the recording and in its replay. */
static void obj_give_back(uint32_t id, uint32_t kind)
{
	if (kind >= DET_OBJ_FREE_KINDS || id >= det_hdr->objseq_count)
		return;
	struct det_obj_free *q = &det_hdr->obj_free[kind];
	obj_lock();
	*free_next(id) = 0;
	if (q->count++)
		*free_next(q->tail) = id;
	else
		q->head = id;
	q->tail = id;
	obj_unlock();
}

uint32_t det_obj(struct det_thread *t, const void *addr, enum det_objkind kind)
{
	if (!addr)
		return 0;
	int fresh;
	struct det_objent *e = obj_lookup(det_obj_key_of(addr, kind), 1, &fresh);
	if (det_likely(!fresh))
		return objent_id(e);
	uint32_t id = obj_new_id(kind);
	e->kind = kind;
	atomic_store_explicit(&e->id, id, memory_order_release);
	det_ops.rec_object(t, id, kind, (uint64_t)(uintptr_t)addr);
	return id;
}

/* The key addr is known by in the object table: the bare address for a
 * process-shared object (one object in every process), else this
 * process's key. Strict mode's waits use it, so that a waiter in one
 * process is woken by a release in another. */
uint64_t det_obj_shared_key(const void *addr)
{
	int fresh;
	uint64_t mine = det_obj_key(addr), bare = (uint64_t)(uintptr_t)addr & ((1ull << 48) - 1);
	if (!obj_lookup(mine, 0, &fresh) && obj_lookup(bare, 0, &fresh))
		return bare;
	return mine;
}

uint32_t det_obj_find(const void *addr)
{
	int fresh;
	struct det_objent *e;
	if (!addr || !det_hdr)
		return 0;
	e = obj_lookup(det_obj_key(addr), 0, &fresh);
	if (!e) /* a process-shared one */
		e = obj_lookup((uint64_t)(uintptr_t)addr & ((1ull << 48) - 1), 0, &fresh);
	return e ? objent_id(e) : 0;
}

/* Replay: recorded object id -> the address it is bound to in this run. */
static _Atomic uint64_t *objrev(uint32_t id)
{
	if (det_mode != DET_MODE_REPLAY || id == 0 || id > det_hdr->objrev_count)
		return NULL;
	return (_Atomic uint64_t *)((char *)det_hdr + det_hdr->objrev_off) + id;
}

void det_obj_forget(const void *addr, int destroyed)
{
	int fresh;
	struct det_objent *e;
	if (!addr || !det_hdr)
		return;
	uint64_t key = det_obj_key(addr);
	e = obj_lookup(key, 0, &fresh);
	if (!e) /* a process-shared one */
		e = obj_lookup(key = (uint64_t)(uintptr_t)addr, 0, &fresh);
	if (!e)
		return;
	uint32_t id = objent_id(e), kind = e->kind;
	_Atomic uint64_t *rev = objrev(id);
	if (rev)
		atomic_store(rev, 0);
	if (obj_delete(e, key) && destroyed && det_mode == DET_MODE_RECORD)
		obj_give_back(id, kind);
}

void det_obj_bind(const void *addr, uint32_t id, enum det_objkind kind)
{
	int fresh;
	uint64_t key = det_obj_key_of(addr, kind);
	struct det_objent *e = obj_lookup(key, 1, &fresh);
	e->kind = kind;
	atomic_store_explicit(&e->id, id, memory_order_release);
	_Atomic uint64_t *rev = objrev(id);
	if (rev)
		atomic_store(rev, key);
}

/* Replay: is addr the object the recording calls `want`? The first time an
 * address meets a recorded id, they are bound for the object's lifetime. */
int det_obj_match(const void *addr, uint32_t want, enum det_objkind kind)
{
	int fresh;
	if (!addr)
		return want == 0;
	uint64_t a = det_obj_key_of(addr, kind);
	struct det_objent *e = obj_lookup(a, 0, &fresh);
	if (e)
		return objent_id(e) == want;
	_Atomic uint64_t *rev = objrev(want);
	if (!rev)
		return 0;
	uint64_t bound = atomic_load(rev);
	if (bound && bound != a)
		return 0; /* the recorded object lives elsewhere in this run */
	e = obj_lookup(a, 1, &fresh);
	if (!fresh)
		return objent_id(e) == want;
	e->kind = kind;
	atomic_store_explicit(&e->id, want, memory_order_release);
	atomic_store(rev, a);
	/* a thread parked wanting this object before it had its id says so now
	 * (its own refresh may not run: under gdb everything stops at the end) */
	for (uint32_t i = 0; i < det_hdr->threads_recorded; i++) {
		struct det_slot *s = det_shm_slot(det_hdr, i);
		if (s->blocked_addr == a && !s->blocked_obj)
			s->blocked_obj = want;
	}
	return 1;
}
