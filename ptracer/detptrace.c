/*
 * ptracer/detptrace.c - build/detptrace, the supervisor of `detrec --ptrace`
 * and of the replay of its traces: it sees a program's system calls at the
 * kernel boundary (seccomp-bpf + ptrace), so it records programs libdet.so
 * cannot enter (statically linked ones) and raw `syscall` instructions.
 *
 *   detptrace record LOG RESULT SEED -- PATH ARGV0 ARGS...
 *   detptrace replay|replay-cut LOG RESULT -- PATH ARGV0 ARGS...
 *   (replay-cut: the recording was stopped, by a timeout: so is the replay,
 *   once its events are done and a thread wants another turn, or 2 s later)
 *
 * How it works:
 *  - The program is forked under PTRACE_TRACEME with a seccomp filter that
 *    returns SECCOMP_RET_TRACE for the calls of traced_calls[] and
 *    SECCOMP_RET_ALLOW for every other call (no stop, no cost).
 *  - Threads are serialized as in strict mode: one thread (the holder) runs
 *    the program's code at a time; at each traced call it gives the turn up,
 *    and the next holder is chosen among the threads that are ready (at
 *    random from SEED when recording; the recorded order when replaying).
 *    A call that waits (a futex wait, a sleep, poll, a read, wait4, ...) gives the turn up and runs in the kernel
 *    meanwhile: its thread becomes ready at its syscall-exit stop. Any other
 *    traced call (a write, a futex wake) keeps the turn until it is over
 *    (its exit stop) or blocks after all (its thread sleeps in the kernel,
 *    as a write to a full pipe), and an exit keeps it until the thread is a
 *    zombie (its tid word cleared, its joiners woken): what the kernel does
 *    for one thread at another's request cannot race with a third's code.
 *    The order in which threads take the turn is the schedule, one event
 *    each.
 *  - Inputs (clock_gettime, gettimeofday, time, getpid, getppid, gettid,
 *    getrandom) are made by the supervisor at the seccomp stop and written
 *    into the program (the call is skipped: orig_rax = -1); read/pread64/
 *    recvfrom of anything but a regular file run and their bytes are kept.
 *    Replay injects all of these the same way; everything else traced runs
 *    again in its recorded turn and is checked (its kind and aux; a regular
 *    file's read also by its length and a hash of its bytes; a write by its
 *    count): the first mismatch ends the replay with one line in RESULT.
 *  - The vDSO is hidden (its AT_SYSINFO_EHDR auxv entry becomes AT_IGNORE at
 *    every exec), so libc and Go make their clock calls as system calls,
 *    which the filter sees; the 16 bytes of AT_RANDOM are an input (Go's
 *    runtime seeds its randomness with them). rdtsc is not seen.
 *  - Asynchronous signals (a timer's, a kill's, Go's preemption) are events:
 *    recording takes one where the kernel stops the holder to deliver it
 *    (thread; signal | where, include/det/shm.h DET_SIG_*: plain before the
 *    thread ran code since its grant, IN_WAIT cutting short the call it was
 *    granted after, UNANCHORED in its code; si_code; sender pid, uid,
 *    value), at its place in the schedule; replay drops
 *    the program's own signals and sends each recorded one (tgkill) to its
 *    thread just before that thread goes on after the event before it, so
 *    it is delivered before the thread runs any code, and a call it cut
 *    short when recorded (IN_WAIT) is cut short again; a call the kernel
 *    started again (a signal woke the thread and went to another) is two
 *    events in both.
 *    Exact for a signal that came while its thread was stopped or in a
 *    system call (the common case: a traced thread spends its time there);
 *    one that came while the thread ran its own code (UNANCHORED) is
 *    delivered as the thread next makes a traced call, before it (no
 *    instruction counter here, as rr has: the handler may see the thread's
 *    code further on than when recorded).
 *    Faults (SIGSEGV, SIGFPE, ... of the thread's own instruction) and
 *    job-control stops are delivered as they come, not recorded.
 *  - Child processes (fork, vfork) are traced too, since the filter they
 *    inherit needs a tracer, but run untouched: every stop of theirs goes
 *    on at once; they are neither serialized nor recorded.
 *
 * Rules of this file:
 *  - It uses include/det only (the event kinds); nothing in det links it:
 *    det.record.ptrace and det.replay.ptrace run it and read LOG and RESULT.
 *  - LOG is a sequence of struct ptr_rec, each followed by len data bytes,
 *    in the schedule's order: record writes it, replay reads it (written by
 *    det.replay.ptrace from the trace). Its fields per kind are those of
 *    include/det/events.def, with ktid = the kernel thread id when recording.
 *  - RESULT is one line: "exited N", "signaled N", "stopped" (replay-cut at
 *    its end), "diverged WHY" or "error WHY".
 *    SIGTERM kills the program, which then ends as any end.
 *  - x86-64 only. Every failure of the supervisor itself is one line in RESULT.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "det/events.h"
#include "det/shm.h" /* (DET_SIG_*: where a SIGNAL event came) */

struct ptr_rec {
	uint32_t thread; /* T number: 0 = the first thread, then creation order */
	uint32_t kind;   /* enum det_kind */
	int64_t aux;
	int64_t result;
	uint64_t ns;     /* CLOCK_MONOTONIC when the event was taken (record) */
	uint32_t len;    /* data bytes that follow */
	uint32_t ktid;   /* kernel thread id (record), 0 in replay's log */
};

/* The calls the filter stops at. The inputs det records; then the calls
 * that may block (a blocked holder would stop every thread) or whose
 * order is visible (writes); then the ends of threads. */
static const int traced_calls[] = {
	SYS_clock_gettime, SYS_gettimeofday, SYS_time, SYS_getpid, SYS_getppid, SYS_gettid, SYS_getrandom,
	SYS_read, SYS_pread64, SYS_recvfrom,
	SYS_readv, SYS_preadv, SYS_preadv2, SYS_recvmsg, SYS_recvmmsg, SYS_write, SYS_writev, SYS_pwrite64,
	SYS_sendto, SYS_sendmsg, SYS_futex, SYS_nanosleep, SYS_clock_nanosleep, SYS_poll, SYS_ppoll, SYS_select,
	SYS_pselect6, SYS_epoll_wait, SYS_epoll_pwait, SYS_wait4, SYS_waitid, SYS_accept, SYS_accept4, SYS_connect,
	SYS_sched_yield, SYS_pause, SYS_rt_sigsuspend, SYS_rt_sigtimedwait, SYS_flock, SYS_msgrcv,
	SYS_exit, SYS_exit_group,
};

