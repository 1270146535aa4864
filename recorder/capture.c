/*
 * recorder/capture.c - libdetsup.so: while the program runs, move what its
 * threads publish in their rings into the capture log (recorder/logfmt.h).
 *
 * Rules of this file:
 *  - Nothing is decoded here: ring entries go to the log as the threads
 *    wrote them, in large sequential writes. Ordering, numbering and SQLite
 *    come after the program has ended (recorder/convert.c), so recording
 *    never waits on them.
 *  - A thread's published entries are written before its ring space is
 *    handed back; a ring goes back to the pool only after its thread is
 *    gone from the kernel and everything it published is in the log.
 *  - The identities of threads, the process table and the loaded modules
 *    are copied into the log as they appear and once more at the end, so a
 *    log whose detrec was killed can still be made into a trace.
 *  - The program can write anything into the region: every place in it is
 *    found through the supervisor's own layout (sup_slot...), every count
 *    read from it is bounded, and a ring whose indices make no sense is
 *    not read again and stops the recording (ring_corrupt), rather than
 *    being copied for ever.
 */
#include "../supervisor/supervisor.h"
#include "logfmt.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/falloc.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

/* The log's disk space is reserved ahead of its writes, in steps of
 * LOG_RESERVE_STEP (a quarter of the log once it is larger), past its end
 * (its size is what was written, so a reader never sees the reservation):
 * appending to a delayed-allocation file system reserves and accounts
 * blocks page by page, which was most of what the capture spent in the
 * kernel, on a core the program's threads want. The part not written is
 * given back when the capture ends (a killed detrec leaves it allocated
 * until the log is removed). A file system without fallocate is simply
 * written. A log is reserved for only once it passes LOG_RESERVE_FROM: a
 * small one's few pages cost little to append, while reserved blocks made
 * the end of its capture (the space given back) and its removal cost
 * milliseconds each, the most of a hunt's run that is judged and dropped. */
#define LOG_RESERVE_STEP (16ull << 20)
#define LOG_RESERVE_FROM (1ull << 20)

static void reserve_log(struct det_sup *s, uint64_t end)
{
	if (end <= s->cap_reserved || s->cap_reserved == UINT64_MAX || end < LOG_RESERVE_FROM)
		return;
	uint64_t from = s->cap_reserved, step = end / 4 > LOG_RESERVE_STEP ? end / 4 : LOG_RESERVE_STEP;
	uint64_t to = (end + step) & ~((1ull << 20) - 1);
	if (fallocate(s->log_fd, FALLOC_FL_KEEP_SIZE, (off_t)from, (off_t)(to - from)) == 0)
		s->cap_reserved = to;
	else
		s->cap_reserved = UINT64_MAX; /* not supported here (or no space: the write says so) */
}

/* A write of the log failed (a full disk, a quota, a file size limit, an
 * I/O error): the log is cut back to its last whole chunk, which gives back
 * the space reserved past it and the torn chunk's (a shrink needs no
 * space), room the conversion of what was captured may need. The message
 * is the system's alone: detrec says what could not be written. */
static int log_write_failed(struct det_sup *s, int err)
{
	if (ftruncate(s->log_fd, (off_t)s->cap.bytes) == 0)
		s->cap_reserved = s->cap.bytes; /* nothing reserved past the end now */
	return sup_fail(s, "%s", strerror(err));
}

/* Write a chunk made of up to two pieces of payload (the second may be
 * NULL); the payload is padded to 8 bytes. */
