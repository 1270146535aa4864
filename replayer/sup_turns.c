/*
 * replayer/sup_turns.c - libdetsup.so: the supervisor's side of replay's
 * enforcement backends (replayer/turns.h is the runtime's side).
 *
 * Rules of this file:
 *  - Backend names and numbers come from include/det/turns.def only.
 *  - kmod: detreplay opens /dev/detsched and loads the whole schedule (each
 *    event's prerequisites, read from the trace in one pass: the region
 *    only holds windows of it); its descriptor owns the
 *    schedule, so the schedule dies when detreplay ends or is killed, and
 *    the program's processes attach to it by the id and key left in the
 *    shared header.
 *  - A missing device or a refused schedule is one clear message, never a
 *    silent fall back to another backend.
 */
#include "feeder.h"
#include "det/detsched.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static const char *const names[] = {
#define DET_TURNS(name, number, description) [number] = #name,
#include "det/turns.def"
#undef DET_TURNS
};

#define NAMES (sizeof(names) / sizeof(names[0]))

SUP_EXPORT const char *det_sup_turns_name(uint32_t i)
{
	return i < NAMES ? names[i] : NULL;
}

struct kmod_events {
	struct detsched_event *ev;
	uint64_t *first; /* per thread: its first event's place in ev */
};

static void kmod_dep(void *arg, uint32_t thread, uint64_t idx, const struct det_sched *e)
{
	struct kmod_events *k = arg;
	struct detsched_event *out = &k->ev[k->first[thread] + idx];
	for (int d = 0; d < 2; d++) {
		out->dep_thread[d] = (uint16_t)e->dep_thread[d];
		out->dep_idx[d] = e->dep_idx[d];
	}
}

static int kmod_load(struct det_sup *s)
{
	struct det_shm_header *h = s->hdr;
	int fd = open(DETSCHED_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return sup_fail(s, "--backend=kmod: %s: %s (load det's module first: docs/kmod.md)", DETSCHED_DEVICE,
				errno == ENOENT ? "no such device" : strerror(errno));
	uint32_t n = h->threads_recorded;
	uint32_t *counts = calloc(n, sizeof(*counts));
	struct detsched_event *ev = calloc(h->events_recorded ? h->events_recorded : 1, sizeof(*ev));
	uint64_t *first = calloc(n ? n : 1, sizeof(*first));
	int rc = -1;
	if (!counts || !ev || !first) {
		sup_fail(s, "out of memory");
		goto out;
	}
	uint64_t at = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct det_slot *sl = det_shm_slot(h, i);
		if (sl->sched_count > UINT32_MAX || at + sl->sched_count > h->events_recorded) {
			sup_fail(s, "--backend=kmod: T%u has too many events for the module", i);
			goto out;
		}
		counts[i] = (uint32_t)sl->sched_count;
		first[i] = at;
		at += sl->sched_count;
	}
	/* the region holds windows of the schedule: the module gets all of it */
	struct kmod_events k = {ev, first};
	if (sup_schedule_deps(s, kmod_dep, &k))
		goto out;
	struct detsched_load l = {
		.nthreads = n,
		.counts = (uint64_t)(uintptr_t)counts,
		.events = (uint64_t)(uintptr_t)ev,
		.total = at,
	};
	if (ioctl(fd, DETSCHED_IOC_LOAD, &l) != 0) {
		int e = errno;
		sup_fail(s, "--backend=kmod: %s refused the schedule (%u threads, %llu events): %s%s", DETSCHED_DEVICE,
			 n, (unsigned long long)at, strerror(e),
			 e == EINVAL ? " (more threads or events than its max_threads/max_events parameters allow?)"
			 : e == ENOSPC ? " (too many schedules alive)" : "");
		goto out;
	}
	h->turns_arg[0] = l.id;
	h->turns_arg[1] = l.key;
	s->turns_fd = fd;
	fd = -1;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(counts);
	free(ev);
	free(first);
	return rc;
}

/* kmod: the module's own view of the threads that wait (STATE), as text. */
static int kmod_describe(struct det_sup *s, char *out, uint32_t len)
{
	uint32_t n = s->hdr->threads_recorded, at = 0;
	struct detsched_thread_state *ts = calloc(n ? n : 1, sizeof(*ts));
	struct detsched_state st = {.cap = n, .threads = (uint64_t)(uintptr_t)ts};

	if (!ts || ioctl(s->turns_fd, DETSCHED_IOC_STATE, &st) != 0) {
		free(ts);
		return -1;
	}
	at = (uint32_t)snprintf(out, len, "%s%s:", DETSCHED_DEVICE, st.flags & DETSCHED_STATE_DEAD ? " (dead)" : "");
	for (uint32_t i = 0; i < n && at < len; i++)
		if (ts[i].waiting)
			at += (uint32_t)snprintf(out + at, len - at, " T%u waits in the kernel for its event %llu;", i,
						 (unsigned long long)ts[i].waiting_for);
	if (at < len && out[at - 1] == ':')
		snprintf(out + at, len - at, " no thread waits in the kernel");
	free(ts);
	return 0;
}

SUP_EXPORT int det_sup_turns_describe(struct det_sup *s, char *out, uint32_t len)
{
	if (!len)
		return -1;
	out[0] = 0;
	return s->turns_fd >= 0 ? kmod_describe(s, out, len) : 0;
}

/* What a backend needs from the supervisor before the program starts. */
static int (*const prepare[NAMES])(struct det_sup *s) = {
	[DET_TURNS_kmod] = kmod_load,
};

SUP_EXPORT int det_sup_turns(struct det_sup *s, const char *name)
{
	for (uint32_t i = 0; i < NAMES; i++) {
		if (!names[i] || strcmp(names[i], name))
			continue;
		s->hdr->turns = i;
		return prepare[i] ? prepare[i](s) : 0;
	}
	return sup_fail(s, "no enforcement backend named %s", name);
}
