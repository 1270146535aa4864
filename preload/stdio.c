/*
 * preload/stdio.c - the stdio functions libdet.so replaces: each output
 * call is an event on its FILE, and so is each input call once the process
 * has made a thread (their buffer refills are det's reads: stdio_reads.c).
 *
 * Rules of this file:
 *  - One wrapper per libc entry point, with libc's exact signature; each
 *    passes straight through when det_enter() says the runtime is off.
 *    Wrappers whose libc call may act on a cancellation (a cancellation
 *    point, or pthread_cancel of the caller itself) enter with DET_ENTER,
 *    whose guard logs a cancellation that unwinds them (det_unwound); the
 *    rest (locks, signals and broadcasts, posts, thread bookkeeping, once)
 *    use det_enter().
 *  - Wrappers say what an operation is (its event kind, object, whether it
 *    releases or acquires) and leave the mode to runtime.h's begin/end pairs.
 *  - Replay never blocks inside libc on an ordered object: at its turn an
 *    acquisition must succeed with the non-blocking variant (the recorded
 *    order guarantees it), and waits that only exist to be woken (condition
 *    variables, barriers) are emulated by the turn itself, as POSIX allows
 *    spurious wake-ups.
 *  - Results that say an operation failed (EBUSY, ETIMEDOUT, ...) are part of
 *    the event; replay returns them without performing the operation.
 */
#include "threads.h"
#include "locks.h"
#include "shared_out.h"
#include "process.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------ */
/* stdio output: each call is an event on its FILE, so threads that print
 * without their own locking produce the same output in replay. Record takes
 * the FILE's lock around the call, and its place in the order as the call
 * begins: what the call flushes may be read by another thread or process
 * before the call returns, and that read must come after it in the order.
 * (The result is logged when the call returns; "pending" if it never did.) */

/*
 * Replay of a stdio call that never came back (its writer died in it: a
 * SIGPIPE, a kill) on the program's own pipe: what it flushed before the
 * writer died may have reached a reader, which read it with a count the
 * trace holds (a big fwrite into `| head -c 1000`: head read the start,
 * left, and the writer died of SIGPIPE in the same call). The call is made
 * again through a second, non-blocking opening of the pipe put in the
 * FILE's place, SIGPIPE held: what fits goes in, nothing blocks, and then
 * the thread vanishes as recorded.
 */
static __thread struct {
	int fd;   /* the non-blocking opening, or -1 */
	int prog; /* the FILE's own descriptor */
	struct det_sigpipe_hold quiet;
} dying = {-1, -1, {0, 0}};

static int dying_call_begin(FILE *f)
{
	int fd = f ? fileno(f) : -1;
	if (fd < 0 || !det_own_pipe(fd))
		return 0;
	char path[40];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	long nb = det_sys(SYS_openat, AT_FDCWD, (long)path, O_WRONLY | O_NONBLOCK | O_CLOEXEC, 0, 0, 0);
	if (nb < 0)
		return 0;
	dying.quiet = det_sigpipe_hold();
	dying.fd = (int)nb;
	dying.prog = fd;
	f->_fileno = (int)nb;
	return 1;
}

static void dying_call_end(FILE *f)
{
	if (dying.fd < 0)
		return;
	f->_fileno = dying.prog;
	det_sys(SYS_close, dying.fd, 0, 0, 0, 0, 0);
	dying.fd = -1;
	det_sigpipe_release(dying.quiet, 1); /* (the reader was gone: not this call's SIGPIPE to die of) */
}

