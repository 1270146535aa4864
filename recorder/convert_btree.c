/*
 * recorder/convert_btree.c - libdetsup.so: event_rows written as SQLite's
 * own b-tree pages (https://www.sqlite.org/fileformat2.html), not through
 * INSERT: SQLite's VDBE costs ~400 ns a row, several times the merge, and
 * capped trace writing at ~2.5 M events/s on this project's machines.
 *
 * Rules of this file:
 *  - The rows are the ones the SQL path writes (same columns and values,
 *    rowid = seq, nothing else in the table, no index on it): readers,
 *    `sqlite3` and PRAGMA integrity_check see an ordinary table. Only the
 *    page layout differs (each leaf filled in seq order).
 *  - While the merge runs, leaf pages go to an unlinked scratch file beside
 *    the trace (the trace's own file is SQLite's meanwhile). Once SQLite has
 *    committed everything else and closed the file, the leaves are appended
 *    after its last page, the interior pages above them, the top node
 *    written over event_rows' root page, and the header's page count and
 *    change counter set; the converter then reopens the file. The trace is
 *    in the private work directory until published, as before: a crash
 *    leaves no trace claimed complete.
 *  - A result that changes after its row was paged (late_result) is kept
 *    and applied by UPDATE once the file is reopened, in the order made.
 *  - Taken only where the file allows it (no auto-vacuum pointer map, no
 *    reserved bytes per page, 512..65536-byte pages); else, or with
 *    DET_CONVERT_PAGES=0 (tests take both ways), rows go through INSERT.
 *  - Every interior page has a cell: SQLite takes one with only its right
 *    pointer for a damaged file.
 */
#include "convert.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The byte at 1 GiB is SQLite's lock byte: its page holds nothing. */
#define PENDING_BYTE 0x40000000u

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* SQLite's varint: big-endian 7-bit groups, the ninth byte whole. */
static int varint(uint8_t *out, uint64_t v)
{
	if (v >> 56) {
		uint8_t b[9];
		b[8] = (uint8_t)v;
		v >>= 8;
		for (int i = 7; i >= 0; i--, v >>= 7)
			b[i] = (uint8_t)((v & 0x7f) | 0x80);
		memcpy(out, b, 9);
		return 9;
	}
	uint8_t b[8];
	int n = 0;
	do {
		b[n++] = (uint8_t)((v & 0x7f) | 0x80);
		v >>= 7;
	} while (v);
	b[0] &= 0x7f;
	for (int i = 0; i < n; i++)
		out[i] = b[n - 1 - i];
	return n;
}

/* An integer's serial type and its width (record format). */
static int int_type(int64_t v, int small, int *width)
{
	if (small && (v == 0 || v == 1)) {
		*width = 0;
		return v ? 9 : 8;
	}
	static const int widths[] = {1, 2, 3, 4, 6, 8};
	for (int t = 0; t < 6; t++) {
		int w = widths[t];
		if (w == 8)
			break;
		int64_t lim = (int64_t)1 << (8 * w - 1);
		if (v >= -lim && v < lim) {
			*width = w;
			return t + 1;
		}
	}
	*width = 8;
	return 6;
}

