/*
 * isolated/trace.c - detrec --isolated: the run's synchronization events in
 * token order and its inputs, in a log det.record.isolated makes a trace
 * of; and detreplay's run of such a trace, which takes the recorded inputs.
 *
 * Rules of this file:
 *  - DET_ISO_TRACE = "record:DIR" or "replay:DIR" (padded with '/', so that
 *    the environment, and with it every stack address, has one size in
 *    both). DIR/log is written in both modes: a sequence of struct
 *    iso_rec, each followed by len data bytes (det.isolog spells it for
 *    Python); DIR/modules the loaded objects and their load biases. Without
 *    the variable nothing here does anything (detrun).
 *  - Synchronization events are written by the thread in its turn (or by
 *    the only thread before isolation): their order in the log is the token
 *    order. Inputs are written when they happen, in a parallel phase, one
 *    write() each (O_APPEND): between two serial phases their order across
 *    threads is real time's, and det.isolog sorts each such run of inputs
 *    by thread (each thread's own stay in their order), which makes the log
 *    the same whatever the timing.
 *  - Inputs: clock_gettime, gettimeofday, time, getrandom, and read, pread,
 *    recv, recvfrom of a pipe, socket, terminal or device (their bytes).
 *    A regular file (and stdin when detrec fed it, DET_ISO_STDIN_FED) is read
 *    again in replay, as det's FILE_READ: a 64-bit hash of the bytes, which
 *    replay's log must match. In replay (DIR/inputs: the recorded inputs in
 *    the trace's order) a thread takes its own next one; another call than
 *    the recorded one ends the run, "replay diverged", status 125.
 *  - Names are det's: include/det/events.h's kinds.
 */
#include "iso.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "det/events.h"

#define API __attribute__((visibility("default")))
#define LOG_FD_MIN 1000 /* out of the way of the program's own descriptors */

struct iso_rec {
	uint32_t thread; /* det's thread number: 0 the main one, then creation order */
	uint32_t kind;   /* enum det_kind */
	int64_t aux;
	int64_t result;
	uint64_t ns;  /* CLOCK_MONOTONIC when written (timing only: never compared) */
	uint32_t len; /* data bytes that follow */
	uint32_t pid; /* the thread-process */
	uint64_t obj; /* the object's address, 0 for none */
};

int iso_tracing; /* ISO_RECORD, ISO_REPLAY or 0 */
int iso_tnum;    /* this process's thread number */
const char *iso_who = "detrun --isolated";
static int log_fd = -1;
static int stdin_fed;
static const unsigned char *inputs; /* replay: the recorded inputs */
static size_t inputs_len;
static size_t next_input; /* where this thread's next one is searched from */

static int open_in(const char *dir, const char *name, int flags)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, flags | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, LOG_FD_MIN);
	close(fd);
	return high;
}

/* DIR/modules: "BASE PATH" per loaded object, the program first (det's
 * modules table: the trace's addresses get names) */
static int module_line(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	FILE *f = arg;
	const char *path = info->dlpi_name;
	char exe[4096];
	if (!path[0]) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
		exe[n > 0 ? n : 0] = 0;
		path = exe;
	}
	if (path[0] == '/')
		fprintf(f, "%lu %s\n", (unsigned long)info->dlpi_addr, path);
	return 0;
}

static void write_modules(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/modules", dir);
	FILE *f = fopen(path, "we");
	if (!f)
		iso_die("cannot write %s: %s", path, strerror(errno));
	dl_iterate_phdr(module_line, f);
	fclose(f);
}

