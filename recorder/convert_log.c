/*
 * recorder/convert_log.c - libdetsup.so: the converter's log reader: the
 * capture log (recorder/logfmt.h) mapped, checked chunk by chunk, and read
 * by one cursor per thread (load_head: a thread's next event and what came
 * with it); det_log_meta reads its META chunk alone.
 *
 * Rules of this file:
 *  - The log is read in place (mapped), one cursor per thread; nothing is
 *    read past the first chunk whose length or checksum is wrong: that is
 *    where a killed writer stopped, and the file is cut there.
 *  - A chunk whose checksum is right was written whole: one that det could
 *    not have written (a length its kind cannot have, a thread or object
 *    number beyond any run's) fails the conversion with a message naming
 *    it and where it is, before it can size an allocation. What the merge
 *    does for an event does not grow with the thread numbers a log names.
 */
#include "convert.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static struct stream *stream_of(struct conv *c, uint32_t thread)
{
	if (thread >= (1u << 16)) {
		fail(c, "%s: a chunk names thread T%u (threads are numbered below 65536): not a log det wrote", c->path,
		     thread);
		return NULL;
	}
	if (thread >= c->nst) {
		uint64_t cap = c->nst;
		if (grow((void **)&c->st, &cap, thread + 1, sizeof(*c->st))) {
			fail(c, "out of memory");
			return NULL;
		}
		c->nst = (uint32_t)cap;
	}
	return &c->st[thread];
}

static int add_piece(struct conv *c, uint32_t thread, uint64_t off, uint32_t n)
{
	struct stream *s = stream_of(c, thread);
	if (!s)
		return -1;
	uint64_t cap = s->cap;
	if (grow((void **)&s->pieces, &cap, s->npieces + 1, sizeof(*s->pieces)))
		return fail(c, "out of memory");
	s->cap = (uint32_t)cap;
	s->pieces[s->npieces++] = (struct piece){off, n};
	return 0;
}

/* What a chunk of each kind this det reads holds: entries of `unit` bytes,
 * exactly one when `one` (END: none). A chunk whose checksum is right but
 * whose length is not so was not written by det. */
static const struct chunk_shape {
	const char *name;
	uint32_t unit, one;
} shapes[] = {
	[DET_LOG_META] = {"META", 8, 0},
	[DET_LOG_RING] = {"ring", sizeof(struct det_rec), 0},
	[DET_LOG_THREAD] = {"THREAD", sizeof(struct det_log_thread), 1},
	[DET_LOG_PROCS] = {"PROCS", sizeof(struct det_proc), 0},
	[DET_LOG_MODULES] = {"MODULES", sizeof(struct det_module), 0},
	[DET_LOG_CLOCK] = {"CLOCK", sizeof(struct det_log_clock), 1},
	[DET_LOG_END] = {"END", 0, 1},
};

