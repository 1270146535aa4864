/*
 * supervisor/supervisor.c - libdetsup.so: the shared region seen from detrec
 * and detreplay (creation, layout, thread and failure reports).
 *
 * Rules of this file:
 *  - The region layout is computed here only, for both modes.
 *  - No printing, no exits: errors go to det_sup_error().
 *  - It calls neither side: the handle is made by the capture
 *    (det_sup_record_new) or the feeder (det_sup_replay_new), and what that
 *    side runs on the region is ended through the handle's release.
 */
#include "supervisor.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

SUP_EXPORT uint64_t det_sup_abi(void)
{
	return DET_SUP_ABI;
}

uint64_t sup_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint32_t sup_pow2(uint64_t n, uint32_t min)
{
	uint64_t p = min;
	while (p < n)
		p <<= 1;
	return p > (1u << 31) ? (1u << 31) : (uint32_t)p;
}

int sup_fail(struct det_sup *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
	return -1;
}

struct det_sup *sup_alloc(void)
{
	struct det_sup *s = calloc(1, sizeof(*s));
	if (s) {
		s->fd = -1;
		s->log_fd = -1;
		s->turns_fd = -1;
	}
	return s;
}

static uint64_t page_up(uint64_t n)
{
	return (n + 4095) & ~4095ull;
}