__attribute__((constructor)) static void trace_start(void)
{
	const char *v = getenv("DET_ISO_TRACE");
	if (!v)
		return;
	int replay = strncmp(v, "replay:", 7) == 0;
	if (!replay && strncmp(v, "record:", 7) != 0)
		return;
	iso_tracing = replay ? ISO_REPLAY : ISO_RECORD;
	iso_who = "detrec --isolated"; /* (replay too: what the run says is the recording's) */
	const char *dir = v + 7;
	log_fd = open_in(dir, "log", O_WRONLY | O_CREAT | O_APPEND);
	if (log_fd < 0)
		iso_die("cannot open the log in %s: %s", dir, strerror(errno));
	write_modules(dir);
	if (replay) {
		int fd = open_in(dir, "inputs", O_RDONLY);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) != 0)
			iso_die("cannot open the recorded inputs in %s", dir);
		inputs_len = (size_t)st.st_size;
		if (inputs_len) {
			inputs = iso_mmap(NULL, inputs_len, PROT_READ, MAP_PRIVATE, fd, 0);
			if (inputs == MAP_FAILED)
				iso_die("cannot map the recorded inputs: %s", strerror(errno));
		}
		close(fd);
	}
	stdin_fed = getenv("DET_ISO_STDIN_FED") != NULL;
	unsetenv("DET_ISO_TRACE"); /* (a child image is not traced: exec is the program's own) */
	unsetenv("DET_ISO_STDIN_FED");
}

