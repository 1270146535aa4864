/*
 * isolated/heap.c - the program's heap in isolated mode: malloc and its
 * family over one memfd, so that a thread-process's heap writes are private
 * until it commits them (isolated/memory.c).
 *
 * Rules of this file:
 *  - Each thread slot allocates only from its own arena (a fixed 1 GiB
 *    piece of the region; its header, free lists and bump pointer inside
 *    it): two threads never write the same allocator word, so allocation is
 *    never a conflict, and an address depends only on the thread's own
 *    calls, not on the interleaving. free() puts a block on the freeing
 *    thread's own lists, whichever arena it came from.
 *  - Blocks are power-of-two size classes from 32 bytes, with a 16-byte
 *    header (a free block keeps its list link after it); no block
 *    is bigger than an arena (larger requests fail with ENOMEM: a limit).
 *  - Set up on the first call (which may come before any constructor), by
 *    the one thread there is then; until isolation starts the region is
 *    mapped MAP_SHARED, so the memfd holds what the main thread wrote.
 */
#include "iso.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NCLASS 32
#define HDR 16
#define MAGIC 0x150a
#define ALIGNED 0xa119

struct arena {
	uint64_t bump; /* next free offset in the arena */
	void *free_list[NCLASS];
};

struct hdr {
	uint32_t cls;   /* size class (block = 16 << cls bytes), or offset back for an aligned block */
	uint32_t magic; /* MAGIC, or ALIGNED */
	uint64_t pad;
};

struct iso_region iso_heap_region;

void *iso_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return MAP_FAILED;
	}
	return (void *)r;
}
static int heap_ready;

void iso_heap_init(void)
{
	if (heap_ready)
		return;
	int fd = memfd_create("det-isolated-heap", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)ISO_HEAP_SIZE) != 0)
		iso_die("cannot make the heap's memfd: %s", strerror(errno));
	void *p = iso_mmap(NULL, ISO_HEAP_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
	if (p == MAP_FAILED)
		iso_die("cannot map the heap: %s", strerror(errno));
	iso_heap_region.base = (uintptr_t)p;
	iso_heap_region.size = ISO_HEAP_SIZE;
	iso_heap_region.fd = fd;
	heap_ready = 1;
	iso_heap_reset_arena(0);
}

static struct arena *arena_of(int slot)
{
	return (struct arena *)(iso_heap_region.base + (uintptr_t)slot * ISO_ARENA_SIZE);
}

/* A slot's arena as a fresh thread finds it: a slot reused after its
 * thread exited keeps its lists (blocks it gave out may still be in use). */
void iso_heap_reset_arena(int slot)
{
	struct arena *a = arena_of(slot);
	if (a->bump == 0)
		a->bump = (sizeof(struct arena) + 63) & ~63UL;
}

static void *alloc(size_t n)
{
	if (!heap_ready)
		iso_heap_init();
	if (n > ISO_ARENA_SIZE / 2) {
		errno = ENOMEM;
		return NULL;
	}
	uint32_t cls = 1; /* (32 bytes at least: a free block holds its header and a link) */
	while ((16UL << cls) < n + HDR)
		cls++;
	struct arena *a = arena_of(iso_me);
	char *blk = a->free_list[cls];
	if (blk) {
		a->free_list[cls] = *(void **)(blk + HDR);
	} else {
		size_t sz = 16UL << cls;
		/* blocks of a page or more start on a page: fewer pages to diff */
		uint64_t at = sz >= ISO_PAGE ? (a->bump + ISO_PAGE - 1) & ~(ISO_PAGE - 1) : a->bump;
		if (at + sz > ISO_ARENA_SIZE) {
			errno = ENOMEM;
			return NULL;
		}
		blk = (char *)a + at;
		a->bump = at + sz;
	}
	struct hdr *h = (struct hdr *)blk;
	h->cls = cls;
	h->magic = MAGIC;
	return blk + HDR;
}

static struct hdr *header_of(void *p)
{
	struct hdr *h = (struct hdr *)((char *)p - HDR);
	if (h->magic == ALIGNED)
		h = (struct hdr *)((char *)h - h->cls);
	return h;
}

static int ours(void *p)
{
	return heap_ready && (uintptr_t)p >= iso_heap_region.base &&
	       (uintptr_t)p < iso_heap_region.base + iso_heap_region.size;
}

static size_t usable(void *p)
{
	struct hdr *h = header_of(p);
	return (16UL << h->cls) - (size_t)((char *)p - (char *)h);
}

__attribute__((visibility("default"))) void *malloc(size_t n)
{
	return alloc(n);
}

__attribute__((visibility("default"))) void free(void *p)
{
	if (!p || !ours(p))
		return; /* (the loader's own early blocks) */
	struct hdr *h = header_of(p);
	struct arena *a = arena_of(iso_me);
	*(void **)((char *)h + HDR) = a->free_list[h->cls];
	a->free_list[h->cls] = h;
}

__attribute__((visibility("default"))) void *calloc(size_t k, size_t n)
{
	if (n && k > SIZE_MAX / n) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = alloc(k * n);
	if (p)
		memset(p, 0, k * n);
	return p;
}

__attribute__((visibility("default"))) void *realloc(void *p, size_t n)
{
	if (!p)
		return alloc(n);
	if (!n) {
		free(p);
		return NULL;
	}
	size_t have = ours(p) ? usable(p) : 0;
	if (have >= n)
		return p;
	void *q = alloc(n);
	if (q && have)
		memcpy(q, p, have);
	if (q)
		free(p);
	return q;
}

static void *aligned(size_t align, size_t n)
{
	if (align <= HDR)
		return alloc(n);
	char *p = alloc(n + align + HDR);
	if (!p)
		return NULL;
	uintptr_t at = ((uintptr_t)p + HDR + align - 1) & ~(uintptr_t)(align - 1);
	struct hdr *h = (struct hdr *)(at - HDR);
	if ((char *)h != p - HDR) {
		h->cls = (uint32_t)((char *)h - (p - HDR));
		h->magic = ALIGNED;
	}
	return (void *)at;
}

__attribute__((visibility("default"))) int posix_memalign(void **out, size_t align, size_t n)
{
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	void *p = aligned(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

__attribute__((visibility("default"))) void *aligned_alloc(size_t align, size_t n)
{
	return aligned(align, n);
}

__attribute__((visibility("default"))) void *memalign(size_t align, size_t n)
{
	return aligned(align, n);
}

__attribute__((visibility("default"))) void *valloc(size_t n)
{
	return aligned(ISO_PAGE, n);
}

__attribute__((visibility("default"))) void *pvalloc(size_t n)
{
	return aligned(ISO_PAGE, (n + ISO_PAGE - 1) & ~(ISO_PAGE - 1));
}

__attribute__((visibility("default"))) size_t malloc_usable_size(void *p)
{
	return p && ours(p) ? usable(p) : 0;
}