static int put_chunk(struct det_sup *s, uint32_t type, uint32_t thread, const void *a, size_t alen,
		     const void *b, size_t blen)
{
	size_t pad = (8 - (alen + blen) % 8) % 8;
	struct det_log_chunk c = {.type = type, .bytes = (uint32_t)(alen + blen + pad), .thread = thread};
	if (b || pad) {
		/* the checksum runs over one buffer: join the pieces (small chunks only) */
		uint8_t *buf = malloc(c.bytes ? c.bytes : 1);
		if (!buf)
			return sup_fail(s, "out of memory");
		memcpy(buf, a, alen);
		if (b)
			memcpy(buf + alen, b, blen);
		memset(buf + alen + blen, 0, pad);
		c.check = det_log_check(buf, c.bytes, type, c.bytes);
		int r = put_chunk(s, type, thread, buf, c.bytes, NULL, 0);
		free(buf);
		return r;
	}
	c.check = det_log_check(a, alen, type, c.bytes);
	struct iovec iov[2] = {{&c, sizeof(c)}, {(void *)a, alen}};
	size_t want = sizeof(c) + alen, done = 0;
	reserve_log(s, s->cap.bytes + want);
	int n = alen ? 2 : 1;
	struct iovec *v = iov;
	while (done < want) {
		ssize_t k = writev(s->log_fd, v, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return log_write_failed(s, errno);
		}
		done += (size_t)k;
		while (n && (size_t)k >= v->iov_len) {
			k -= (ssize_t)v->iov_len;
			v++;
			n--;
		}
		if (n) {
			v->iov_base = (char *)v->iov_base + k;
			v->iov_len -= (size_t)k;
		}
	}
	s->cap.bytes += want;
	return 0;
}

static void clock_now(struct det_sup *s, struct det_log_clock *c)
{
	c->tsc0 = s->hdr->tsc0;
	c->mono0 = s->hdr->mono0;
	c->tsc1 = s->tsc_start;
	c->mono1 = s->mono_start;
	c->tsc2 = __rdtsc();
	c->mono2 = sup_mono_ns();
	c->flags = s->hdr->flags;
	c->pad = 0;
}