int pages_open(struct conv *c, const char *db_path)
{
	const char *force = getenv("DET_CONVERT_PAGES");
	if (force && *force == '0')
		return 0;
	uint8_t h[100];
	int fd = open(db_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* (open_db says why) */
	ssize_t n = pread(fd, h, sizeof(h), 0);
	close(fd);
	uint32_t psize = (uint32_t)h[16] << 8 | h[17];
	if (psize == 1)
		psize = 65536;
	if (n != (ssize_t)sizeof(h) || memcmp(h, "SQLite format 3", 16) || psize < 512 || (psize & (psize - 1)) ||
	    h[20] != 0 || get32(h + 52) != 0)
		return 0; /* rows go through INSERT */
	struct pages *p = calloc(1, sizeof(*p));
	char *tmp = malloc(strlen(db_path) + 16);
	if (!p || !tmp || !(p->page = calloc(1, psize))) {
		free(tmp);
		if (p)
			free(p->page);
		free(p);
		return fail(c, "out of memory");
	}
	sprintf(tmp, "%s-event-pages", db_path);
	p->fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (p->fd >= 0)
		unlink(tmp);
	free(tmp);
	if (p->fd < 0) {
		free(p->page);
		free(p);
		return fail(c, "cannot write beside %s: %s", db_path, strerror(errno));
	}
	p->psize = psize;
	p->small = get32(h + 44) >= 4; /* schema format 4: 0 and 1 take no bytes */
	p->content = psize;
	c->pages = p;
	return 0;
}

static int leaf_flush(struct conv *c)
{
	struct pages *p = c->pages;
	if (!p->ncells)
		return 0;
	uint8_t *pg = p->page;
	pg[0] = 0x0d; /* a table leaf */
	put16(pg + 1, 0);
	put16(pg + 3, p->ncells);
	put16(pg + 5, p->content == 65536 ? 0 : p->content);
	pg[7] = 0;
	memset(pg + 8 + 2 * p->ncells, 0, p->content - (8 + 2 * p->ncells));
	if (pwrite(p->fd, pg, p->psize, (off_t)(p->nleaves * p->psize)) != (ssize_t)p->psize)
		return fail(c, "cannot write the events' pages: %s", errno ? strerror(errno) : "short write");
	if (grow((void **)&p->leaf_max, &p->cap_leaf, p->nleaves + 1, sizeof(*p->leaf_max)))
		return fail(c, "out of memory");
	p->leaf_max[p->nleaves++] = p->last_key;
	p->ncells = 0;
	p->content = p->psize;
	return 0;
}

int pages_row(struct conv *c, const int64_t *row)
{
	struct pages *p = c->pages;
	uint8_t cell[64], *o = cell + 11; /* (room for the two varints before it) */
	int types[4], widths[4], body = 0;
	for (int k = 0; k < 4; k++) {
		types[k] = int_type(row[k + 1], p->small, &widths[k]);
		body += widths[k];
	}
	/* the record: its header (size, then seq's NULL: it is the rowid), the values */
	o[0] = 6;
	o[1] = 0;
	for (int k = 0; k < 4; k++)
		o[2 + k] = (uint8_t)types[k];
	uint8_t *v = o + 6;
	for (int k = 0; k < 4; k++)
		for (int b = widths[k] - 1; b >= 0; b--)
			*v++ = (uint8_t)((uint64_t)row[k + 1] >> (8 * b));
	uint32_t rec = (uint32_t)(v - o);
	uint8_t head[18];
	int hn = varint(head, rec);
	hn += varint(head + hn, (uint64_t)row[0]);
	memcpy(o - hn, head, (size_t)hn);
	uint32_t size = (uint32_t)hn + rec;
	if (8 + 2 * (p->ncells + 1) + size > p->content && leaf_flush(c))
		return -1;
	p->content -= size;
	memcpy(p->page + p->content, o - hn, size);
	put16(p->page + 8 + 2 * p->ncells, p->content);
	p->ncells++;
	p->last_key = row[0];
	p->rows++;
	return 0;
}

int pages_late(struct conv *c, int64_t seq, int64_t result)
{
	struct pages *p = c->pages;
	if (grow((void **)&p->late, &p->cap_late, p->nlate + 1, sizeof(*p->late)))
		return fail(c, "out of memory");
	p->late[p->nlate].seq = seq;
	p->late[p->nlate].result = result;
	p->nlate++;
	return 0;
}

/* The next page number after `last` that may hold data. */
static uint32_t next_page(uint32_t last, uint32_t psize)
{
	uint32_t n = last + 1;
	return n == PENDING_BYTE / psize + 1 ? n + 1 : n;
}

static int write_page(struct conv *c, int fd, uint32_t pgno, const uint8_t *pg)
{
	uint32_t psize = c->pages->psize;
	if (pwrite(fd, pg, psize, (off_t)(pgno - 1) * psize) != (ssize_t)psize)
		return fail(c, "cannot write the events' pages: %s", errno ? strerror(errno) : "short write");
	return 0;
}

/* The leaves are in the scratch file: into the trace at db_path (closed by
 * SQLite), with the interior pages, the root and the header. */
static int pages_place(struct conv *c, const char *db_path, uint32_t root)
{
	struct pages *p = c->pages;
	uint32_t psize = p->psize;
	int r = -1, fd = open(db_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	uint8_t *pg = malloc(psize), h[100];
	uint32_t *kids = NULL, nkids = (uint32_t)p->nleaves;
	int64_t *keys = NULL;
	if (fd < 0 || !pg) {
		fail(c, "cannot write %s: %s", db_path, fd < 0 ? strerror(errno) : "out of memory");
		goto out;
	}
	if (pread(fd, h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		fail(c, "cannot read %s", db_path);
		goto out;
	}
	struct stat fst;
	if (fstat(fd, &fst) != 0 || fst.st_size % psize) {
		fail(c, "cannot read %s: not whole pages", db_path);
		goto out;
	}
	uint32_t last = (uint32_t)(fst.st_size / psize); /* (what SQLite counts when the header's count is stale) */
	if (p->nleaves == 1) { /* the root is the one leaf */
		if (pread(p->fd, pg, psize, 0) != (ssize_t)psize || write_page(c, fd, root, pg))
			goto out;
	} else {
		kids = malloc(nkids * sizeof(*kids));
		keys = malloc(nkids * sizeof(*keys));
		if (!kids || !keys) {
			fail(c, "out of memory");
			goto out;
		}
		for (uint64_t i = 0; i < p->nleaves; i++) {
			last = next_page(last, psize);
			if (pread(p->fd, pg, psize, (off_t)(i * psize)) != (ssize_t)psize || write_page(c, fd, last, pg))
				goto out;
			kids[i] = last;
			keys[i] = p->leaf_max[i];
		}
		/* interior levels: each node's cells point left of a key, its last
		 * child is its right pointer; the one node left is the root.
		 * (DET_CONVERT_NODE_CELLS: at most that many cells a node, for
		 * tests, which then meet every shape of tree in a small trace) */
		const char *cap_env = getenv("DET_CONVERT_NODE_CELLS");
		uint32_t cap = cap_env && atoi(cap_env) >= 2 ? (uint32_t)atoi(cap_env) : UINT32_MAX;
		while (nkids > 1) {
			uint32_t nout = 0, ncells = 0, content = psize, i = 0;
			while (i < nkids) {
				/* a node from kids[i..]: cells while they fit, then the right pointer */
				ncells = 0;
				content = psize;
				memset(pg, 0, psize);
				uint32_t j = i, last_size = 0;
				for (; j + 1 < nkids; j++) {
					uint8_t cell[13];
					put32(cell, kids[j]);
					uint32_t size = 4 + (uint32_t)varint(cell + 4, (uint64_t)keys[j]);
					if (12 + 2 * (ncells + 1) + size > content || ncells == cap)
						break;
					content -= size;
					memcpy(pg + content, cell, size);
					put16(pg + 12 + 2 * ncells, content);
					ncells++;
					last_size = size;
				}
				if (j + 2 == nkids && ncells > 1) {
					/* one kid would be left for the next node, a node
					 * with no cell, which SQLite takes for a damaged
					 * file: this one ends a cell earlier (its last
					 * cell's kid becomes its right pointer) */
					ncells--;
					j--;
					memset(pg + content, 0, last_size);
					content += last_size;
					put16(pg + 12 + 2 * ncells, 0);
				}
				pg[0] = 0x05; /* a table interior page */
				put16(pg + 3, ncells);
				put16(pg + 5, content == 65536 ? 0 : content);
				put32(pg + 8, kids[j]);
				int top = i == 0 && j + 1 == nkids;
				uint32_t at = top ? root : (last = next_page(last, psize));
				if (write_page(c, fd, at, pg))
					goto out;
				kids[nout] = at;
				keys[nout] = keys[j];
				nout++;
				i = j + 1;
			}
			nkids = nout;
		}
	}
	/* the header: pages, and a new change counter (which makes the page
	 * count valid); SQLite's version that wrote it */
	uint32_t change = get32(h + 24) + 1;
	put32(h + 24, change);
	put32(h + 28, last);
	put32(h + 92, change);
	put32(h + 96, (uint32_t)sqlite3_libversion_number());
	if (pwrite(fd, h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		fail(c, "cannot write %s: %s", db_path, strerror(errno));
		goto out;
	}
	r = 0;
out:
	free(kids);
	free(keys);
	free(pg);
	if (fd >= 0)
		close(fd);
	return r;
}

int pages_finish(struct conv *c, const char *db_path, const char *const *sql, uint32_t nsql)
{
	struct pages *p = c->pages;
	if (leaf_flush(c))
		return -1;
	uint32_t root = 0;
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(c->db, "SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = 'event_rows'",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW || (root = (uint32_t)sqlite3_column_int64(st, 0)) < 2) {
		sqlite3_finalize(st);
		return fail(c, "cannot find event_rows in %s: %s", db_path, sqlite3_errmsg(c->db));
	}
	sqlite3_finalize(st);
	if (sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		return fail(c, "cannot write %s: %s", db_path, sqlite3_errmsg(c->db));
	db_close(c);
	if (p->nleaves && pages_place(c, db_path, root))
		return -1;
	if (open_db(c, db_path, sql, nsql) || sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return c->err[0] ? -1 : fail(c, "cannot write %s: %s", db_path, sqlite3_errmsg(c->db));
	sqlite3_stmt *up = c->st_sql[DET_SQL_RESULT];
	for (uint64_t i = 0; i < p->nlate; i++) {
		sqlite3_bind_int64(up, 1, p->late[i].result);
		sqlite3_bind_int64(up, 2, p->late[i].seq);
		if (sqlite3_step(up) != SQLITE_DONE)
			return fail(c, "cannot store a result: %s", sqlite3_errmsg(c->db));
		sqlite3_reset(up);
	}
	return 0;
}

void pages_free(struct conv *c)
{
	struct pages *p = c->pages;
	if (!p)
		return;
	if (p->fd >= 0)
		close(p->fd);
	free(p->page);
	free(p->leaf_max);
	free(p->late);
	free(p);
	c->pages = NULL;
}