/* Read the chunks; returns the length of the good part. */
int64_t scan(struct conv *c, const char *path)
{
	const struct det_log_header *h = (const void *)c->map;
	if (c->size < sizeof(*h) || memcmp(h->magic, DET_LOG_MAGIC, 8) != 0)
		return fail(c, "%s: not a det capture log", path);
	if (h->version != DET_LOG_VERSION || h->rec_bytes != sizeof(struct det_rec) ||
	    h->header_bytes != sizeof(*h) || h->shm_version != DET_SHM_VERSION)
		return fail(c, "%s: capture log version %u (runtime %u), this det reads version %u (runtime %u)", path,
			    h->version, h->shm_version, DET_LOG_VERSION, DET_SHM_VERSION);
	uint64_t off = sizeof(*h);
	int clock = 0;
	while (off + sizeof(struct det_log_chunk) <= c->size) {
		const struct det_log_chunk *k = (const void *)(c->map + off);
		const uint8_t *p = (const uint8_t *)(k + 1);
		if (k->bytes % 8 || k->bytes > DET_LOG_CHUNK_MAX || off + sizeof(*k) + k->bytes > c->size ||
		    det_log_check(p, k->bytes, k->type, k->bytes) != k->check)
			break;
		uint64_t poff = off + sizeof(*k);
		const struct chunk_shape *sh = k->type < sizeof(shapes) / sizeof(shapes[0]) ? &shapes[k->type] : NULL;
		if (sh && sh->name && (sh->one ? k->bytes != sh->unit : k->bytes % sh->unit))
			return fail(c, "%s: a %s chunk of %u bytes at byte %llu: not a log det wrote", path, sh->name,
				    k->bytes, (unsigned long long)off);
		switch (k->type) {
		case DET_LOG_RING:
			if (add_piece(c, k->thread, poff, k->bytes / sizeof(struct det_rec)))
				return -1;
			break;
		case DET_LOG_THREAD: {
			struct stream *s = stream_of(c, k->thread);
			if (!s)
				return -1;
			memcpy(&s->ident, p, sizeof(s->ident));
			s->has_ident = 1;
			break;
		}
		case DET_LOG_PROCS:
			c->procs = (const void *)p;
			c->nprocs = k->bytes / sizeof(struct det_proc);
			break;
		case DET_LOG_MODULES:
			c->mods = (const void *)p;
			c->nmods = k->bytes / sizeof(struct det_module);
			break;
		case DET_LOG_CLOCK: {
			struct det_log_clock ck;
			memcpy(&ck, p, sizeof(ck));
			c->strict = !!(ck.flags & DET_F_STRICT);
			c->clock = ck;
			if (ck.mono2 > ck.mono1 && ck.tsc2 > ck.tsc1)
				c->tsc_per_ns = (double)(ck.tsc2 - ck.tsc1) / (double)(ck.mono2 - ck.mono1);
			clock = 1;
			break;
		}
		case DET_LOG_END:
			c->stats.complete = 1;
			break;
		default:
			break; /* META, or a kind this det does not need */
		}
		off = poff + k->bytes;
	}
	if (!clock)
		c->tsc_per_ns = 0; /* no calibration: timestamps stay 0 */
	return (int64_t)off;
}

/* Object ids are those a trace may hold (det.validate MAX_ID: 2^20 objects
 * and the threads' own): an entry naming another is not det's, and would
 * have the order's per-object counts (count_of) grow to it. */
#define MAX_OBJ 0x10FFFFu

int entry_bad(struct conv *c, struct stream *s, const struct det_rec *e)
{
	int names_object = e->kind < DET_KIND_LIMIT || e->kind == DET_REC_OBJECT || e->kind == DET_REC_AUXSEQ;
	if (!names_object || e->obj <= MAX_OBJ)
		return 0;
	return fail(c, "%s: thread T%u's entry at byte %llu names object %u (ids stop at %u): not a log det wrote",
		    c->path, (unsigned)(s - c->st), (unsigned long long)((const uint8_t *)e - c->map), e->obj, MAX_OBJ);
}