enum state { ST_NONE, ST_RUN, ST_KERNEL, ST_READY, ST_EXITING, ST_GONE };
enum action { ACT_START, ACT_FINISH, ACT_INPUT };

struct thread {
	pid_t tid;
	int num;          /* -1 until its creator's clone stop names it */
	int seen;         /* its first stop came */
	enum state state;
	enum action action;
	struct user_regs_struct regs; /* at its stop */
	long sysno;       /* of the call it is in */
	int regular;      /* that call reads a regular file */
	int free;         /* a thread of a child process: runs untouched (not serialized, not recorded) */
	int expect_sig;   /* replay: the recorded signal made pending for it, not delivered yet */
	int restarting;   /* replay: its call, cut short by a signal replay drops, starts again */
	int resend;       /* replay: expect_sig came before its call started again: send it at the entry */
	int fresh;        /* record: granted, and no stop of its since (regs: as granted) */
};

#define MAX_THREADS 4096
static struct thread threads[MAX_THREADS];
static int nthreads;      /* entries used */
static int numbered;      /* T numbers given */
static struct thread *holder;
static pid_t leader;
static int replaying;
static int stop_at_end; /* replay-cut */
static FILE *logf;
static const char *result_path;
static uint64_t rng;
static uint64_t events_done;
static int group_exiting; /* exit_group was called: no more turns, every thread dies */

/* Replay's schedule, from LOG. */
static struct ptr_rec *sched;
static unsigned char **sched_data;
static uint64_t sched_len;