int sup_map(struct det_sup *s, const struct sup_layout *l)
{
	uint64_t off = page_up(sizeof(struct det_shm_header));
	uint64_t slots_off = off;
	off = page_up(off + (uint64_t)l->max_threads * sizeof(struct det_slot));
	uint64_t owners_off = off;
	off = page_up(off + (uint64_t)l->rings * sizeof(uint32_t));
	uint64_t objects_off = off;
	off = page_up(off + (uint64_t)l->objects_cap * sizeof(struct det_objent));
	uint64_t objrev_off = off;
	off = page_up(off + (l->objrev_count + 1) * sizeof(uint64_t));
	uint64_t objseq_off = off;
	off = page_up(off + (uint64_t)l->objseq_count * sizeof(struct det_objseq));
	uint64_t procs_off = off;
	off = page_up(off + (uint64_t)l->max_threads * sizeof(struct det_proc));
	uint64_t pipes_off = off;
	off = page_up(off + (uint64_t)SUP_PIPES * sizeof(uint64_t));
	uint64_t out_locks_off = off;
	off = page_up(off + (uint64_t)SUP_OUT_LOCKS * sizeof(struct det_out_lock));
	uint64_t files_off = off;
	off = page_up(off + (uint64_t)SUP_FILES * sizeof(struct det_file));
	uint64_t file_keys_off = off;
	off = page_up(off + 2 * (uint64_t)SUP_FILES * sizeof(uint64_t));
	uint64_t rings_off = off;
	off = page_up(off + (uint64_t)l->rings * l->ring_entries * sizeof(struct det_rec));
	uint64_t sched_off = off;
	off = page_up(off + l->sched_entries * sizeof(struct det_sched));
	s->data_off = off;
	off = page_up(off + l->data_bytes);

	/* named by the supervisor's pid, as DET_SHM_ENV is: det's watchdog finds
	 * a program process by the region it maps once the process wrote over
	 * its environment (a process title) */
	char name[32];
	snprintf(name, sizeof(name), "det-shm-%07d", (int)getpid());
	s->fd = memfd_create(name, MFD_CLOEXEC);
	if (s->fd < 0)
		return sup_fail(s, "memfd_create: %s", strerror(errno));
	if (ftruncate(s->fd, (off_t)off) != 0)
		return sup_fail(s, "cannot size shared memory to %lu bytes: %s", (unsigned long)off,
				strerror(errno));
	void *p = mmap(NULL, off, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
	if (p == MAP_FAILED)
		return sup_fail(s, "cannot map shared memory: %s", strerror(errno));
	s->hdr = p;
	s->size = off;
	struct det_shm_header *h = s->hdr;
	h->magic = DET_SHM_MAGIC;
	h->version = DET_SHM_VERSION;
	h->mode = l->mode;
	h->size = off;
	h->max_threads = l->max_threads;
	h->slots_off = slots_off;
	h->objects_off = objects_off;
	h->objects_cap = l->objects_cap;
	h->ring_count = l->rings;
	h->ring_owner_off = owners_off;
	h->rings_off = rings_off;
	h->ring_entries = l->ring_entries;
	h->sched_off = sched_off;
	h->objrev_off = objrev_off;
	h->objrev_count = (uint32_t)l->objrev_count;
	h->objseq_off = objseq_off;
	h->objseq_count = l->objseq_count;
	h->procs_off = procs_off;
	h->max_procs = l->max_threads; /* every process has a thread */
	h->pipes_off = pipes_off;
	h->pipes_cap = SUP_PIPES;
	h->out_locks_off = out_locks_off;
	h->out_locks_cap = SUP_OUT_LOCKS;
	h->files_off = files_off;
	h->file_keys_off = file_keys_off;
	h->files_cap = SUP_FILES;
	s->fixed = (struct sup_fixed){
		.mode = l->mode,
		.max_threads = l->max_threads,
		.rings = l->rings,
		.max_procs = l->max_threads,
		.objects_cap = l->objects_cap,
		.files_cap = SUP_FILES,
		.ring_entries = l->ring_entries,
		.slots_off = slots_off,
		.owners_off = owners_off,
		.rings_off = rings_off,
		.procs_off = procs_off,
		.objects_off = objects_off,
		.files_off = files_off,
	};
	return 0;
}

SUP_EXPORT const char *det_sup_error(struct det_sup *s)
{
	return s ? s->err : "out of memory";
}

SUP_EXPORT int det_sup_fd(struct det_sup *s)
{
	return s->fd;
}

SUP_EXPORT void det_sup_free(struct det_sup *s)
{
	if (!s)
		return;
	if (s->release)
		s->release(s); /* (a recording given up half way: its capture) */
	if (s->hdr)
		munmap(s->hdr, s->size);
	if (s->fd >= 0)
		close(s->fd);
	if (s->log_fd >= 0)
		close(s->log_fd);
	free(s->cap_threads);
	free(s->cap_procs);
	if (s->turns_fd >= 0)
		close(s->turns_fd); /* kmod: the schedule dies with its owner */
	free(s);
}

SUP_EXPORT uint32_t det_sup_threads(struct det_sup *s)
{
	struct det_shm_header *h = s->hdr;
	uint64_t n = s->fixed.mode == DET_MODE_REPLAY ? h->threads_recorded : atomic_load(&h->clock) >> DET_SEQ_BITS;
	return n > s->fixed.max_threads ? s->fixed.max_threads : (uint32_t)n;
}

SUP_EXPORT int det_sup_thread(struct det_sup *s, uint32_t num, struct det_thread_info *out)
{
	if (num >= s->fixed.max_threads)
		return -1;
	struct det_slot *sl = sup_slot(s, num);
	memset(out, 0, sizeof(*out));
	out->num = num;
	out->parent = sl->parent;
	out->ktid = (uint64_t)(int64_t)sl->ktid;
	out->create_seq = sl->create_seq;
	out->obj = sl->obj;
	out->state = atomic_load(&sl->state);
	out->blocked_kind = atomic_load(&sl->blocked_kind);
	out->blocked_obj = sl->blocked_obj;
	if (!out->blocked_obj && sl->blocked_addr) /* bound by another thread since */
		out->blocked_obj = det_obj_lookup(sup_objects(s), s->fixed.objects_cap, sl->blocked_addr);
	out->blocked_ra = sl->blocked_ra;
	out->proc = sl->proc;
	out->yielded = atomic_load(&sl->strict_yielded);
	out->crash_sig = atomic_load(&sl->crash_sig);
	if (out->crash_sig) {
		out->crash_code = sl->crash_code;
		out->crash_pc = sl->crash_pc;
		out->crash_addr = sl->crash_addr;
		out->crash_call_ra = sl->crash_call_ra;
		out->crash_caller = sl->crash_caller;
		out->crash_entry = sl->crash_entry;
	}
	if (s->fixed.mode == DET_MODE_REPLAY) {
		out->events = atomic_load(&sl->done);
		out->planned = sl->sched_count;
		out->sleeping = atomic_load(&sl->sleeping);
	}
	return 0;
}

SUP_EXPORT uint32_t det_sup_procs(struct det_sup *s)
{
	uint32_t n = atomic_load(&s->hdr->next_proc);
	return n < s->fixed.max_procs ? n : s->fixed.max_procs;
}

SUP_EXPORT int det_sup_proc(struct det_sup *s, uint32_t idx, struct det_proc_info *out)
{
	if (idx >= det_sup_procs(s))
		return -1;
	struct det_proc *p = sup_proc(s, idx);
	memset(out, 0, sizeof(*out));
	out->pid = atomic_load(&p->pid);
	out->rec_pid = p->rec_pid;
	out->parent = (int64_t)p->parent - 1;
	out->first_thread = p->first_thread;
	out->create_seq = p->create_seq;
	out->state = atomic_load(&p->state);
	out->execs = p->execs;
	out->status = atomic_load(&p->status_known) ? atomic_load(&p->status) : -1;
	memcpy(out->exe, p->exe, sizeof(p->exe));
	return 0;
}

SUP_EXPORT int det_sup_replay_process(struct det_sup *s, uint32_t idx, int64_t rec_pid, int64_t rec_status)
{
	struct det_shm_header *h = s->hdr;
	if (idx >= s->fixed.max_procs)
		return sup_fail(s, "the trace has more processes than this replay allows (%u)", s->fixed.max_procs);
	struct det_proc *p = sup_proc(s, idx);
	p->rec_pid = (int32_t)rec_pid;
	p->rec_status = (int32_t)rec_status;
	p->rec_status_known = rec_status >= 0;
	if (atomic_load(&h->next_proc) < idx + 1)
		atomic_store(&h->next_proc, idx + 1);
	return 0;
}

/* A recorded thread's process, its kernel thread id (what the program's
 * ids stand for: preload/process.c translates them), and whether it waited
 * for the strict token after its last event when the recording ended. */
SUP_EXPORT int det_sup_replay_thread(struct det_sup *s, uint32_t num, uint32_t proc, int64_t rec_ktid, uint32_t yielded)
{
	if (num >= s->fixed.max_threads || proc >= s->fixed.max_procs)
		return sup_fail(s, "the trace puts thread T%u in process %u", num, proc);
	struct det_slot *sl = sup_slot(s, num);
	sl->proc = proc;
	sl->rec_ktid = (int32_t)rec_ktid;
	atomic_store(&sl->strict_yielded, yielded ? 1 : 0);
	return 0;
}

SUP_EXPORT int det_sup_replay_ran_last(struct det_sup *s, uint32_t num)
{
	if (num >= s->hdr->threads_recorded)
		return sup_fail(s, "the trace says thread T%u ran last, but it has no such thread", num);
	atomic_store(&s->hdr->strict_owner, num + 1); /* strict: it starts with the token */
	atomic_store(&s->hdr->ran_last, num + 1);
	return 0;
}

SUP_EXPORT int64_t det_sup_attached(struct det_sup *s)
{
	return atomic_load(&s->hdr->attached);
}

SUP_EXPORT int det_sup_failed(struct det_sup *s, char *buf, uint32_t len)
{
	struct det_shm_header *h = s->hdr;
	/* the capture's reason first: it is the supervisor's own */
	int capture = atomic_load(&s->cap_stopping);
	int failed = capture || atomic_load(&h->failed);
	if (failed && buf && len)
		snprintf(buf, len, "%.*s", capture ? (int)sizeof(s->cap_stopped) : (int)sizeof(h->error),
			 capture ? s->cap_stopped : h->error);
	return failed;
}

SUP_EXPORT int det_sup_divergence(struct det_sup *s, uint64_t out[10], char *what, uint32_t len)
{
	struct det_shm_header *h = s->hdr;
	if (!atomic_load(&h->diverged))
		return 0;
	struct det_divergence *d = &h->div;
	out[0] = d->thread;
	out[1] = d->idx;
	out[2] = d->seq;
	out[3] = d->reason;
	out[4] = d->want_kind;
	out[5] = d->want_obj;
	out[6] = d->got_kind;
	out[7] = d->got_obj;
	out[8] = d->got_addr;
	out[9] = d->ra;
	if (what && len) {
		strncpy(what, d->what, len - 1);
		what[len - 1] = 0;
	}
	return 1;
}

SUP_EXPORT int det_sup_module(struct det_sup *s, uint32_t i, uint64_t *base, char *path, uint32_t len)
{
	struct det_shm_header *h = s->hdr;
	if (i >= atomic_load(&h->module_count) || i >= DET_MAX_MODULES || !len)
		return 0;
	*base = h->modules[i].base;
	strncpy(path, h->modules[i].path, len - 1);
	path[len - 1] = 0;
	return 1;
}

SUP_EXPORT int det_sup_file(struct det_sup *s, uint32_t i, char *path, uint32_t len, int64_t *size,
			    int64_t *mtime_ns)
{
	struct det_shm_header *h = s->hdr;
	uint32_t n = atomic_load(&h->files_count);
	if (i >= n || i >= s->fixed.files_cap || !len)
		return -1;
	struct det_file *f = sup_file(s, i);
	uint32_t how = atomic_load(&f->how);
	if (!how)
		return 0; /* its process died while writing it */
	*size = f->size;
	*mtime_ns = f->mtime_ns;
	strncpy(path, f->path, len - 1);
	path[len - 1] = 0;
	return (int)how;
}

SUP_EXPORT uint32_t det_sup_files_lost(struct det_sup *s)
{
	uint32_t n = atomic_load(&s->hdr->files_count);
	return n > s->fixed.files_cap ? n - s->fixed.files_cap : 0;
}

SUP_EXPORT void det_sup_add_flags(struct det_sup *s, uint32_t flags)
{
	s->hdr->flags |= flags;
}

SUP_EXPORT void det_sup_schedule(struct det_sup *s, uint32_t quantum, uint32_t watchdog_ms, uint64_t seed,
				 uint32_t delay_us)
{
	s->hdr->strict_quantum = quantum;
	s->hdr->strict_watchdog_ms = watchdog_ms;
	s->hdr->chaos_seed = seed;
	s->hdr->chaos_delay_us = delay_us;
}

SUP_EXPORT uint32_t det_sup_preemptions(struct det_sup *s)
{
	return atomic_load(&s->hdr->preemptions);
}

SUP_EXPORT uint32_t det_sup_strict_owner(struct det_sup *s)
{
	return atomic_load(&s->hdr->strict_owner);
}

SUP_EXPORT uint32_t det_sup_crashed(struct det_sup *s)
{
	return atomic_load(&s->hdr->ran_last);
}

SUP_EXPORT uint64_t det_sup_cc_points(struct det_sup *s)
{
	return atomic_load(&s->hdr->cc_points);
}

SUP_EXPORT void det_sup_pct(struct det_sup *s, const uint64_t *points, uint32_t n, uint32_t spin_steps)
{
	if (n > 8)
		n = 8;
	for (uint32_t i = 0; i < n; i++)
		s->hdr->pct_change[i] = points[i];
	s->hdr->pct_changes = n;
	s->hdr->strict_spin_steps = spin_steps;
}