static struct det_out_lock *stdio_begin(struct det_op *op, struct det_thread *t, FILE *f, uint64_t ra)
{
	/* A FILE on a stream other processes write too (stdout inherited
	 * through fork: each process has its own FILE, one stream): its
	 * place among the hand-offs and its write under the stream's lock
	 * (preload/shared_out.c), in record and replay. */
	struct det_out_lock *shared = f ? shared_out(fileno(f)) : NULL;
	det_acquire_begin(op, t, DET_EV_STDIO_WRITE, f, DET_OBJ_FILE, ra);
	if (det_replaying()) {
		if (op->rec->result == DET_RESULT_PENDING) { /* it died in this call: a SIGPIPE, a kill */
			if (!dying_call_begin(f))
				det_ops.replay_vanish(op);
			return NULL; /* (made again, then stdio_end vanishes) */
		}
		if (f && det_ops.replay_free_running()) {
			/* Its place in the order was taken before it ran, so the
			 * recording's next events did not wait for it to end: nor
			 * do the replay's. It may block on a pipe that one of them
			 * drains (a reader's read, placed when it returned). It
			 * holds its FILE meanwhile: the FILE's next users still
			 * write after it. (op->rec = NULL: done already.) */
			real.flockfile(f);
			if (shared) /* the next writer in the order waits for its bytes */
				shared_out_lock(shared);
			det_acquire_end(op, op->rec->result);
			op->rec = NULL;
			/* a reader due after it may drain the pipe (read_ahead) */
			atomic_store(&t->slot->pipe_writing, det_own_pipe(fileno(f)));
			return shared;
		}
		return NULL;
	}
	if (f && real.ftrylockfile(f) != 0) {
		if (det_strict) {
			while (real.ftrylockfile(f) != 0) /* its holder needs the turn */
				det_ops.strict_wait_for(op, f);
		} else {
			det_block(op);
			real.flockfile(f);
			det_unblock(op);
		}
	}
	t->cancel_file = f; /* its write may be canceled (det_unwound) */
	if (shared) {
		shared_out_lock(shared);
		op->aux = DET_AUX_STDIO_WRITE_SHARED;
	}
	det_ops.rec_call_begin(op);
	return shared;
}

static int stdio_end(struct det_op *op, FILE *f, struct det_out_lock *shared, int r)
{
	if (shared)
		shared_out_unlock(shared);
	if (det_replaying()) {
		if (op->rec && op->rec->result == DET_RESULT_PENDING) {
			dying_call_end(f);
			det_ops.replay_vanish(op);
		}
		if (op->rec) {
			det_acquire_end(op, op->rec->result);
		} else {
			atomic_store(&op->t->slot->pipe_writing, 0);
			real.funlockfile(f);
		}
	} else {
		det_ops.rec_call_end(op, r);
		op->t->cancel_file = NULL;
		if (f)
			file_unlocked(op->t, f);
	}
	det_leave(op->t);
	return r;
}

#define DET_STDIO(f, call)                                                          \
	do {                                                                      \
		DET_ENTER(t);                                                     \
		if (!t)                                                           \
			return call;                                              \
		struct det_op op = {0};                                           \
		struct det_out_lock *so = stdio_begin(&op, t, f, DET_RA());      \
		return stdio_end(&op, f, so, call);                               \
	} while (0)

DET_IMPL int det_impl_vprintf(const char *fmt, va_list ap)
{
	DET_STDIO(stdout, real.vprintf(fmt, ap));
}

DET_IMPL int det_impl_vfprintf(FILE *f, const char *fmt, va_list ap)
{
	DET_STDIO(f, real.vfprintf(f, fmt, ap));
}

DET_IMPL int det_impl___vprintf_chk(int flag, const char *fmt, va_list ap)
{
	DET_STDIO(stdout, real.__vprintf_chk(flag, fmt, ap));
}

DET_IMPL int det_impl___vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap)
{
	DET_STDIO(f, real.__vfprintf_chk(f, flag, fmt, ap));
}

/* The variadic entry points are front-ends (their arguments may be on the
 * caller's stack, which the det stack does not have): they pass a va_list
 * and their return address to det_stdio_va, an entry on the det stack. */
enum stdio_va { VA_PRINTF, VA_FPRINTF, VA_PRINTF_CHK, VA_FPRINTF_CHK };

DET_HIDDEN int det_stdio_va(enum stdio_va which, FILE *f, int flag, const char *fmt, va_list ap, uint64_t ra);

DET_IMPL int det_impl_det_stdio_va(enum stdio_va which, FILE *f, int flag, const char *fmt, va_list ap,
				   uint64_t ra)
{
#define VCALL (which == VA_PRINTF ? real.vprintf(fmt, ap) : which == VA_FPRINTF ? real.vfprintf(f, fmt, ap) \
	       : which == VA_PRINTF_CHK ? real.__vprintf_chk(flag, fmt, ap) : real.__vfprintf_chk(f, flag, fmt, ap))
	DET_ENTER(t);
	if (!t)
		return VCALL;
	struct det_op op = {0};
	struct det_out_lock *so = stdio_begin(&op, t, f, ra);
	return stdio_end(&op, f, so, VCALL);
#undef VCALL
}

#define DET_STDIO_VA(which, f, flag, last)                                                 \
	do {                                                                               \
		va_list ap;                                                                \
		va_start(ap, last);                                                        \
		int r = det_stdio_va(which, f, flag, last, ap, DET_RA());                  \
		va_end(ap);                                                                \
		return r;                                                                  \
	} while (0)