void iso_trace_thread(int tnum)
{
	iso_tnum = tnum;
	next_input = 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void put(int tnum, int kind, uintptr_t obj, int64_t aux, int64_t result, const void *data, size_t len)
{
	struct iso_rec r = {(uint32_t)tnum, (uint32_t)kind, aux, result, now_ns(), (uint32_t)len,
			    (uint32_t)syscall(SYS_gettid), obj};
	struct iovec iov[2] = {{&r, sizeof r}, {(void *)data, len}};
	size_t want = sizeof r + len;
	ssize_t n = writev(log_fd, iov, len ? 2 : 1);
	if (n != (ssize_t)want)
		iso_die("cannot write the log: %s", n < 0 ? strerror(errno) : "short write");
}

void iso_log_event(int slot, int kind, uintptr_t obj, int64_t aux, int64_t result)
{
	if (iso_tracing)
		put(iso_ctl ? iso_ctl->th[slot].tnum : 0, kind, obj, aux, result, NULL, 0);
}

/* --- inputs ---------------------------------------------------------------- */

static const char *kind_text(int kind)
{
	switch (kind) {
	case DET_EV_READ: return "read";
	case DET_EV_RECV: return "recv";
	case DET_EV_CLOCK_GETTIME: return "clock_gettime";
	case DET_EV_GETTIMEOFDAY: return "gettimeofday";
	case DET_EV_TIME: return "time";
	case DET_EV_GETRANDOM: return "getrandom";
	default: return "another call";
	}
}

#define DIVERGED(...) (iso_who = "detreplay", iso_die("replay diverged: " __VA_ARGS__))

/* Replay: this thread's next recorded input, which must be a `kind` call
 * (aux: its fd or clock). Its result; its bytes (at most cap) into buf. */
static int64_t take_input(int kind, int64_t aux, void *buf, size_t cap)
{
	while (next_input + sizeof(struct iso_rec) <= inputs_len) {
		struct iso_rec r;
		memcpy(&r, inputs + next_input, sizeof r);
		size_t at = next_input + sizeof r;
		next_input = at + r.len;
		if ((int)r.thread != iso_tnum)
			continue;
		if ((int)r.kind != kind || r.aux != aux)
			DIVERGED("T%d calls %s(%lld) where the recording has %s(%lld)", iso_tnum,
				kind_text(kind), (long long)aux, kind_text((int)r.kind), (long long)r.aux);
		if (r.len > cap)
			DIVERGED("T%d's %s asks for %zu bytes, the recording has %u", iso_tnum,
				kind_text(kind), cap, r.len);
		if (r.len)
			memcpy(buf, inputs + at, r.len);
		put(iso_tnum, kind, 0, aux, r.result, inputs + at, r.len);
		return r.result;
	}
	DIVERGED("T%d calls %s(%lld) after its last recorded input", iso_tnum, kind_text(kind),
		(long long)aux);
}

static int64_t result_of(long r)
{
	return r < 0 ? -(int64_t)errno : (int64_t)r;
}

static long returned(int64_t result)
{
	if (result < 0) {
		errno = (int)-result;
		return -1;
	}
	return (long)result;
}

/* FNV-1a: a regular file's bytes, which replay reads again */
static uint64_t hash64(const void *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ull;
	return h;
}

static int read_again(int fd)
{
	struct stat st;
	return (fd == 0 && stdin_fed) || (fstat(fd, &st) == 0 && S_ISREG(st.st_mode));
}

long iso_traced_read(int kind, int fd, void *buf, size_t len, long (*call)(void *ctx), void *ctx)
{
	if (!iso_tracing)
		return call(ctx);
	if (read_again(fd)) {
		long r = call(ctx);
		int saved = errno;
		uint64_t h = r > 0 ? hash64(buf, (size_t)r) : 0;
		put(iso_tnum, DET_EV_FILE_READ, 0, fd, result_of(r), &h, sizeof h);
		errno = saved;
		return r;
	}
	if (iso_tracing == ISO_REPLAY)
		return returned(take_input(kind, fd, buf, len));
	long r = call(ctx);
	int saved = errno;
	put(iso_tnum, kind, 0, fd, result_of(r), buf, r > 0 ? (size_t)r : 0);
	errno = saved;
	return r;
}

/* A value input (time): the recorded one in replay, else `value`'s. */
static int64_t traced_value(int kind, int64_t aux, int64_t value)
{
	if (iso_tracing == ISO_REPLAY)
		return take_input(kind, aux, NULL, 0);
	put(iso_tnum, kind, 0, aux, value, NULL, 0);
	return value;
}

/* libc's own (the vDSO's speed), for a run that is not traced */
#define REAL(type, name, args) ((type(*) args)dlsym(RTLD_NEXT, #name))

API int clock_gettime(clockid_t clk, struct timespec *ts)
{
	static int (*real)(clockid_t, struct timespec *);
	if (!iso_tracing) {
		if (!real)
			real = REAL(int, clock_gettime, (clockid_t, struct timespec *));
		return real(clk, ts);
	}
	int64_t ns = 0;
	if (iso_tracing == ISO_RECORD) {
		long r = syscall(SYS_clock_gettime, clk, ts);
		ns = r < 0 ? -(int64_t)errno : (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
	}
	ns = traced_value(DET_EV_CLOCK_GETTIME, clk, ns);
	if (ns < 0)
		return (int)returned(ns);
	ts->tv_sec = ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
	return 0;
}

/* gettimeofday and time: clock_gettime(CLOCK_REALTIME) events when traced */
API int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	static int (*real)(struct timeval *, void *);
	if (!iso_tracing) {
		if (!real)
			real = REAL(int, gettimeofday, (struct timeval *, void *));
		return real(tv, tz);
	}
	struct timespec ts;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return -1;
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	if (tz)
		memset(tz, 0, sizeof(struct timezone));
	return 0;
}

API time_t time(time_t *t)
{
	static time_t (*real)(time_t *);
	if (!iso_tracing) {
		if (!real)
			real = REAL(time_t, time, (time_t *));
		return real(t);
	}
	struct timespec ts;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return (time_t)-1;
	if (t)
		*t = ts.tv_sec;
	return ts.tv_sec;
}

API ssize_t getrandom(void *buf, size_t len, unsigned flags)
{
	if (iso_tracing == ISO_REPLAY)
		return returned(take_input(DET_EV_GETRANDOM, 0, buf, len));
	long r = syscall(SYS_getrandom, buf, len, flags);
	if (iso_tracing) {
		int saved = errno;
		put(iso_tnum, DET_EV_GETRANDOM, 0, 0, result_of(r), buf, r > 0 ? (size_t)r : 0);
		errno = saved;
	}
	return r;
}

API int getentropy(void *buf, size_t len)
{
	if (len > 256) {
		errno = EIO;
		return -1;
	}
	return getrandom(buf, len, 0) == (ssize_t)len ? 0 : -1;
}