static void finish(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void finish(const char *fmt, ...)
{
	FILE *f = fopen(result_path, "w");
	va_list ap;
	va_start(ap, fmt);
	if (f) {
		vfprintf(f, fmt, ap);
		fputc('\n', f);
		fclose(f);
	}
	va_end(ap);
	if (logf && fclose(logf) != 0 && f)
		f = NULL;
	if (leader > 0)
		kill(leader, SIGKILL); /* (PTRACE_O_EXITKILL too) */
	exit(f ? 0 : 1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct thread *find(pid_t tid)
{
	for (int i = 0; i < nthreads; i++)
		if (threads[i].tid == tid && threads[i].state != ST_GONE)
			return &threads[i];
	return NULL;
}

static struct thread *add(pid_t tid)
{
	if (nthreads == MAX_THREADS)
		finish("error more than %d threads", MAX_THREADS);
	struct thread *t = &threads[nthreads++];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	t->num = -1;
	t->state = ST_NONE;
	return t;
}

static struct thread *by_num(int num)
{
	for (int i = 0; i < nthreads; i++)
		if (threads[i].num == num)
			return &threads[i];
	return NULL;
}

/* ---- the program's memory and registers ---- */

static int mem_read(pid_t tid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
	return len == 0 || process_vm_readv(tid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

static int mem_write(pid_t tid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec local = {(void *)buf, len}, remote = {(void *)(uintptr_t)addr, len};
	return len == 0 || process_vm_writev(tid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

static void get_regs(struct thread *t)
{
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &t->regs) != 0)
		finish("error PTRACE_GETREGS of thread %d: %s", t->tid, strerror(errno));
}

static void resume(struct thread *t, int request, int sig)
{
	/* (ESRCH: the thread was killed meanwhile, by exit_group: its exit is reported next) */
	if (ptrace(request, t->tid, 0, (void *)(long)sig) != 0 && errno != ESRCH)
		finish("error resuming thread %d: %s", t->tid, strerror(errno));
}

/* ---- what a call is, as an event ---- */

static int is_cpu_clock(long clk)
{
	return clk < 0 || clk == CLOCK_PROCESS_CPUTIME_ID || clk == CLOCK_THREAD_CPUTIME_ID;
}

/* An input the supervisor makes itself (record) or injects (replay). */
static int supervisor_input(long sysno, const struct user_regs_struct *r)
{
	switch (sysno) {
	case SYS_clock_gettime:
		return !is_cpu_clock((long)r->rdi);
	case SYS_gettimeofday: case SYS_time: case SYS_getpid: case SYS_getppid: case SYS_gettid: case SYS_getrandom:
		return 1;
	default:
		return 0;
	}
}

static int is_read(long sysno)
{
	return sysno == SYS_read || sysno == SYS_pread64 || sysno == SYS_recvfrom;
}

static int fd_is_regular(pid_t tid, long fd)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof path, "/proc/%d/fd/%ld", tid, fd);
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static uint32_t kind_of(const struct thread *t)
{
	switch (t->sysno) {
	case SYS_clock_gettime: return is_cpu_clock((long)t->regs.rdi) ? DET_EV_SYSCALL : DET_EV_CLOCK_GETTIME;
	case SYS_gettimeofday: return DET_EV_GETTIMEOFDAY;
	case SYS_time: return DET_EV_TIME;
	case SYS_getpid: return DET_EV_GETPID;
	case SYS_getppid: return DET_EV_GETPPID;
	case SYS_gettid: return DET_EV_GETTID;
	case SYS_getrandom: return DET_EV_GETRANDOM;
	case SYS_read: case SYS_pread64: case SYS_recvfrom: return t->regular ? DET_EV_FILE_READ : DET_EV_READ;
	default: return DET_EV_SYSCALL;
	}
}

static int64_t aux_of(const struct thread *t, uint32_t kind)
{
	switch (kind) {
	case DET_EV_CLOCK_GETTIME: return (int64_t)t->regs.rdi;
	case DET_EV_READ: case DET_EV_FILE_READ: return (int64_t)t->regs.rdi;
	case DET_EV_SYSCALL: return t->sysno;
	default: return 0;
	}
}

static const char *call_name(long sysno)
{
	switch (sysno) {
	case SYS_clock_gettime: return "clock_gettime"; case SYS_gettimeofday: return "gettimeofday";
	case SYS_time: return "time"; case SYS_getpid: return "getpid"; case SYS_getppid: return "getppid";
	case SYS_gettid: return "gettid"; case SYS_getrandom: return "getrandom"; case SYS_read: return "read";
	case SYS_pread64: return "pread64"; case SYS_recvfrom: return "recvfrom"; case SYS_write: return "write";
	case SYS_writev: return "writev"; case SYS_futex: return "futex"; case SYS_exit: return "exit";
	case SYS_exit_group: return "exit_group";
	default: return NULL;
	}
}

static const char *describe(uint32_t kind, int64_t aux, int64_t result)
{
	static char buf[2][128];
	static int which;
	char *b = buf[which ^= 1];
	switch (kind) {
	case DET_EV_SYSCALL: {
		const char *n = call_name((long)aux);
		if (n)
			snprintf(b, 128, "system call %s (%lld) = %lld", n, (long long)aux, (long long)result);
		else
			snprintf(b, 128, "system call %lld = %lld", (long long)aux, (long long)result);
		break;
	}
	case DET_EV_READ: snprintf(b, 128, "read of fd %lld (not a regular file) = %lld", (long long)aux, (long long)result); break;
	case DET_EV_FILE_READ: snprintf(b, 128, "read of fd %lld (a regular file) = %lld", (long long)aux, (long long)result); break;
	case DET_EV_THREAD_CREATE: snprintf(b, 128, "thread_create (T%lld)", (long long)aux); break;
	case DET_EV_THREAD_START: snprintf(b, 128, "thread_start"); break;
	case DET_EV_THREAD_EXIT: snprintf(b, 128, "thread_exit"); break;
	case DET_EV_CLOCK_GETTIME: snprintf(b, 128, "clock_gettime (clock %lld)", (long long)aux); break;
	case DET_EV_GETTIMEOFDAY: snprintf(b, 128, "gettimeofday"); break;
	case DET_EV_TIME: snprintf(b, 128, "time"); break;
	case DET_EV_GETPID: snprintf(b, 128, "getpid"); break;
	case DET_EV_GETPPID: snprintf(b, 128, "getppid"); break;
	case DET_EV_GETTID: snprintf(b, 128, "gettid"); break;
	case DET_EV_GETRANDOM: snprintf(b, 128, aux ? "AT_RANDOM" : "getrandom"); break;
	default: snprintf(b, 128, "event kind %u (aux %lld)", kind, (long long)aux); break;
	}
	return b;
}

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
	uint64_t h = 14695981039346656037ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

/* ---- events: taken (record) or checked against the schedule (replay) ---- */

static void diverged(uint64_t seq, int num, const char *fmt, ...) __attribute__((noreturn, format(printf, 3, 4)));
static void diverged(uint64_t seq, int num, const char *fmt, ...)
{
	char why[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	finish("diverged divergence at event %llu (T%d): %s", (unsigned long long)seq, num, why);
}

/* Record: append the event. Replay: check it is the next one of the
 * schedule (else the divergence) and return it. */
static const struct ptr_rec *event(struct thread *t, uint32_t kind, int64_t aux, int64_t result,
				   const void *data, uint32_t len, uint32_t ktid)
{
	uint64_t seq = events_done++;
	if (!replaying) {
		struct ptr_rec r = {(uint32_t)t->num, kind, aux, result, now_ns(), len, ktid};
		if (fwrite(&r, sizeof r, 1, logf) != 1 || (len && fwrite(data, 1, len, logf) != len))
			finish("error writing the log: %s", strerror(errno));
		return NULL;
	}
	if (seq >= sched_len && stop_at_end)
		finish("stopped");
	if (seq >= sched_len)
		diverged(seq, t->num, "the recording ended, the program went on: %s", describe(kind, aux, result));
	if (stop_at_end && seq + 1 == sched_len)
		alarm(2); /* (the program may block for ever past its last event, as when recorded) */
	const struct ptr_rec *r = &sched[seq];
	if (r->thread != (uint32_t)t->num)
		diverged(seq, t->num, "recorded T%u's %s, got %s", r->thread, describe(r->kind, r->aux, r->result),
			 describe(kind, aux, result));
	if (r->kind != kind || r->aux != aux)
		diverged(seq, t->num, "recorded %s, got %s", describe(r->kind, r->aux, r->result),
			 describe(kind, aux, result));
	return r;
}

/* ---- the supervisor's own inputs, written into the program ---- */

/* The call at t's seccomp stop is skipped and returns rax. */
static void skip_call(struct thread *t, int64_t rax)
{
	t->regs.orig_rax = (unsigned long long)-1;
	t->regs.rax = (unsigned long long)rax;
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &t->regs) != 0)
		finish("error PTRACE_SETREGS of thread %d: %s", t->tid, strerror(errno));
}

/* Where the call's out-bytes go, and how many at most. */
static uint64_t out_buffer(const struct thread *t, uint64_t *max)
{
	const struct user_regs_struct *r = &t->regs;
	switch (t->sysno) {
	case SYS_getrandom: *max = r->rsi; return r->rdi;
	case SYS_read: case SYS_pread64: case SYS_recvfrom: *max = r->rdx; return r->rsi;
	default: *max = 0; return 0;
	}
}

/* Record: make the input (the value a call would have returned), write it
 * into the program, take the event. Replay: the recorded one instead. */
static void input(struct thread *t)
{
	const struct user_regs_struct *r = &t->regs;
	uint32_t kind = kind_of(t);
	int64_t aux = aux_of(t, kind), result = 0;
	unsigned char *bytes = NULL;
	uint32_t len = 0;
	if (replaying) { /* (event() checks thread, kind and aux before the result is taken) */
		uint64_t seq = events_done, max;
		const struct ptr_rec *rec = event(t, kind, aux, 0, NULL, 0, 0);
		result = rec->result;
		bytes = sched_data[seq];
		len = rec->len;
		out_buffer(t, &max);
		if (len > max)
			diverged(seq, t->num, "recorded %u bytes, the buffer takes %llu", len, (unsigned long long)max);
	} else {
		switch (t->sysno) {
		case SYS_clock_gettime: {
			struct timespec ts;
			result = clock_gettime((clockid_t)r->rdi, &ts) == 0
				? (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec : -errno;
			break;
		}
		case SYS_gettimeofday: {
			struct timeval tv;
			gettimeofday(&tv, NULL);
			result = (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
			break;
		}
		case SYS_time: result = time(NULL); break;
		case SYS_getpid: result = leader; break;
		case SYS_getppid: result = getpid(); break;
		case SYS_gettid: result = t->tid; break;
		case SYS_getrandom: {
			size_t n = r->rsi > (1u << 25) ? (1u << 25) : r->rsi;
			bytes = malloc(n ? n : 1);
			if (!bytes)
				finish("error out of memory");
			ssize_t got = getrandom(bytes, n, (unsigned)r->rdx);
			result = got < 0 ? -errno : got;
			len = got > 0 ? (uint32_t)got : 0;
			break;
		}
		}
	}
	/* into the program: what the call returns and writes */
	int64_t rax = result;
	switch (t->sysno) {
	case SYS_clock_gettime:
		if (result >= 0) {
			struct timespec ts = {result / 1000000000, result % 1000000000};
			rax = mem_write(t->tid, r->rsi, &ts, sizeof ts) == 0 ? 0 : -EFAULT;
		}
		break;
	case SYS_gettimeofday:
		rax = 0;
		if (r->rdi) {
			struct timeval tv = {result / 1000000, result % 1000000};
			if (mem_write(t->tid, r->rdi, &tv, sizeof tv) != 0)
				rax = -EFAULT;
		}
		if (r->rsi) {
			struct timezone tz = {0, 0};
			if (mem_write(t->tid, r->rsi, &tz, sizeof tz) != 0)
				rax = -EFAULT;
		}
		break;
	case SYS_time:
		if (r->rdi && mem_write(t->tid, r->rdi, &result, sizeof result) != 0)
			rax = -EFAULT;
		break;
	case SYS_getrandom:
		if (len && mem_write(t->tid, r->rdi, bytes, len) != 0)
			rax = -EFAULT;
		break;
	case SYS_read: case SYS_pread64: case SYS_recvfrom: /* (replay only: record ran it) */
		if (len && mem_write(t->tid, r->rsi, bytes, len) != 0)
			rax = -EFAULT;
		break;
	}
	if (!replaying) {
		event(t, kind, aux, result, bytes, len, (uint32_t)t->tid);
		free(bytes);
	}
	skip_call(t, rax);
}

/* A call that ran in the kernel is over (t at its syscall-exit stop). */
static void finished_call(struct thread *t)
{
	uint32_t kind = kind_of(t);
	int64_t aux = aux_of(t, kind), result = (int64_t)t->regs.rax;
	unsigned char *bytes = NULL;
	uint32_t len = 0;
	uint64_t hash = 0;
	if (kind == DET_EV_READ || kind == DET_EV_FILE_READ) {
		uint64_t max, addr = out_buffer(t, &max);
		if (result > 0 && (uint64_t)result <= max) {
			bytes = malloc((size_t)result);
			if (!bytes)
				finish("error out of memory");
			if (mem_read(t->tid, addr, bytes, (size_t)result) != 0)
				finish("error reading thread %d's memory: %s", t->tid, strerror(errno));
			len = (uint32_t)result;
		}
		if (kind == DET_EV_FILE_READ) {
			hash = fnv1a(bytes, len);
			free(bytes);
			bytes = (unsigned char *)&hash;
			len = sizeof hash;
		}
	}
	uint64_t seq = events_done;
	const struct ptr_rec *rec = event(t, kind, aux, result, bytes, len, (uint32_t)t->tid);
	if (rec) {
		int checked = kind == DET_EV_FILE_READ || t->sysno == SYS_write || t->sysno == SYS_writev ||
			      t->sysno == SYS_pwrite64;
		if (checked && rec->result != result)
			diverged(seq, t->num, "recorded %s, got %s", describe(rec->kind, rec->aux, rec->result),
				 describe(kind, aux, result));
		if (kind == DET_EV_FILE_READ && (rec->len != len || memcmp(sched_data[seq], bytes, len) != 0))
			diverged(seq, t->num, "%s: the bytes read differ from the recording's (the file changed?)",
				 describe(kind, aux, result));
	}
	if (kind == DET_EV_READ)
		free(bytes);
}

/* ---- signals ---- */

/* A fault of the thread's own instruction: it comes again by itself in
 * replay, at the same instruction (not an event). */
static int synchronous(int sig, const siginfo_t *si)
{
	switch (sig) {
	case SIGSEGV: case SIGBUS: case SIGFPE: case SIGILL: case SIGTRAP: case SIGSYS:
		return si->si_code > 0;
	default:
		return 0;
	}
}

static int job_control(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* A kernel restart code, which the exit stop of a call cut short shows
 * before the kernel starts the call again or makes it -EINTR. */
static int is_restart(int64_t result)
{
	return result == -512 || result == -513 || result == -514 || result == -516;
}

/* Is t at a syscall-exit stop (not the entry stop of a call started again)? */
static int at_exit(struct thread *t)
{
	struct __ptrace_syscall_info info;
	if (ptrace(PTRACE_GET_SYSCALL_INFO, t->tid, sizeof info, &info) <= 0)
		finish("error PTRACE_GET_SYSCALL_INFO of thread %d: %s", t->tid, strerror(errno));
	return info.op == PTRACE_SYSCALL_INFO_EXIT;
}

/* A result of a call a signal cut short (-EINTR, or one of the kernel's
 * restart codes, which the thread's exit stop shows before its handler). */
static int interrupted(int64_t result)
{
	return result == -EINTR || is_restart(result);
}

/* Replay: the schedule's next event of t (sched_len: none). */
static uint64_t next_of(const struct thread *t)
{
	uint64_t i = events_done;
	while (i < sched_len && sched[i].thread != (uint32_t)t->num)
		i++;
	return i;
}

/* Replay: did t's call, now over, end with a restart code when recorded,
 * the kernel starting it again without a handler (a signal of the process
 * woke t and went to another thread)? Then the call made again was a
 * second event (but restart_syscall's, which the filter does not see). */
static int restarted_when_recorded(const struct thread *t)
{
	uint64_t i = next_of(t);
	return i < sched_len && is_restart(sched[i].result) &&
	       !(i + 1 < sched_len && sched[i + 1].kind == DET_EV_SIGNAL && sched[i + 1].thread == (uint32_t)t->num &&
		 (sched[i + 1].aux & DET_SIG_IN_WAIT));
}

/* Replay: t is at the exit stop of a call; did a signal cut that call
 * short when recorded (its event's result says so, and the thread's
 * signal comes next: a process's signal may wake one thread and be
 * delivered to another, and the first one's call starts again)? */
static int cut_when_recorded(const struct thread *t)
{
	for (uint64_t i = events_done; i < sched_len; i++)
		if (sched[i].thread == (uint32_t)t->num)
			return sched[i].kind == kind_of(t) && sched[i].aux == aux_of(t, sched[i].kind) &&
			       interrupted(sched[i].result) && i + 1 < sched_len &&
			       sched[i + 1].kind == DET_EV_SIGNAL && sched[i + 1].thread == (uint32_t)t->num &&
			       (sched[i + 1].aux & DET_SIG_IN_WAIT);
	return 0;
}

/* Which signals send_due sends: those due as t goes on after its previous
 * event (not the ones that came in its code: they wait for its next call,
 * signal_before_call), only one that cut t's call short, or any. */
enum due { DUE_GOING_ON, DUE_IN_WAIT, DUE_ANY };

/* Replay: if the schedule's event `at` is a signal for t of the kind
 * `which`, make it pending (t is stopped, or in the call to cut short), so
 * that the kernel stops t to deliver it before t runs any of its code. */
static void send_due(struct thread *t, uint64_t at, enum due which)
{
	if (!replaying || at >= sched_len || t->expect_sig)
		return;
	const struct ptr_rec *r = &sched[at];
	if (r->kind != DET_EV_SIGNAL || r->thread != (uint32_t)t->num ||
	    (which == DUE_IN_WAIT && !(r->aux & DET_SIG_IN_WAIT)) ||
	    (which == DUE_GOING_ON && (r->aux & DET_SIG_UNANCHORED)))
		return;
	int sig = (int)(r->aux & DET_SIG_NUMBER);
	if (syscall(SYS_tgkill, leader, t->tid, sig) != 0)
		finish("error sending signal %d to thread %d: %s", sig, t->tid, strerror(errno));
	t->expect_sig = sig;
}

/* t stopped to be delivered sig. Recording: an asynchronous signal to the
 * holder is an event, then delivered. Replay: the recorded ones come from
 * send_due; the program's own (a timer's, another thread's kill) are
 * dropped: they came at other times than when recorded. */
static void signal_stop(struct thread *t, int sig, int fresh)
{
	siginfo_t si;
	memset(&si, 0, sizeof si);
	int req = t->state == ST_KERNEL ? PTRACE_SYSCALL : PTRACE_CONT;
	if (sig == SIGTRAP || ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si) != 0) { /* (a group stop has no siginfo) */
		resume(t, req, sig == SIGTRAP ? 0 : sig);
		return;
	}
	if (group_exiting || job_control(sig) || synchronous(sig, &si) ||
	    (!replaying && (t != holder || t->state != ST_RUN))) {
		resume(t, req, sig);
		return;
	}
	if (!replaying) {
		/* where: before its code ran (plain), cutting short the call it
		 * was granted after (IN_WAIT), or in its code (UNANCHORED) */
		struct user_regs_struct was = t->regs;
		get_regs(t);
		uint32_t where = DET_SIG_UNANCHORED;
		if (fresh && t->regs.rip == was.rip && t->regs.rax == was.rax)
			where = is_restart((int64_t)was.rax) ? DET_SIG_IN_WAIT : 0;
		struct {
			int32_t pid, uid;
			int64_t value;
		} from = {si.si_pid, (int32_t)si.si_uid, (int64_t)(intptr_t)si.si_value.sival_ptr};
		event(t, DET_EV_SIGNAL, (uint32_t)sig | where, si.si_code, &from, sizeof from, (uint32_t)t->tid);
	} else {
		if (sig == t->expect_sig && t->restarting) {
			t->resend = 1; /* (its call is to be cut short: it comes again at the call's entry) */
			resume(t, req, 0);
			return;
		}
		if (sig != t->expect_sig || t != holder || t->state != ST_RUN) {
			resume(t, req, 0);
			return;
		}
		t->expect_sig = 0;
		/* (where it came is the recording's word: the kernel stopped t
		 * for it before its code ran, as send_due wanted) */
		int64_t aux = events_done < sched_len && sched[events_done].kind == DET_EV_SIGNAL ?
			sched[events_done].aux : sig;
		event(t, DET_EV_SIGNAL, (aux & DET_SIG_NUMBER) == sig ? aux : sig, 0, NULL, 0, 0);
		send_due(t, events_done, DUE_GOING_ON); /* (another one right after) */
	}
	resume(t, req, sig);
}

/* ---- the turn ---- */

static void grant(struct thread *t)
{
	switch (t->action) {
	case ACT_START: {
		event(t, DET_EV_THREAD_START, 0, 0, NULL, 0, (uint32_t)t->tid);
		break;
	}
	case ACT_FINISH: {
		/* (a call the kernel started again when recorded, which ended at
		 * once here: the second call's event is taken from the same stop,
		 * in its turn) */
		int again = replaying && restarted_when_recorded(t) && next_of(t) == events_done &&
			    sched[events_done].result != -516 && !is_restart((int64_t)t->regs.rax);
		finished_call(t);
		if (again) {
			uint64_t i = next_of(t);
			if (!(i + 1 < sched_len && sched[i + 1].kind == DET_EV_SIGNAL &&
			      sched[i + 1].thread == (uint32_t)t->num && (sched[i + 1].aux & DET_SIG_IN_WAIT))) {
				t->state = ST_READY;
				holder = NULL;
				return;
			}
			/* the call made again was cut short by a signal: it is made
			 * again here too (to be cut short in its turn) */
			t->regs.rax = (unsigned long long)t->sysno;
			t->regs.rip -= 2; /* (syscall is 2 bytes) */
			if (ptrace(PTRACE_SETREGS, t->tid, 0, &t->regs) != 0)
				finish("error PTRACE_SETREGS of thread %d: %s", t->tid, strerror(errno));
		}
		break;
	}
	case ACT_INPUT:
		input(t);
		break;
	}
	t->state = ST_RUN;
	holder = t;
	t->fresh = 1;
	send_due(t, events_done, DUE_GOING_ON);
	resume(t, PTRACE_CONT, 0);
}

static int live_threads(void)
{
	int n = 0;
	for (int i = 0; i < nthreads; i++)
		n += threads[i].state != ST_GONE;
	return n;
}

/* The turn is free: give it to a ready thread, or wait for one. */
static void next_holder(void)
{
	struct thread *ready[MAX_THREADS];
	int n = 0, waiting = 0;
	if (group_exiting)
		return;
	for (int i = 0; i < nthreads; i++) {
		struct thread *t = &threads[i];
		if (t->free)
			continue;
		if (t->state == ST_READY && t->num >= 0)
			ready[n++] = t;
		else if (t->state == ST_KERNEL || t->state == ST_NONE || (t->state == ST_READY && t->num < 0))
			waiting++;
	}
	if (!replaying) {
		if (n == 0)
			return;
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		grant(ready[rng % (uint64_t)n]);
		return;
	}
	if (events_done >= sched_len) {
		if (stop_at_end && n > 0)
			finish("stopped");
		if (n > 0) /* (event() says how the program went on) */
			grant(ready[0]);
		return;
	}
	struct thread *want = by_num((int)sched[events_done].thread);
	if (want && want->state == ST_KERNEL && interrupted(sched[events_done].result))
		send_due(want, events_done + 1, DUE_IN_WAIT); /* (a signal cut its call short when recorded) */
	if (want && want->state == ST_READY) {
		grant(want);
		return;
	}
	if (waiting == 0 && n > 0) /* every thread waits for its turn, and the recorded one cannot come */
		diverged(events_done, (int)sched[events_done].thread, "recorded %s, but the thread %s",
			 describe(sched[events_done].kind, sched[events_done].aux, sched[events_done].result),
			 want == NULL ? "was never created" : want->state == ST_GONE ? "has exited" :
			 "waits elsewhere");
}

/* ---- stops ---- */

/* A call that waits for another thread or the world, as its purpose: its
 * thread gives the turn up at once (when it ends is the kernel's business,
 * the order of its exit stop is the schedule's). */
static int waits(const struct thread *t)
{
	switch (t->sysno) {
	case SYS_futex:
		switch ((int)t->regs.rsi & FUTEX_CMD_MASK) {
		case FUTEX_WAIT: case FUTEX_WAIT_BITSET: case FUTEX_LOCK_PI: case FUTEX_LOCK_PI2:
		case FUTEX_WAIT_REQUEUE_PI:
			return 1;
		default:
			return 0;
		}
	case SYS_write: case SYS_writev: case SYS_pwrite64: case SYS_sendto: case SYS_sendmsg:
	case SYS_sched_yield:
		return 0;
	default:
		return 1;
	}
}

/* Replay, t at the seccomp stop of its next call: a signal that came in its
 * code since its previous event (UNANCHORED) is delivered now, before the
 * call: the call is skipped with t's instruction pointer back on it, so
 * that t makes it again once its handler is done. 1: so done. */
static int signal_before_call(struct thread *t)
{
	if (!replaying || t->expect_sig || events_done >= sched_len)
		return 0;
	const struct ptr_rec *r = &sched[events_done];
	if (r->kind != DET_EV_SIGNAL || r->thread != (uint32_t)t->num || !(r->aux & DET_SIG_UNANCHORED))
		return 0;
	t->regs.orig_rax = (unsigned long long)-1;
	t->regs.rax = (unsigned long long)t->sysno;
	t->regs.rip -= 2; /* (syscall is 2 bytes) */
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &t->regs) != 0)
		finish("error PTRACE_SETREGS of thread %d: %s", t->tid, strerror(errno));
	send_due(t, events_done, DUE_ANY);
	resume(t, PTRACE_CONT, 0);
	return 1;
}

static void seccomp_stop(struct thread *t)
{
	get_regs(t);
	t->sysno = (long)t->regs.orig_rax;
	if (t != holder)
		finish("error thread %d stopped at a system call without the turn", t->tid);
	if (signal_before_call(t))
		return;
	if (t->sysno == SYS_exit || t->sysno == SYS_exit_group) {
		if (t->sysno == SYS_exit) /* (the turn stays until the exit is over: holder_in_kernel) */
			event(t, DET_EV_THREAD_EXIT, 0, 0, NULL, 0, (uint32_t)t->tid);
		else {
			event(t, DET_EV_SYSCALL, SYS_exit_group, (int64_t)t->regs.rdi, NULL, 0, (uint32_t)t->tid);
			group_exiting = 1;
			holder = NULL;
		}
		t->state = ST_EXITING;
		resume(t, PTRACE_CONT, 0);
		return;
	}
	t->regular = is_read(t->sysno) && fd_is_regular(t->tid, (long)t->regs.rdi);
	int injected = supervisor_input(t->sysno, &t->regs) || (replaying && kind_of(t) == DET_EV_READ);
	if (injected) {
		holder = NULL;
		t->state = ST_READY;
		t->action = ACT_INPUT;
	} else { /* (else the turn stays until the call is over or blocks: holder_in_kernel) */
		if (waits(t))
			holder = NULL;
		t->state = ST_KERNEL;
		resume(t, PTRACE_SYSCALL, 0);
	}
}

/* The state letter of /proc/TID/stat (R, S, D, t, Z, ...), 0 if it is gone. */
static char thread_state(pid_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *paren = strrchr(buf, ')'); /* (the name in parentheses may hold anything) */
	return paren && paren[1] == ' ' ? paren[2] : 0;
}

/* The holder is in the kernel, in a traced call or its exit, and no stop
 * came: the turn is free once the call blocks (the thread sleeps
 * interruptibly: it waits for another thread or the world) or the exit is
 * over (a zombie: mm_release cleared its tid word and woke its joiners).
 * Else the supervisor looks again a little later. */
static void holder_in_kernel(void)
{
	char st = thread_state(holder->tid);
	if (holder->state == ST_KERNEL ? st == 'S' : st == 'Z' || st == 'X' || st == 0) {
		holder = NULL;
		return;
	}
	struct timespec pause = {0, 20000};
	nanosleep(&pause, NULL);
}

/* At an exec (t is the holder): the vDSO's auxv entry becomes AT_IGNORE
 * (see the header), and the 16 bytes AT_RANDOM points to are an input. */
static void new_image(struct thread *t)
{
	get_regs(t);
	uint64_t sp = t->regs.rsp, argc, at_random = 0;
	if (mem_read(t->tid, sp, &argc, 8) != 0)
		finish("error reading the new image's stack: %s", strerror(errno));
	uint64_t p = sp + 8 + (argc + 1) * 8, word = 1;
	while (word != 0) { /* the environment, to its NULL */
		if (mem_read(t->tid, p, &word, 8) != 0)
			finish("error reading the new image's stack: %s", strerror(errno));
		p += 8;
	}
	for (uint64_t pair[2] = {1, 0}; pair[0] != 0; p += 16) {
		if (mem_read(t->tid, p, pair, 16) != 0)
			finish("error reading the new image's auxv: %s", strerror(errno));
		if (pair[0] == 33 /* AT_SYSINFO_EHDR */) {
			uint64_t ignore = 1; /* AT_IGNORE */
			if (mem_write(t->tid, p, &ignore, 8) != 0)
				finish("error hiding the vDSO: %s", strerror(errno));
		} else if (pair[0] == 25 /* AT_RANDOM */) {
			at_random = pair[1];
		}
	}
	if (!at_random)
		return;
	unsigned char bytes[16];
	uint64_t seq = events_done;
	if (replaying) {
		const struct ptr_rec *rec = event(t, DET_EV_GETRANDOM, DET_AUX_GETRANDOM_AT_RANDOM, 16, NULL, 0, 0);
		if (rec->len != sizeof bytes)
			diverged(seq, t->num, "the recorded AT_RANDOM bytes are %u, not 16", rec->len);
		memcpy(bytes, sched_data[seq], sizeof bytes);
		if (mem_write(t->tid, at_random, bytes, sizeof bytes) != 0)
			finish("error writing AT_RANDOM: %s", strerror(errno));
	} else {
		if (mem_read(t->tid, at_random, bytes, sizeof bytes) != 0)
			finish("error reading AT_RANDOM: %s", strerror(errno));
		event(t, DET_EV_GETRANDOM, DET_AUX_GETRANDOM_AT_RANDOM, 16, bytes, sizeof bytes, (uint32_t)t->tid);
	}
}

static pid_t tgid_of(pid_t tid)
{
	char path[64], line[128];
	snprintf(path, sizeof path, "/proc/%d/status", tid);
	FILE *f = fopen(path, "re");
	pid_t tgid = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	if (f)
		fclose(f);
	return tgid;
}

static void stopped(pid_t tid, int status)
{
	struct thread *t = find(tid);
	int sig = WSTOPSIG(status), ev = status >> 16;
	int fresh = t && t->fresh;
	if (t)
		t->fresh = 0;
	if (!t) { /* a new thread's first stop, before its creator's clone or fork stop */
		t = add(tid);
		t->seen = 1;
		t->free = tgid_of(tid) != leader;
		t->state = t->free ? ST_RUN : ST_READY;
		t->action = ACT_START;
		if (t->free)
			resume(t, PTRACE_CONT, 0);
		return;
	}
	if (t->free) { /* a child process: every stop just goes on */
		int first = sig == SIGSTOP && !t->seen;
		t->seen = 1;
		resume(t, PTRACE_CONT, ev || first || sig == SIGTRAP ? 0 : sig);
		return;
	}
	if (ev == PTRACE_EVENT_FORK || ev == PTRACE_EVENT_VFORK) {
		unsigned long child;
		if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &child) != 0)
			finish("error PTRACE_GETEVENTMSG: %s", strerror(errno));
		if (!find((pid_t)child)) { /* (else its first stop came first, and it runs) */
			struct thread *c = add((pid_t)child);
			c->free = 1;
			c->state = ST_RUN;
		}
		resume(t, PTRACE_CONT, 0);
		return;
	}
	if (ev == PTRACE_EVENT_SECCOMP && t->restarting) {
		resume(t, PTRACE_SYSCALL, 0); /* (the same call, started again: still in the kernel) */
	} else if (ev == PTRACE_EVENT_SECCOMP) {
		seccomp_stop(t);
	} else if (sig == (SIGTRAP | 0x80)) {
		if (t->state != ST_KERNEL) { /* (a call restarted: not ours) */
			resume(t, PTRACE_CONT, 0);
			return;
		}
		get_regs(t);
		if (t->restarting && !at_exit(t)) { /* (the entry of its call again) */
			if (t->resend && syscall(SYS_tgkill, leader, t->tid, t->expect_sig) != 0)
				finish("error sending signal %d to thread %d: %s", t->expect_sig, t->tid, strerror(errno));
			t->resend = 0;
			resume(t, PTRACE_SYSCALL, 0);
			return;
		}
		t->restarting = 0;
		if (replaying && !t->expect_sig && is_restart((int64_t)t->regs.rax) && !restarted_when_recorded(t)) {
			/* a signal of the program's own cut the call short, which
			 * replay drops: the kernel starts the call again */
			t->restarting = 1;
			resume(t, PTRACE_SYSCALL, 0);
			return;
		}
		if (replaying && !interrupted((int64_t)t->regs.rax) && cut_when_recorded(t)) {
			/* it ended before its signal came (a sleep ran out before
			 * its turn, or just as it was sent): it starts again, and
			 * waits for it */
			t->regs.rax = (unsigned long long)t->sysno; /* (not orig_rax: restart_syscall's, maybe) */
			t->regs.rip -= 2; /* (syscall is 2 bytes) */
			if (ptrace(PTRACE_SETREGS, t->tid, 0, &t->regs) != 0)
				finish("error PTRACE_SETREGS of thread %d: %s", t->tid, strerror(errno));
			t->restarting = 1;
			resume(t, PTRACE_SYSCALL, 0);
			return;
		}
		t->state = ST_READY;
		t->action = ACT_FINISH;
		if (t == holder) /* (the call did not block: the turn was its until now) */
			holder = NULL;
	} else if (ev == PTRACE_EVENT_CLONE) {
		unsigned long child;
		if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &child) != 0)
			finish("error PTRACE_GETEVENTMSG: %s", strerror(errno));
		struct thread *c = find((pid_t)child);
		if (!c) {
			c = add((pid_t)child);
			c->state = ST_NONE;
		}
		c->num = numbered++;
		c->action = ACT_START;
		event(t, DET_EV_THREAD_CREATE, c->num, 0, NULL, 0, (uint32_t)child);
		send_due(t, events_done, DUE_ANY);
		resume(t, PTRACE_CONT, 0);
	} else if (ev == PTRACE_EVENT_EXEC) {
		new_image(t);
		resume(t, PTRACE_CONT, 0);
	} else if (sig == SIGSTOP && !t->seen && t->state == ST_NONE) {
		t->seen = 1;
		t->state = ST_READY;
	} else {
		signal_stop(t, sig, fresh);
	}
}