EXPORT int printf(const char *fmt, ...)
{
	DET_STDIO_VA(VA_PRINTF, stdout, 0, fmt);
}

EXPORT int fprintf(FILE *f, const char *fmt, ...)
{
	DET_STDIO_VA(VA_FPRINTF, f, 0, fmt);
}

EXPORT int __printf_chk(int flag, const char *fmt, ...)
{
	DET_STDIO_VA(VA_PRINTF_CHK, stdout, flag, fmt);
}

EXPORT int __fprintf_chk(FILE *f, int flag, const char *fmt, ...)
{
	DET_STDIO_VA(VA_FPRINTF_CHK, f, flag, fmt);
}

DET_IMPL int det_impl_puts(const char *s)
{
	DET_STDIO(stdout, real.puts(s));
}

DET_IMPL int det_impl_fputs(const char *s, FILE *f)
{
	DET_STDIO(f, real.fputs(s, f));
}

DET_IMPL int det_impl_fputc(int c, FILE *f)
{
	DET_STDIO(f, real.fputc(c, f));
}

#undef putc
DET_IMPL int det_impl_putc(int c, FILE *f)
{
	DET_STDIO(f, real.putc(c, f));
}

#undef putchar
DET_IMPL int det_impl_putchar(int c)
{
	DET_STDIO(stdout, real.putchar(c));
}

DET_IMPL size_t det_impl_fwrite(const void *p, size_t size, size_t n, FILE *f)
{
	DET_ENTER(t);
	if (!t)
		return real.fwrite(p, size, n, f);
	struct det_op op = {0};
	struct det_out_lock *so = stdio_begin(&op, t, f, DET_RA());
	size_t r = real.fwrite(p, size, n, f);
	stdio_end(&op, f, so, (int)(r > INT32_MAX ? INT32_MAX : r));
	return r;
}

DET_IMPL int det_impl_fflush(FILE *f)
{
	DET_STDIO(f, real.fflush(f));
}

DET_IMPL void det_impl_perror(const char *s)
{
	DET_ENTER(t);
	if (!t) {
		real.perror(s);
		return;
	}
	int saved = errno;
	struct det_op op = {0};
	struct det_out_lock *so = stdio_begin(&op, t, stderr, DET_RA());
	errno = saved;
	real.perror(s);
	stdio_end(&op, stderr, so, 0);
}

/* The FILE's lock as an event of this kind (flockfile's, or a stdio
 * input call's place); leaves det. */
static void file_lock(struct det_thread *t, FILE *f, uint16_t kind, uint64_t ra)
{
	struct det_op op = {0};
	if (!det_acquire_begin(&op, t, kind, f, DET_OBJ_FILE, ra) && real.ftrylockfile(f) != 0) {
		if (det_strict) {
			while (real.ftrylockfile(f) != 0)
				det_ops.strict_wait_for(&op, f);
		} else {
			det_block(&op);
			real.flockfile(f);
			det_unblock(&op);
		}
	}
	det_acquire_end(&op, 0);
	det_leave(t);
}

/* funlockfile's event, and its unlock; leaves det. */
static void file_unlock(struct det_thread *t, FILE *f, uint64_t ra)
{
	struct det_op op = {0};
	det_release_begin(&op, t, DET_EV_FILE_UNLOCK, f, DET_OBJ_FILE, ra);
	file_unlocked(t, f);
	det_release_end(&op, 0);
	det_leave(t);
}

DET_IMPL void det_impl_flockfile(FILE *f)
{
	struct det_thread *t = det_enter();
	if (!t) {
		real.flockfile(f);
		return;
	}
	file_lock(t, f, DET_EV_FILE_LOCK, DET_RA());
}

DET_IMPL int det_impl_ftrylockfile(FILE *f)
{
	struct det_thread *t = det_enter();
	if (!t)
		return real.ftrylockfile(f);
	struct det_op op = {0};
	int r;
	if (det_acquire_begin(&op, t, DET_EV_FILE_LOCK, f, DET_OBJ_FILE, DET_RA())) {
		r = (int)op.rec->result;
	} else {
		r = real.ftrylockfile(f);
		if (r && det_replaying()) /* free at its turn in the recording */
			det_ops.diverge(t, DET_DIV_RESULT, DET_EV_FILE_LOCK, f, op.ra,
				    "ftrylockfile failed where the recording's succeeded");
	}
	det_acquire_end(&op, r);
	det_leave(t);
	return r;
}