SUP_EXPORT int det_capture_open(struct det_sup *s, const char *log_path, const char *meta_json)
{
	/* (a reader cuts the log at a chunk beyond DET_LOG_CHUNK_MAX: here, at its start) */
	size_t meta_len = strlen(meta_json);
	if (meta_len >= DET_LOG_CHUNK_MAX)
		return sup_fail(s, "the program's arguments and environment make %zu bytes of JSON, more than a "
				   "capture log holds (%u): not recorded", meta_len, DET_LOG_CHUNK_MAX);
	s->log_fd = open(log_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (s->log_fd < 0)
		return sup_fail(s, "cannot create %s: %s", log_path, strerror(errno));
	struct det_log_header h = {.version = DET_LOG_VERSION,
				   .header_bytes = sizeof(h),
				   .rec_bytes = sizeof(struct det_rec),
				   .shm_version = DET_SHM_VERSION};
	memcpy(h.magic, DET_LOG_MAGIC, 8);
	if (write(s->log_fd, &h, sizeof(h)) != (ssize_t)sizeof(h))
		return sup_fail(s, "cannot write %s: %s", log_path, strerror(errno));
	s->cap.bytes = sizeof(h);
	s->cap_reserved = 0;
	s->tsc_start = __rdtsc();
	s->mono_start = sup_mono_ns();
	return put_chunk(s, DET_LOG_META, 0, meta_json, meta_len, NULL, 0);
}

SUP_EXPORT void det_capture_stop(struct det_sup *s)
{
	atomic_store(&s->stop, 1);
	atomic_fetch_add(&s->hdr->capture_kick, 1);
	syscall(SYS_futex, &s->hdr->capture_kick, FUTEX_WAKE, 1, NULL, NULL, 0);
}

SUP_EXPORT void det_capture_stats(struct det_sup *s, struct det_capture_stats *out)
{
	*out = s->cap;
}

SUP_EXPORT int det_capture_stopped(struct det_sup *s)
{
	return atomic_load(&s->cap_stopping);
}

/* Thread i's ring makes no sense: it is not read again, and the recording
 * ends with the reason (recorder/det_record/engine.py stops the program when
 * det_capture_stopped says so). The program wrote over det's memory: a
 * raw clone() thread that shares its creator's det state, a stray pointer. */
static __attribute__((format(printf, 3, 4))) void ring_corrupt(struct det_sup *s, uint32_t i, const char *fmt, ...)
{
	s->cap_threads[i].corrupt = 1;
	if (atomic_load(&s->cap_stopping))
		return;
	char why[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(s->cap_stopped, sizeof(s->cap_stopped),
		 "its event ring of T%u is corrupt (%s): something in the program wrote over det's memory", i, why);
	atomic_store(&s->cap_stopping, 1);
}

/* Are thread i's ring number (`ring`, its index + 1) and published index
 * (`head`) ones the runtime can have written? It publishes at most a ring
 * of entries past what the capture took (recorder/rings.c ring_room),
 * and only into the ring it owns. */
static int ring_consistent(struct det_sup *s, uint32_t i, uint32_t ring, uint64_t head)
{
	uint64_t tail = s->cap_threads[i].tail;
	if (ring > s->fixed.rings)
		ring_corrupt(s, i, "ring number %u, of %u", ring, s->fixed.rings);
	else if (atomic_load(sup_ring_owner(s, ring - 1)) != i + 1)
		ring_corrupt(s, i, "ring %u is owned by T%d", ring, (int)atomic_load(sup_ring_owner(s, ring - 1)) - 1);
	else if (head < tail)
		ring_corrupt(s, i, "its index went back from %llu to %llu", (unsigned long long)tail,
			     (unsigned long long)head);
	else if (head - tail > s->fixed.ring_entries)
		ring_corrupt(s, i, "its index %llu is %llu entries past what was captured, a ring holds %llu",
			     (unsigned long long)head, (unsigned long long)(head - tail),
			     (unsigned long long)s->fixed.ring_entries);
	else
		return 1;
	return 0;
}

/* Thread i called exec and its new image will go on as it (preload/exec.c,
 * process.c resume_exec): its old kernel id is gone meanwhile (a thread
 * other than the first takes the process's id), but its ring is still its
 * own. Freed under it, the new image wrote through ring 0 - 1 (strict mode
 * under load: 1 recording in 10 of an exec from a second thread crashed). */
static int resumes_after_exec(struct det_sup *s, struct det_slot *sl, uint32_t i)
{
	if (sl->proc >= s->fixed.max_procs)
		return 0;
	struct det_proc *p = sup_proc(s, sl->proc);
	return atomic_load(&p->state) == DET_PS_EXEC && atomic_load(&p->exec_thread) == i + 1;
}

/* The kernel thread behind a slot is gone (or a zombie: it runs nothing). */
static int thread_gone(struct det_sup *s, struct det_slot *sl)
{
	uint32_t proc = sl->proc;
	pid_t pid = proc < s->fixed.max_procs ? atomic_load(&sup_proc(s, proc)->pid) : 0;
	if (!pid)
		pid = (pid_t)atomic_load(&s->hdr->attached);
	if (syscall(SYS_tgkill, pid, sl->ktid, 0) != 0)
		return errno == ESRCH;
	/* Only a process's first thread stays a zombie while the others run
	 * (the others are reaped as they end: wait for the next pass). Reading
	 * /proc for every ending thread cost a hunt's run milliseconds of CPU:
	 * reaping a process whose task entries were looked up invalidates them
	 * (proc_flush_pid), slowly. */
	if (sl->ktid != pid)
		return 0;
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, sl->ktid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *paren = strrchr(buf, ')');
	return paren && (paren[2] == 'Z' || paren[2] == 'X');
}

static void release_rings(struct det_sup *s, uint32_t nthreads)
{
	struct det_shm_header *h = s->hdr;
	/* now and then, threads that died without saying so (a child process
	 * killed by a signal) */
	int check_running = s->cap.passes % 128 == 0, freed = 0;
	for (uint32_t i = 0; i < nthreads; i++) {
		struct det_slot *sl = sup_slot(s, i);
		uint32_t st = atomic_load(&sl->state), ring = sl->ring;
		if (!ring || ring > s->fixed.rings || s->cap_threads[i].corrupt ||
		    (st != DET_TS_EXITING && !(check_running && i && st == DET_TS_RUNNING)))
			continue;
		if (resumes_after_exec(s, sl, i) || !thread_gone(s, sl))
			continue; /* the kernel thread may still run destructors */
		if (atomic_load(&sl->head) != s->cap_threads[i].tail)
			continue; /* capture it first */
		ring--;
		sl->ring = 0;
		/* a thread that died running (killed with its process) keeps that
		 * state: the trace says where it was when the program ended */
		if (st == DET_TS_EXITING)
			atomic_store(&sl->state, DET_TS_FREE);
		atomic_store(sup_ring_owner(s, ring), 0);
		freed = 1;
	}
	if (freed) { /* new threads may wait for one (recorder/rings.c det_rec_claim_ring) */
		atomic_fetch_add(&h->rings_freed, 1);
		syscall(SYS_futex, &h->rings_freed, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
}

static int put_thread(struct det_sup *s, uint32_t i)
{
	struct det_slot *sl = sup_slot(s, i);
	struct det_log_thread t = {
		.num = i,
		.parent = i ? sl->parent : 0,
		.ktid = sl->ktid,
		.obj = sl->obj,
		.proc = sl->proc,
		.start_routine = sl->start_routine,
	};
	return put_chunk(s, DET_LOG_THREAD, i, &t, sizeof(t), NULL, 0);
}

/* The process table, modules and clock, when they changed (or `force`). */
static int put_state(struct det_sup *s, int force)
{
	struct det_shm_header *h = s->hdr;
	uint32_t np = atomic_load(&h->next_proc);
	if (np > s->fixed.max_procs)
		np = s->fixed.max_procs;
	size_t plen = (size_t)np * sizeof(struct det_proc);
	const void *procs = sup_proc(s, 0);
	if (force || plen != s->cap_procs_len || memcmp(procs, s->cap_procs, plen) != 0) {
		void *copy = realloc(s->cap_procs, plen ? plen : 1);
		if (!copy)
			return sup_fail(s, "out of memory");
		s->cap_procs = copy;
		memcpy(copy, procs, plen); /* a snapshot: the table keeps changing */
		s->cap_procs_len = plen;
		if (put_chunk(s, DET_LOG_PROCS, 0, copy, plen, NULL, 0))
			return -1;
	}
	uint32_t nm = atomic_load(&h->module_count);
	if (nm > DET_MAX_MODULES)
		nm = DET_MAX_MODULES;
	if (force || nm != s->cap_modules) {
		s->cap_modules = nm;
		if (put_chunk(s, DET_LOG_MODULES, 0, h->modules, (size_t)nm * sizeof(struct det_module), NULL, 0))
			return -1;
	}
	struct det_log_clock c;
	clock_now(s, &c);
	return put_chunk(s, DET_LOG_CLOCK, 0, &c, sizeof(c), NULL, 0);
}

/* One pass: everything published so far goes to the log. */
static int capture_pass(struct det_sup *s, int final)
{
	uint64_t threads = atomic_load(&s->hdr->clock) >> DET_SEQ_BITS;
	uint32_t nthreads = threads > s->fixed.max_threads ? s->fixed.max_threads : (uint32_t)threads;
	uint64_t cap = s->fixed.ring_entries, most = DET_LOG_CHUNK_MAX / sizeof(struct det_rec);
	for (uint32_t i = 0; i < nthreads; i++) {
		struct det_slot *sl = sup_slot(s, i);
		struct sup_cap_thread *ct = &s->cap_threads[i];
		uint32_t ring = sl->ring;
		if (!ring || ct->corrupt)
			continue;
		uint64_t head = atomic_load_explicit(&sl->head, memory_order_acquire);
		uint64_t tail = ct->tail;
		if (head == tail || !ring_consistent(s, i, ring, head))
			continue;
		if (!ct->seen) {
			if (put_thread(s, i))
				return -1;
			ct->seen = 1;
		}
		struct det_rec *r = sup_ring(s, ring - 1);
		while (tail < head) {
			uint64_t at = tail % cap, n = head - tail;
			if (n > cap - at)
				n = cap - at; /* up to the ring's end; the rest in the next chunk */
			if (n > most)
				n = most;
			if (put_chunk(s, DET_LOG_RING, i, &r[at], n * sizeof(*r), NULL, 0))
				return -1;
			tail += n;
			s->cap.entries += n;
		}
		ct->tail = head;
		atomic_store_explicit(&sl->tail, head, memory_order_release);
		if (atomic_load(&sl->waiting) && atomic_exchange(&sl->waiting, 0))
			syscall(SYS_futex, &sl->waiting, FUTEX_WAKE, 1, NULL, NULL, 0);
	}
	if (!final)
		release_rings(s, nthreads);
	s->cap.threads = nthreads;
	s->cap.passes++;
	uint64_t now = sup_mono_ns();
	if (final || now - s->cap_state_at > 200 * 1000 * 1000) {
		s->cap_state_at = now;
		if (final)
			for (uint32_t i = 0; i < nthreads; i++) /* their last identity (exec changes ktid) */
				if (put_thread(s, i))
					return -1;
		if (put_state(s, final))
			return -1;
	}
	return 0;
}

static int capture_loop(struct det_sup *s)
{
	if (put_state(s, 1))
		return -1;
	for (;;) {
		uint32_t kick = atomic_load(&s->hdr->capture_kick);
		int stop = atomic_load(&s->stop);
		uint64_t t0 = sup_mono_ns();
		int r = capture_pass(s, stop);
		if (r == 0 && stop) {
			r = put_chunk(s, DET_LOG_END, 0, NULL, 0, NULL, 0);
			/* give back the space reserved past the end */
			if (r == 0 && s->cap_reserved > s->cap.bytes && s->cap_reserved != UINT64_MAX &&
			    ftruncate(s->log_fd, (off_t)s->cap.bytes) != 0)
				r = sup_fail(s, "cannot end the capture log: %s", strerror(errno));
		}
		s->cap.busy_ns += sup_mono_ns() - t0;
		if (r < 0)
			return -1;
		if (stop)
			return 0;
		struct timespec ts = {0, 1000 * 1000};
		syscall(SYS_futex, &s->hdr->capture_kick, FUTEX_WAIT, kick, &ts, NULL, 0);
	}
}

SUP_EXPORT int det_capture_run(struct det_sup *s)
{
	int r = capture_loop(s);
	/* Nothing drains the rings any more: the program's threads would wait
	 * for room for ever. detrec polls this to stop the program at once. */
	if (r < 0)
		atomic_store(&s->cap_failed, 1);
	return r;
}

SUP_EXPORT int det_capture_failed(struct det_sup *s)
{
	return atomic_load(&s->cap_failed);
}

/* det_capture_run on a thread of its own, started and joined here: a
 * Python thread's start costs a hunt's run about a millisecond (the new
 * thread has to take the GIL to say it started). */
static void *capture_thread(void *arg)
{
	struct det_sup *s = arg;
	s->cap_rc = det_capture_run(s);
	return NULL;
}

SUP_EXPORT int det_capture_start(struct det_sup *s)
{
	int e = pthread_create(&s->cap_thread, NULL, capture_thread, s);
	if (e)
		return sup_fail(s, "cannot start the capture thread: %s", strerror(e));
	s->cap_started = 1;
	return 0;
}

SUP_EXPORT int det_capture_finish(struct det_sup *s)
{
	det_capture_stop(s);
	if (!s->cap_started)
		return 0;
	pthread_join(s->cap_thread, NULL);
	s->cap_started = 0;
	return s->cap_rc;
}

/* det_sup_free's first step for a recording's handle: a capture still
 * running (a recording given up half way) is stopped and joined. */
static void capture_release(struct det_sup *s)
{
	if (s->cap_started)
		det_capture_finish(s);
}

/* A recording's region (laid out by sup_map), and the capture's table of
 * its threads. */
SUP_EXPORT struct det_sup *det_sup_record_new(uint32_t max_threads, uint32_t rings, uint64_t ring_entries,
					      uint32_t objects_cap)
{
	struct det_sup *s = sup_alloc();
	if (!s)
		return NULL;
	s->release = capture_release;
	struct sup_layout l = {
		.mode = DET_MODE_RECORD,
		.max_threads = max_threads,
		.rings = rings,
		.objects_cap = sup_pow2(objects_cap, 1024),
		.ring_entries = ring_entries,
	};
	/* object ids count objects alive, threads (whose handles may be bound
	 * late) and the ids of destroyed objects waiting to be taken again, up
	 * to what a trace holds (convert_log.c MAX_OBJ) */
	uint64_t ids = (uint64_t)l.objects_cap + max_threads + 1 + (uint64_t)DET_OBJ_FREE_KINDS * (DET_OBJ_QUARANTINE + 1);
	l.objseq_count = (uint32_t)(ids < 0x110000u ? ids : 0x110000u);
	if (sup_map(s, &l) != 0)
		return s; /* the caller reads det_sup_error() and frees */
	s->cap_threads = calloc(max_threads, sizeof(*s->cap_threads));
	if (!s->cap_threads)
		sup_fail(s, "out of memory");
	return s;
}