/* ---- start ---- */

static void install_filter(void)
{
	enum { N = sizeof traced_calls / sizeof traced_calls[0] };
	struct sock_filter prog[4 + N + 2];
	int i = 0;
	prog[i++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	prog[i++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	prog[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW); /* (not x86-64: unseen) */
	prog[i++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	for (int k = 0; k < N; k++) /* a match jumps to RET_TRACE, past the rest */
		prog[i++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)traced_calls[k],
							 (unsigned char)(N - k), 0);
	prog[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	prog[i++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE);
	struct sock_fprog fprog = {(unsigned short)i, prog};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) {
		fprintf(stderr, "detptrace: cannot install the seccomp filter: %s\n", strerror(errno));
		_exit(127);
	}
}

/* SIGTERM (detrec's --timeout), or replay-cut's SIGALRM: the program is
 * killed, and its end and the log written as for any end. */
static void on_term(int sig)
{
	(void)sig;
	if (leader > 0)
		kill(leader, SIGKILL);
}

static void load_schedule(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		finish("error cannot open %s: %s", path, strerror(errno));
	uint64_t cap = 0;
	struct ptr_rec r;
	while (fread(&r, sizeof r, 1, f) == 1) {
		if (sched_len == cap) {
			cap = cap ? 2 * cap : 1024;
			sched = realloc(sched, cap * sizeof *sched);
			sched_data = realloc(sched_data, cap * sizeof *sched_data);
			if (!sched || !sched_data)
				finish("error out of memory");
		}
		unsigned char *d = malloc(r.len ? r.len : 1);
		if (!d || (r.len && fread(d, 1, r.len, f) != r.len))
			finish("error %s is cut short", path);
		sched[sched_len] = r;
		sched_data[sched_len++] = d;
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	int dash = 0;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			dash = i;
			break;
		}
	stop_at_end = argc > 1 && strcmp(argv[1], "replay-cut") == 0;
	replaying = stop_at_end || (argc > 1 && strcmp(argv[1], "replay") == 0);
	if (dash == 0 || dash + 2 >= argc || !(replaying ? dash == 4 : dash == 5 && strcmp(argv[1], "record") == 0)) {
		fprintf(stderr, "usage: detptrace record LOG RESULT SEED -- PATH ARGV0 ARGS... | "
			"replay|replay-cut LOG RESULT -- PATH ARGV0 ARGS...\n");
		return 2;
	}
	result_path = argv[3];
	if (replaying) {
		load_schedule(argv[2]);
	} else {
		rng = strtoull(argv[4], NULL, 0) | 1;
		logf = fopen(argv[2], "wbe"); /* (e: not the program's) */
		if (!logf)
			finish("error cannot write %s: %s", argv[2], strerror(errno));
	}
	pid_t pid = fork();
	if (pid < 0)
		finish("error fork: %s", strerror(errno));
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0)
			_exit(127);
		raise(SIGSTOP);
		install_filter();
		execv(argv[dash + 1], argv + dash + 2);
		fprintf(stderr, "detptrace: cannot run %s: %s\n", argv[dash + 1], strerror(errno));
		_exit(127);
	}
	leader = pid;
	/* A Ctrl-C or a kill meant for the program reaches it (and is recorded
	 * as its end): the supervisor goes on to see that end. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGTERM, on_term);
	signal(SIGALRM, on_term);
	int status;
	if (waitpid(pid, &status, __WALL) != pid || !WIFSTOPPED(status))
		finish("error the program did not start");
	if (ptrace(PTRACE_SETOPTIONS, pid, 0,
		   (void *)(long)(PTRACE_O_TRACESECCOMP | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC |
				  PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
				  PTRACE_O_EXITKILL | PTRACE_O_TRACESYSGOOD)) != 0)
		finish("error PTRACE_SETOPTIONS: %s", strerror(errno));
	struct thread *t0 = add(pid);
	t0->num = numbered++;
	t0->seen = 1;
	t0->state = ST_RUN;
	holder = t0;
	resume(t0, PTRACE_CONT, 0);
	int exit_status = -1;
	while (live_threads() > 0) {
		/* (a grant may take an event and leave the turn free: again) */
		for (uint64_t before = UINT64_MAX; holder == NULL && before != events_done;) {
			before = events_done;
			next_holder();
		}
		int in_kernel = holder && (holder->state == ST_KERNEL || holder->state == ST_EXITING);
		pid_t tid = waitpid(-1, &status, __WALL | (in_kernel ? WNOHANG : 0));
		if (tid == 0) {
			holder_in_kernel();
			continue;
		}
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD)
				break;
			finish("error waitpid: %s", strerror(errno));
		}
		struct thread *t = find(tid);
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (tid == leader)
				exit_status = status;
			if (t) {
				t->state = ST_GONE;
				if (t == holder)
					holder = NULL;
			}
			continue;
		}
		if (WIFSTOPPED(status))
			stopped(tid, status);
	}
	if (stop_at_end && events_done >= sched_len)
		finish("stopped");
	if (exit_status < 0)
		finish("error the program's end was not seen");
	leader = 0; /* (reaped: finish() kills no one) */
	if (replaying && events_done < sched_len)
		diverged(events_done, (int)sched[events_done].thread, "the program ended, the recording has %llu more events",
			 (unsigned long long)(sched_len - events_done));
	if (WIFSIGNALED(exit_status))
		finish("signaled %d", WTERMSIG(exit_status));
	finish("exited %d", WEXITSTATUS(exit_status));
}