DET_IMPL void det_impl_funlockfile(FILE *f)
{
	struct det_thread *t = det_enter();
	if (!t) {
		real.funlockfile(f);
		return;
	}
	file_unlock(t, f, DET_RA());
}

/* exit's last flush of stdout: glibc writes what stdout still holds after
 * the program's exit handlers and destructors, past det, so the processes
 * of a program that print into one stream (a fork's parent and child into a
 * pipe) had their last buffers written in another order in replay. libdet's
 * destructor (after the program's, before libc's flush) flushes it through
 * det: in record when the program has several processes and stdout holds
 * bytes, in replay when the trace says the recording did. */
void det_flush_at_exit(void)
{
	struct det_thread *t = det_enter();
	if (!t)
		return;
	int flush = det_replaying() ? det_ops.replay_next_kind(t, DET_EV_STDIO_WRITE) == DET_EV_STDIO_WRITE
				    : stdout->_IO_write_ptr > stdout->_IO_write_base && nprocs() > 1;
	det_leave(t);
	if (flush)
		fflush(stdout); /* (det's entry: an event) */
}

/* ------------------------------------------------------------------ */
/* stdio input: a call that reads a FILE (fgets, fread, getc, getline,
 * scanf, ...) holds the FILE across the reads it makes, which are det's
 * reads (preload/stdio_reads.c). Threads that read one FILE must take it in
 * the recorded order: else each consumes other lines of its buffer, or one
 * holds it while its read waits for a turn that comes after another
 * thread's read of it. So once the process has made a thread, such a call
 * locks the FILE and takes its place in the order (STDIO_READ, as a stdio
 * output call does), then makes the real call (whose reads are events of
 * their own) and unlocks it. Before the first thread (nothing to order: a
 * tool reading its input char by char pays nothing) the call passes
 * through, and so do the _unlocked variants (their caller locks with
 * flockfile, an event). */
#define DET_STDIN(f, ra, call)                                                                    \
	do {                                                                                       \
		struct det_thread *t = det_enter();                                                \
		if (t && atomic_load_explicit(&det_threads_made, memory_order_relaxed) && (f)) {   \
			uint64_t ra_ = (ra);                                                       \
			file_lock(t, (f), DET_EV_STDIO_READ, ra_);                                 \
			t->cancel_file = (f); /* (a canceled read in it unlocks it: det_unwound) */ \
			__typeof__(call) r_ = (call);                                              \
			int e_ = errno;                                                            \
			t->cancel_file = NULL;                                                     \
			if ((t = det_enter()) != NULL) { /* (strict mode's waiters hear of it) */ \
				file_unlocked(t, (f));                                             \
				det_leave(t);                                                      \
			} else {                                                                   \
				real.funlockfile(f);                                               \
			}                                                                          \
			errno = e_;                                                                \
			return r_;                                                                 \
		}                                                                                  \
		if (t)                                                                             \
			det_leave(t);                                                              \
		return call;                                                                       \
	} while (0)

DET_IMPL char *det_impl_fgets(char *s, int n, FILE *f)
{
	DET_STDIN(f, DET_RA(), real.fgets(s, n, f));
}

DET_IMPL char *det_impl___fgets_chk(char *s, size_t size, int n, FILE *f)
{
	DET_STDIN(f, DET_RA(), real.__fgets_chk(s, size, n, f));
}

DET_IMPL size_t det_impl_fread(void *p, size_t size, size_t n, FILE *f)
{
	DET_STDIN(f, DET_RA(), real.fread(p, size, n, f));
}

DET_IMPL size_t det_impl___fread_chk(void *p, size_t plen, size_t size, size_t n, FILE *f)
{
	DET_STDIN(f, DET_RA(), real.__fread_chk(p, plen, size, n, f));
}

DET_IMPL int det_impl_fgetc(FILE *f)
{
	DET_STDIN(f, DET_RA(), real.fgetc(f));
}

#undef getc
DET_IMPL int det_impl_getc(FILE *f)
{
	DET_STDIN(f, DET_RA(), real.getc(f));
}

#undef getchar
DET_IMPL int det_impl_getchar(void)
{
	DET_STDIN(stdin, DET_RA(), real.getchar());
}

DET_IMPL int det_impl_ungetc(int c, FILE *f)
{
	DET_STDIN(f, DET_RA(), real.ungetc(c, f));
}

DET_IMPL ssize_t det_impl_getdelim(char **line, size_t *cap, int delim, FILE *f)
{
	DET_STDIN(f, DET_RA(), real.getdelim(line, cap, delim, f));
}