int map_log(struct conv *c, const char *log_path, int *fd, int writable)
{
	*fd = open(log_path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (*fd < 0)
		return fail(c, "cannot open %s: %s", log_path, strerror(errno));
	struct stat st;
	if (fstat(*fd, &st) != 0)
		return fail(c, "cannot read %s: %s", log_path, strerror(errno));
	c->size = (size_t)st.st_size;
	if (c->size) {
		void *m = mmap(NULL, c->size, PROT_READ, MAP_PRIVATE, *fd, 0);
		if (m == MAP_FAILED)
			return fail(c, "cannot map %s: %s", log_path, strerror(errno));
		c->map = m;
		madvise(m, c->size, MADV_SEQUENTIAL);
	}
	return 0;
}

/* An event's ts in ns since the program started (CLOCK_MONOTONIC at the
 * runtime's start, mono0): a process that traps rdtsc logs CLOCK_MONOTONIC
 * ns, the others TSC ticks, placed by the capture's own (TSC, ns) pair. */
static int64_t ts_ns(struct conv *c, uint64_t ts, uint16_t flags)
{
	const struct det_log_clock *k = &c->clock;
	double ns;
	if (flags & DET_RF_TS_NS)
		ns = (double)ts - (double)k->mono0;
	else if (c->tsc_per_ns > 0)
		ns = (double)k->mono1 - (double)k->mono0 + ((double)ts - (double)k->tsc1) / c->tsc_per_ns;
	else
		return 0;
	if (!(ns > 0))
		return 0;
	return ns < 0x1p63 ? (int64_t)ns : INT64_MAX; /* (a clock that makes no sense) */
}

/* Move the thread's cursor to its next event, gathering what goes with it;
 * results for events already emitted are applied on the way. */
int load_head(struct conv *c, struct stream *s)
{
	s->head = NULL;
	s->forced_head = 0;
	s->npend = 0;
	s->aux_pos = UINT64_MAX;
	const struct det_rec *e;
	while ((e = entry_at(c, s))) {
		advance(s);
		if (entry_bad(c, s, e))
			return -1;
		if (e->kind < DET_KIND_LIMIT) {
			s->head = e;
			s->ts_raw += e->dts;
			s->head_ts = ts_ns(c, s->ts_raw, e->flags);
			s->head_result = e->flags & DET_RF_PENDING ? DET_RESULT_PENDING : 0;
			/* results that follow it are its own (the call came back) */
			const struct det_rec *r;
			while ((r = entry_at(c, s)) && r->kind == DET_REC_RESULT && r->seq == s->emitted) {
				s->head_result = r->result;
				advance(s);
			}
			return 0;
		}
		if (e->kind == DET_REC_RESULT) {
			if (late_result(c, s, e->seq, e->result))
				return -1;
			continue;
		}
		if (e->kind == DET_REC_AUXSEQ) {
			s->aux_pos = e->seq;
			s->aux_obj = e->obj;
			continue;
		}
		if (e->kind == DET_REC_TS) {
			s->ts_raw = e->ts;
			continue;
		}
		uint64_t cap = s->cap_pend;
		if (grow((void **)&s->pend, &cap, s->npend + 1, sizeof(*s->pend)))
			return fail(c, "out of memory");
		s->cap_pend = (uint32_t)cap;
		s->pend[s->npend++] = e;
	}
	return 0;
}

SUP_EXPORT int det_log_meta(const char *log_path, char *buf, uint32_t len)
{
	int fd = open(log_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -snprintf(buf, len, "cannot open %s: %s", log_path, strerror(errno)) - 1;
	struct det_log_header h;
	struct det_log_chunk k;
	int r = -1;
	if (read(fd, &h, sizeof(h)) != (ssize_t)sizeof(h) || memcmp(h.magic, DET_LOG_MAGIC, 8) != 0) {
		snprintf(buf, len, "%s: not a det capture log", log_path);
	} else if (h.version != DET_LOG_VERSION) {
		snprintf(buf, len, "%s: capture log version %u, this det reads version %u", log_path, h.version,
			 DET_LOG_VERSION);
	} else if (read(fd, &k, sizeof(k)) != (ssize_t)sizeof(k) || k.type != DET_LOG_META) {
		snprintf(buf, len, "%s: the capture log has no META chunk", log_path);
	} else if (k.bytes % 8 || k.bytes > DET_LOG_CHUNK_MAX) {
		snprintf(buf, len, "%s: its META chunk says it holds %u bytes (at most %u, in 8s): not a det capture log",
			 log_path, k.bytes, DET_LOG_CHUNK_MAX);
	} else {
		char *p = malloc(k.bytes + 1);
		if (p && read(fd, p, k.bytes) == (ssize_t)k.bytes &&
		    det_log_check(p, k.bytes, k.type, k.bytes) == k.check) {
			p[k.bytes] = 0;
			size_t n = strlen(p);
			if (n + 1 <= len) {
				memcpy(buf, p, n + 1);
				r = (int)n;
			} else {
				snprintf(buf, len, "%s: its META chunk needs %zu bytes", log_path, n + 1);
			}
		} else {
			snprintf(buf, len, "%s: its META chunk is damaged", log_path);
		}
		free(p);
	}
	close(fd);
	return r;
}