DET_IMPL ssize_t det_impl_getline(char **line, size_t *cap, FILE *f)
{
	DET_STDIN(f, DET_RA(), real.getdelim(line, cap, '\n', f));
}

/* scanf's three ABIs: before C99, C99's (what programs built in C99 to
 * C17 call), C23's (glibc 2.38: strtol-like %b and 0b); each has its own
 * vfscanf. */
enum scanf_abi { SCANF_PRE_C99, SCANF_C99, SCANF_C23 };

static int real_vfscanf(enum scanf_abi abi, FILE *f, const char *fmt, va_list ap)
{
	static void *c23;
	return abi == SCANF_PRE_C99 ? real.vfscanf(f, fmt, ap)
	       : abi == SCANF_C99   ? real.__isoc99_vfscanf(f, fmt, ap)
				    : ((int (*)(FILE *, const char *, va_list))det_real_late_once(
					      &c23, "__isoc23_vfscanf", "libc.so.6"))(f, fmt, ap);
}

DET_IMPL int det_impl_vfscanf(FILE *f, const char *fmt, va_list ap)
{
	DET_STDIN(f, DET_RA(), real_vfscanf(SCANF_PRE_C99, f, fmt, ap));
}

DET_IMPL int det_impl_vscanf(const char *fmt, va_list ap)
{
	DET_STDIN(stdin, DET_RA(), real_vfscanf(SCANF_PRE_C99, stdin, fmt, ap));
}

DET_IMPL int det_impl___isoc99_vfscanf(FILE *f, const char *fmt, va_list ap)
{
	DET_STDIN(f, DET_RA(), real_vfscanf(SCANF_C99, f, fmt, ap));
}

DET_IMPL int det_impl___isoc99_vscanf(const char *fmt, va_list ap)
{
	DET_STDIN(stdin, DET_RA(), real_vfscanf(SCANF_C99, stdin, fmt, ap));
}

DET_IMPL int det_impl___isoc23_vfscanf(FILE *f, const char *fmt, va_list ap)
{
	DET_STDIN(f, DET_RA(), real_vfscanf(SCANF_C23, f, fmt, ap));
}

DET_IMPL int det_impl___isoc23_vscanf(const char *fmt, va_list ap)
{
	DET_STDIN(stdin, DET_RA(), real_vfscanf(SCANF_C23, stdin, fmt, ap));
}

/* The variadic scanfs: front-ends, as printf's (their return address is
 * the program's). */
DET_HIDDEN int det_stdin_va(enum scanf_abi abi, FILE *f, const char *fmt, va_list ap, uint64_t ra);

DET_IMPL int det_impl_det_stdin_va(enum scanf_abi abi, FILE *f, const char *fmt, va_list ap, uint64_t ra)
{
	DET_STDIN(f, ra, real_vfscanf(abi, f, fmt, ap));
}

#define DET_STDIN_VA(abi, f, last)                                                         \
	do {                                                                               \
		va_list ap;                                                                \
		va_start(ap, last);                                                        \
		int r = det_stdin_va(abi, f, last, ap, DET_RA());                          \
		va_end(ap);                                                                \
		return r;                                                                  \
	} while (0)

/* (<stdio.h> names C99's scanf scanf: the pre-C99 one gets its symbol here) */
EXPORT int det_scanf_pre_c99(const char *fmt, ...) __asm__("scanf");
EXPORT int det_fscanf_pre_c99(FILE *f, const char *fmt, ...) __asm__("fscanf");

EXPORT int det_scanf_pre_c99(const char *fmt, ...)
{
	DET_STDIN_VA(SCANF_PRE_C99, stdin, fmt);
}

EXPORT int det_fscanf_pre_c99(FILE *f, const char *fmt, ...)
{
	DET_STDIN_VA(SCANF_PRE_C99, f, fmt);
}

EXPORT int __isoc99_scanf(const char *fmt, ...)
{
	DET_STDIN_VA(SCANF_C99, stdin, fmt);
}

EXPORT int __isoc99_fscanf(FILE *f, const char *fmt, ...)
{
	DET_STDIN_VA(SCANF_C99, f, fmt);
}

EXPORT int __isoc23_scanf(const char *fmt, ...);
EXPORT int __isoc23_fscanf(FILE *f, const char *fmt, ...);

EXPORT int __isoc23_scanf(const char *fmt, ...)
{
	DET_STDIN_VA(SCANF_C23, stdin, fmt);
}

EXPORT int __isoc23_fscanf(FILE *f, const char *fmt, ...)
{
	DET_STDIN_VA(SCANF_C23, f, fmt);
}
