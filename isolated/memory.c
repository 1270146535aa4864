/*
 * isolated/memory.c - private views, twins and commits: how a thread-
 * process's writes to the program's globals and heap stay its own until it
 * commits them, and how it takes the others' commits.
 *
 * Rules of this file:
 *  - A region (the main program's writable data after RELRO; the heap; the
 *    stacks; each private writable mapping made before the first thread) is a
 *    memfd mapped MAP_PRIVATE at the program's addresses, read-only between
 *    commits: the first write to a page faults (SIGSEGV), the handler copies
 *    the page (its twin, the page as of the last update), and makes it
 *    writable. The page is now the process's own (copy-on-write). (A file
 *    mapped so before the first thread is read from the file until a commit
 *    materializes a page in the memfd, from which every view maps it then:
 *    iso_adopt_mapping.)
 *  - Commit (in the thread's turn, every other thread stopped at a
 *    synchronization point): the bytes of each dirty page that differ from
 *    its twin go to the memfd, through a MAP_SHARED view. A byte whose memfd
 *    value differs from the twin too was committed by another thread in
 *    this round: a write-write race, reported once per address.
 *  - Update (after the serial phase): the dirty pages are dropped
 *    (MADV_DONTNEED on a private file mapping reads the file again) and
 *    made read-only, except the thread's own stack and the pages it wrote
 *    in its last KEEP_IDLE rounds, which stay private and take the bytes
 *    others committed in place (where the memfd differs from the twin; a
 *    commit writes its bytes into the twin too). Pages never written read
 *    the memfd directly, and it changes only while every thread is
 *    stopped, so what a thread reads depends on the commit order only.
 */
#include "iso.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static struct iso_region globals, stacks, main_stack;
/* is_dirty: 0 a page is the memfd's (read-only); PAGE_TWINNED private and
 * writable, not written since; PAGE_WRITTEN + n written, then not in the
 * n commits since; PAGE_DROP to drop at the update */
enum { PAGE_TWINNED = 1, PAGE_WRITTEN, PAGE_DROP = 255 };
#define KEEP_IDLE 2 /* commits a written page stays private without a write */
/* the program's private writable mappings made before its first thread
 * (Phoenix maps its input so), each a region of its own */
#define MAX_MAPPINGS 64
static struct iso_region mappings[MAX_MAPPINGS];
#define HEAP_RUN 16
static void stacks_start(void);
static uintptr_t load_bias;

static void *map_anon(size_t len, int shared)
{
	void *p = iso_mmap(NULL, len, PROT_READ | PROT_WRITE,
		       (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		iso_die("cannot map %zu bytes: %s", len, strerror(errno));
	return p;
}

/* The region's bookkeeping, its shared view, and its private view made
 * read-only (the memfd already holds the region's bytes). */
void iso_make_region(struct iso_region *r, uintptr_t base, uintptr_t size, int fd, int remap)
{
	size_t pages = size / ISO_PAGE;
	r->base = base;
	r->size = size;
	r->fd = fd;
	r->shared = iso_mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (r->shared == MAP_FAILED)
		iso_die("cannot map a shared view: %s", strerror(errno));
	r->twin = map_anon(size, 0);
	r->last = map_anon(pages * sizeof(uint64_t), 1);
	r->last_pc = map_anon(pages * sizeof(uintptr_t), 1);
	r->first_pc = map_anon(pages * sizeof(uintptr_t), 0);
	r->dirty = map_anon(pages * sizeof(uint32_t), 0);
	r->is_dirty = map_anon(pages, 0);
	r->ndirty = 0;
	r->file_fd = -1;
	if (remap && iso_mmap((void *)base, size, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE, fd, 0) == MAP_FAILED)
		iso_die("cannot map the private view: %s", strerror(errno));
}

struct data_seg {
	uintptr_t start, end, relro_end;
};

static int find_data(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct data_seg *d = arg;
	load_bias = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
			d->start = a & ~(ISO_PAGE - 1);
			d->end = (a + ph->p_memsz + ISO_PAGE - 1) & ~(ISO_PAGE - 1);
		}
		if (ph->p_type == PT_GNU_RELRO)
			d->relro_end = (a + ph->p_memsz) & ~(ISO_PAGE - 1);
	}
	return 1; /* the main program only: it comes first */
}

/* Isolation starts (the main thread, alone, creates the first thread). */
void iso_memory_start(void)
{
	struct data_seg d = {0, 0, 0};
	dl_iterate_phdr(find_data, &d);
	if (d.relro_end > d.start)
		d.start = d.relro_end;
	if (d.end > d.start) {
		int fd = memfd_create("det-isolated-globals", MFD_CLOEXEC);
		size_t len = d.end - d.start;
		if (fd < 0 || ftruncate(fd, (off_t)len) != 0 ||
		    pwrite(fd, (void *)d.start, len, 0) != (ssize_t)len)
			iso_die("cannot copy the program's globals: %s", strerror(errno));
		iso_make_region(&globals, d.start, len, fd, 1);
	}
	iso_heap_init();
	/* the heap's private view so far: the used part of the main thread's
	 * arena goes to the memfd before the view is remapped over it */
	struct iso_region *h = &iso_heap_region;
	uint64_t used = *(uint64_t *)h->base;
	used = (used + ISO_PAGE - 1) & ~(ISO_PAGE - 1);
	if (pwrite(h->fd, (void *)h->base, used, 0) != (ssize_t)used)
		iso_die("cannot copy the heap: %s", strerror(errno));
	iso_make_region(h, h->base, h->size, h->fd, 1);
	stacks_start();
}


/* --- stacks --------------------------------------------------------------
 * Stacks are isolated memory too, so that a thread can write a result into
 * its creator's frame (pthread_create(&t, 0, f, &local)): the main thread's
 * stack is remapped over a memfd, and each other thread runs on a stack of
 * its own slot in one more region. A thread's own stack is never dropped at
 * an update (it runs on it, and det's own frames are written after its
 * commit): its dirty pages stay private and writable, and take only the
 * bytes others committed (shared != twin); twin := shared after that. */

/* Replace [newlo, hi) (the main stack, in use) by a private mapping of fd
 * whose offset (lo - newlo) on holds [lo, hi) now: the copy (pwrite) and
 * the mapping are two system calls in one asm block, which writes nothing
 * to the stack in between (inputs are read from memory, outputs are
 * registers). */
static int remap_main_stack(int fd, uintptr_t lo, uintptr_t hi, uintptr_t newlo)
{
	long args[6] = {fd, (long)lo, (long)(hi - lo), (long)(lo - newlo), (long)newlo, (long)(hi - newlo)};
	const long *a = args;
	long wrote, mapped;
	__asm__ volatile("mov $18, %%eax\n\t" /* pwrite64 */
			 "mov 0(%[a]), %%rdi\n\t"
			 "mov 8(%[a]), %%rsi\n\t"
			 "mov 16(%[a]), %%rdx\n\t"
			 "mov 24(%[a]), %%r10\n\t"
			 "syscall\n\t"
			 "mov %%rax, %%rbx\n\t"
			 "mov $9, %%eax\n\t" /* mmap */
			 "mov 32(%[a]), %%rdi\n\t"
			 "mov 40(%[a]), %%rsi\n\t"
			 "mov $3, %%edx\n\t"     /* PROT_READ | PROT_WRITE */
			 "mov $0x12, %%r10d\n\t" /* MAP_PRIVATE | MAP_FIXED */
			 "mov 0(%[a]), %%r8\n\t"
			 "xor %%r9d, %%r9d\n\t"
			 "syscall\n\t"
			 : "=&a"(mapped), "=&b"(wrote)
			 : [a] "r"(a)
			 : "rdi", "rsi", "rdx", "r10", "r8", "r9", "rcx", "r11", "memory");
	return wrote == (long)(hi - lo) && mapped == (long)newlo;
}

static void stacks_start(void)
{
	size_t size = (size_t)ISO_MAX_THREADS * ISO_STACK_SIZE;
	int fd = memfd_create("det-isolated-stacks", MFD_CLOEXEC);
	void *at = iso_mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (fd < 0 || ftruncate(fd, (off_t)size) != 0 || at == MAP_FAILED)
		iso_die("cannot make the stacks' memfd: %s", strerror(errno));
	iso_make_region(&stacks, (uintptr_t)at, size, fd, 1);

	uintptr_t lo = 0, hi = 0;
	FILE *maps = fopen("/proc/self/maps", "re");
	char line[512];
	while (maps && fgets(line, sizeof line, maps))
		if (strstr(line, "[stack]"))
			sscanf(line, "%lx-%lx", &lo, &hi);
	if (maps)
		fclose(maps);
	if (!hi)
		iso_die("cannot find the main thread's stack");
	/* room to grow: up to ISO_STACK_SIZE, where nothing is mapped */
	uintptr_t newlo = lo;
	if (hi - lo < ISO_STACK_SIZE) {
		uintptr_t want = hi - ISO_STACK_SIZE;
		void *p = iso_mmap((void *)want, lo - want, PROT_NONE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE | MAP_NORESERVE, -1, 0);
		if (p == (void *)want)
			newlo = want;
		else if (p != MAP_FAILED)
			syscall(SYS_munmap, p, lo - want);
	}
	int sfd = memfd_create("det-isolated-main-stack", MFD_CLOEXEC);
	if (sfd < 0 || ftruncate(sfd, (off_t)(hi - newlo)) != 0 || !remap_main_stack(sfd, lo, hi, newlo))
		iso_die("cannot remap the main thread's stack: %s", strerror(errno));
	iso_make_region(&main_stack, newlo, hi - newlo, sfd, 0);
	if (mprotect((void *)newlo, hi - newlo, PROT_READ) != 0)
		iso_die("cannot write-protect the main thread's stack: %s", strerror(errno));
}

void *iso_stack_top(int slot)
{
	return (void *)((stacks.base + (uintptr_t)(slot + 1) * ISO_STACK_SIZE - 256) & ~15UL);
}

/* Is page pg of r this thread's own stack? */
static int own_stack(const struct iso_region *r, size_t pg)
{
	if (r == &main_stack)
		return iso_me == 0;
	if (r == &stacks)
		return pg * ISO_PAGE / ISO_STACK_SIZE == (size_t)iso_me;
	return 0;
}

/* The lowest page of each stack slot stays read-only: an overflow faults. */
static int stack_guard(const struct iso_region *r, size_t pg)
{
	return r == &stacks && (pg * ISO_PAGE) % ISO_STACK_SIZE == 0;
}

static struct iso_region *region_of(uintptr_t a)
{
	if (globals.size && a >= globals.base && a < globals.base + globals.size)
		return &globals;
	if (iso_heap_region.shared && a >= iso_heap_region.base &&
	    a < iso_heap_region.base + iso_heap_region.size)
		return &iso_heap_region;
	if (stacks.size && a >= stacks.base && a < stacks.base + stacks.size)
		return &stacks;
	if (main_stack.size && a >= main_stack.base && a < main_stack.base + main_stack.size)
		return &main_stack;
	for (int i = 0; i < MAX_MAPPINGS; i++)
		if (mappings[i].size && a >= mappings[i].base && a < mappings[i].base + mappings[i].size)
			return &mappings[i];
	return NULL;
}

/* This process's view of page pg.. of a file mapping's region maps the
 * memfd from now on (a commit materialized them there). */
static void view_on_memfd(struct iso_region *r, size_t pg, size_t n)
{
	if (iso_mmap((void *)(r->base + pg * ISO_PAGE), n * ISO_PAGE, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE,
		     r->fd, (off_t)(pg * ISO_PAGE)) == MAP_FAILED)
		iso_die("cannot map a committed page of a mapping: %s", strerror(errno));
	memset(r->on_memfd + pg, 1, n);
}

static void materialize(struct iso_region *r, size_t pg)
{
	size_t off = pg * ISO_PAGE;
	if (off < r->readable) {
		size_t n = r->readable - off < ISO_PAGE ? r->readable - off : ISO_PAGE;
		if (pread(r->file_fd, r->shared + off, n, r->file_off + (off_t)off) != (ssize_t)n)
			iso_die("cannot read a mapped file's page: %s", strerror(errno));
	}
	r->materialized[pg] = 1;
	r->mat->pages[r->mat->n++] = (uint32_t)pg;
}

/* The pages others materialized since this process last looked: its view
 * maps them from the memfd (a page it has private now: when it drops it). */
static void take_materialized(struct iso_region *r)
{
	if (r->file_fd < 0)
		return;
	for (size_t n = r->mat->n; r->mat_seen < n; r->mat_seen++) {
		uint32_t pg = r->mat->pages[r->mat_seen];
		if (!r->on_memfd[pg] && !r->is_dirty[pg])
			view_on_memfd(r, pg, 1);
	}
}

/* A private writable mapping the program made before its first thread
 * becomes isolated memory. A file's mapping is not copied: the private view
 * stays the program's own mapping of the file, made read-only, and a page
 * goes to the region's memfd when a thread first commits it (it reads the
 * file's page there first: materialize), after which every thread's view
 * maps that page of the memfd (take_materialized, at its update). The pages
 * the program wrote before its first thread are its own copies: they go
 * to the memfd now. Anonymous memory (or a mapping of a file det cannot
 * read again) is copied to the memfd (the first `readable` bytes, all-zero
 * pages left as holes) and the view replaces it at the same address. */
void iso_adopt_mapping(uintptr_t start, size_t len, size_t readable, int file_fd, off_t file_off)
{
	struct iso_region *r = NULL;
	for (int i = 0; i < MAX_MAPPINGS && !r; i++)
		if (!mappings[i].size)
			r = &mappings[i];
	if (!r)
		iso_die("more than %d private writable mappings made before the first thread", MAX_MAPPINGS);
	size_t size = (len + ISO_PAGE - 1) & ~(ISO_PAGE - 1);
	readable = readable < size ? readable : size;
	int fd = memfd_create("det-isolated-mapping", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)size) != 0)
		iso_die("cannot make a mapping's memfd: %s", strerror(errno));
	int pagemap = file_fd >= 0 ? open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC) : -1;
	if (pagemap >= 0) {
		size_t pages = size / ISO_PAGE;
		iso_make_region(r, start, size, fd, 0);
		r->file_fd = file_fd;
		r->file_off = file_off;
		r->readable = readable;
		r->materialized = map_anon(pages, 1);
		r->mat = map_anon(sizeof *r->mat + pages * sizeof(uint32_t), 1);
		r->on_memfd = map_anon(pages, 0);
		r->mat_seen = 0;
		/* pagemap: bit 63 present, 62 swapped, 61 a file's page */
		uint64_t e[512];
		for (size_t pg = 0; pg < pages; pg += 512) {
			size_t n = pages - pg < 512 ? pages - pg : 512;
			if (pread(pagemap, e, n * 8, (off_t)((start / ISO_PAGE + pg) * 8)) != (ssize_t)(n * 8))
				iso_die("cannot read /proc/self/pagemap: %s", strerror(errno));
			for (size_t k = 0; k < n; k++)
				if (((e[k] >> 63 & 1) && !(e[k] >> 61 & 1)) || (e[k] >> 62 & 1)) {
					memcpy(r->shared + (pg + k) * ISO_PAGE, (void *)(start + (pg + k) * ISO_PAGE), ISO_PAGE);
					r->materialized[pg + k] = 1;
					r->mat->pages[r->mat->n++] = (uint32_t)(pg + k);
				}
		}
		close(pagemap);
		if (mprotect((void *)start, size, PROT_READ) != 0)
			iso_die("cannot write-protect a mapping: %s", strerror(errno));
		take_materialized(r);
		return;
	}
	if (file_fd >= 0)
		close(file_fd);
	static const uint64_t zero[ISO_PAGE / 8];
	size_t run = 0; /* start of the run of non-zero pages being gathered */
	for (size_t off = 0;; off += ISO_PAGE) {
		size_t n = off >= readable ? 0 : readable - off < ISO_PAGE ? readable - off : ISO_PAGE;
		if (n && memcmp((void *)(start + off), zero, n) != 0)
			continue;
		size_t end = off < readable ? off : readable; /* the run is [run, end) */
		for (size_t w = run; w < end;) {
			ssize_t k = pwrite(fd, (void *)(start + w), end - w, (off_t)w);
			if (k <= 0)
				iso_die("cannot copy a mapping: %s", strerror(errno));
			w += (size_t)k;
		}
		run = off + ISO_PAGE;
		if (!n)
			break;
	}
	iso_make_region(r, start, size, fd, 1);
}

/* munmap by the program of [a, a + len): a region it covers is this
 * thread's no longer (its other threads keep their view until they unmap it
 * too); 0 when the range is no isolated memory, -1 when it is part of one. */
int iso_forget_mapping(uintptr_t a, size_t len)
{
	uintptr_t e = a + len;
	for (int i = 0; i < MAX_MAPPINGS; i++) {
		struct iso_region *r = &mappings[i];
		if (!r->size || e <= r->base || a >= r->base + r->size)
			continue;
		if (a > r->base || e < r->base + ((r->size - 1) & ~(ISO_PAGE - 1)) + 1)
			return -1;
		size_t pages = r->size / ISO_PAGE;
		/* (det's own maps: not through the program's munmap) */
		syscall(SYS_munmap, r->shared, r->size);
		syscall(SYS_munmap, r->twin, r->size);
		syscall(SYS_munmap, r->last, pages * sizeof(uint64_t));
		syscall(SYS_munmap, r->last_pc, pages * sizeof(uintptr_t));
		syscall(SYS_munmap, r->first_pc, pages * sizeof(uintptr_t));
		syscall(SYS_munmap, r->dirty, pages * sizeof(uint32_t));
		syscall(SYS_munmap, r->is_dirty, pages);
		if (r->file_fd >= 0) {
			syscall(SYS_munmap, r->materialized, pages);
			syscall(SYS_munmap, r->mat, sizeof *r->mat + pages * sizeof(uint32_t));
			syscall(SYS_munmap, r->on_memfd, pages);
			close(r->file_fd);
		}
		close(r->fd);
		memset(r, 0, sizeof *r);
	}
	return 0;
}

/* A write fault: 1 when it was the first write to an isolated page (now
 * twinned and writable), 0 when it is the program's own fault. */
int iso_region_fault(uintptr_t addr, uintptr_t pc)
{
	struct iso_region *r = region_of(addr);
	if (!r)
		return 0;
	size_t pg = (addr - r->base) / ISO_PAGE;
	if (r->is_dirty[pg] || stack_guard(r, pg))
		return 0;
	/* the heap is twinned by aligned runs of HEAP_RUN pages: a fault costs
	 * ~40 us here, a copy and a diff of a page ~1 us, and heap writes come
	 * in runs (buffers) */
	size_t from = pg, to = pg + 1;
	if (r == &iso_heap_region) {
		from = pg & ~(size_t)(HEAP_RUN - 1);
		to = from + HEAP_RUN;
	}
	if (mprotect((void *)(r->base + from * ISO_PAGE), (to - from) * ISO_PAGE, PROT_READ | PROT_WRITE) != 0)
		return 0;
	for (size_t k = from; k < to; k++) {
		if (r->is_dirty[k])
			continue;
		/* the twin is the memfd's page: the same bytes as the read-only
		 * private view, except where the main thread wrote its stack
		 * before it was write-protected (those bytes are its own changes) */
		/* (a file mapping's page no commit materialized: the file's, in the view) */
		const unsigned char *was = r->file_fd >= 0 && !r->materialized[k] ? (const unsigned char *)r->base
											: r->shared;
		memcpy(r->twin + k * ISO_PAGE, was + k * ISO_PAGE, ISO_PAGE);
		r->is_dirty[k] = PAGE_TWINNED;
		r->first_pc[k] = pc;
		r->dirty[r->ndirty++] = (uint32_t)k;
		atomic_fetch_add_explicit(&iso_ctl->twins, 1, memory_order_relaxed);
	}
	return 1;
}

/* --- naming an address: det's way, the variable and offset -------------- */

static const unsigned char *exe_image;
static size_t exe_size;

static const char *symbol_at(uintptr_t off, int type, uintptr_t *start, uintptr_t *size)
{
	if (!exe_image) {
		int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) != 0)
			return NULL;
		void *m = iso_mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		close(fd);
		if (m == MAP_FAILED)
			return NULL;
		exe_image = m;
		exe_size = (size_t)st.st_size;
	}
	const ElfW(Ehdr) *eh = (const void *)exe_image;
	if (exe_size < sizeof *eh || eh->e_shoff + (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) > exe_size)
		return NULL;
	const ElfW(Shdr) *sh = (const void *)(exe_image + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum)
			continue;
		const ElfW(Sym) *sym = (const void *)(exe_image + sh[i].sh_offset);
		size_t n = sh[i].sh_size / sizeof *sym;
		const char *strs = (const char *)exe_image + sh[sh[i].sh_link].sh_offset;
		for (size_t k = 0; k < n; k++) {
			if (ELF64_ST_TYPE(sym[k].st_info) != type)
				continue;
			if (off >= sym[k].st_value && off < sym[k].st_value + (sym[k].st_size ? sym[k].st_size : 1)) {
				*start = sym[k].st_value;
				*size = sym[k].st_size;
				return strs + sym[k].st_name;
			}
		}
	}
	return NULL;
}

/* The variable at addr, as "name+offset"; [*start, *end) its bytes. */
void iso_name(uintptr_t addr, char *buf, size_t len, uintptr_t *start, uintptr_t *end)
{
	if (region_of(addr) == &globals) {
		uintptr_t sym = 0, size = 0;
		const char *s = symbol_at(addr - load_bias, STT_OBJECT, &sym, &size);
		if (s) {
			snprintf(buf, len, "%s+%lu", s, (unsigned long)(addr - load_bias - sym));
			*start = load_bias + sym;
			*end = *start + (size ? size : 1);
		} else {
			snprintf(buf, len, "the global at %#lx", (unsigned long)(addr - load_bias));
		}
	} else if (region_of(addr) == &main_stack) {
		snprintf(buf, len, "T0's stack, %#lx below its top", (unsigned long)(main_stack.base + main_stack.size - addr));
	} else if (region_of(addr) == &stacks) {
		uintptr_t off = addr - stacks.base;
		snprintf(buf, len, "T%lu's stack, %#lx below its top", (unsigned long)(off / ISO_STACK_SIZE),
			 (unsigned long)(ISO_STACK_SIZE - off % ISO_STACK_SIZE));
	} else {
		uintptr_t off = addr - iso_heap_region.base;
		snprintf(buf, len, "heap: T%lu's arena+%#lx", (unsigned long)(off / ISO_ARENA_SIZE),
			 (unsigned long)(off % ISO_ARENA_SIZE));
	}
}

/* The program's code at pc, as "function+offset{exe:0xOFF}" (OFF: the
 * address in the main program's file, which detrun turns into the source
 * line), "a library" outside the main program. */
void iso_code_name(uintptr_t pc, char *buf, size_t len)
{
	uintptr_t sym = 0, size = 0;
	const char *s = pc >= load_bias ? symbol_at(pc - load_bias, STT_FUNC, &sym, &size) : NULL;
	if (s)
		snprintf(buf, len, "%s+%#lx{exe:%#lx}", s, (unsigned long)(pc - load_bias - sym),
			 (unsigned long)(pc - load_bias));
	else
		snprintf(buf, len, "a library");
}

/* --- commit and update ---------------------------------------------------- */

/* A byte this thread and another changed between the same two rounds (to
 * different values: two writes of one value, such as the loader's lazy
 * binding of the same function in two threads, are not reported). Each
 * variable (heap: each 8-byte word) is reported once. */
static void conflict(struct iso_region *r, uintptr_t addr, size_t pg)
{
	struct iso_ctl *c = iso_ctl;
	c->conflicts++;
	for (unsigned i = 0; i < c->nreported; i++)
		if (addr >= c->reported[i].start && addr < c->reported[i].end)
			return;
	if (c->nreported >= ISO_MAX_REPORTS)
		return;
	char name[200], mine[120], theirs[120], line[600];
	uintptr_t start = addr & ~7UL, end = start + 8;
	iso_name(addr, name, sizeof name, &start, &end);
	c->reported[c->nreported].start = start;
	c->reported[c->nreported].end = end;
	c->nreported++;
	uint64_t last = r->last[pg];
	int other = (last >> 8) == c->round ? (int)(last & 0xff) : -1;
	iso_code_name(r->last_pc[pg], theirs, sizeof theirs);
	iso_code_name(r->first_pc[pg], mine, sizeof mine);
	/* (the code named is each thread's first write to the variable's page
	 * in the round: the racing store itself when nothing else near it was
	 * written before it) */
	int n = snprintf(line, sizeof line, "race: T%d and T%d wrote %s (first writes to its page: T%d in %s, T%d in %s)\n",
			 other, iso_me, name, other, theirs, iso_me, mine);
	if (write(2, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1)) < 0)
		return;
}

static void commit_region(struct iso_region *r)
{
	if (!r->size)
		return;
	uint64_t stamp = iso_ctl->round << 8 | (uint64_t)iso_me;
	for (size_t i = 0; i < r->ndirty; i++) {
		size_t pg = r->dirty[i], off = pg * ISO_PAGE;
		if (r->file_fd >= 0 && !r->materialized[pg])
			materialize(r, pg);
		const uint64_t *mine = (const uint64_t *)(r->base + off);
		uint64_t *twin = (uint64_t *)(r->twin + off);
		uint64_t *shared = (uint64_t *)(r->shared + off);
		/* the twin takes the bytes it commits (the memfd's bytes as of
		 * its commit), for a page that stays private (its own stack, a
		 * kept page): the update takes the bytes that differ from them,
		 * the others' later commits, even one that restores what the
		 * page held before this thread's write (the wait that commits it
		 * may block, with no update in between) */
		uint64_t *keep = twin;
		int changed = 0;
		for (size_t w = 0; w < ISO_PAGE / 8; w++) {
			if (mine[w] == twin[w])
				continue;
			changed = 1;
			const unsigned char *mb = (const void *)&mine[w], *tb = (const void *)&twin[w];
			unsigned char *sb = (void *)&shared[w];
			for (int b = 0; b < 8; b++) {
				if (mb[b] == tb[b])
					continue;
				if (sb[b] != tb[b] && sb[b] != mb[b])
					conflict(r, r->base + off + w * 8 + (size_t)b, pg);
				sb[b] = mb[b];
			}
			keep[w] = mine[w];
		}
		if (changed) {
			r->last[pg] = stamp;
			r->last_pc[pg] = r->first_pc[pg];
		}
		uint8_t *st = &r->is_dirty[pg];
		*st = changed ? PAGE_WRITTEN : *st == PAGE_TWINNED || *st >= PAGE_WRITTEN + KEEP_IDLE ? PAGE_DROP : *st + 1;

	}
}

void iso_commit(void)
{
	if (globals.size)
		commit_region(&globals);
	commit_region(&iso_heap_region);
	commit_region(&stacks);
	commit_region(&main_stack);
	for (int i = 0; i < MAX_MAPPINGS; i++)
		commit_region(&mappings[i]);
}

static int by_page(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* A page written in one of the last KEEP_IDLE rounds stays private and
 * writable at the update (it takes the others' bytes in place), so that a
 * page a thread writes round after round (pca's covariance column between
 * its lock and unlock rounds, reverse_index's sorted array) costs two page
 * diffs a round instead of a fault, a twin, a drop and a refault. Not
 * another thread's stack (a new thread's copy of its creator's, written
 * after its commit). */
static int kept_when_written(const struct iso_region *r, size_t pg)
{
	return r->is_dirty[pg] >= PAGE_WRITTEN && r->is_dirty[pg] != PAGE_DROP && r != &stacks && r != &main_stack;
}

static void update_region(struct iso_region *r, int keep_written)
{
	if (!r->size)
		return;
	qsort(r->dirty, r->ndirty, sizeof *r->dirty, by_page);
	size_t kept = 0;
	for (size_t i = 0; i < r->ndirty;) {
		size_t pg = r->dirty[i];
		if (own_stack(r, pg) || (keep_written && kept_when_written(r, pg))) {
			/* take the others' bytes; the page stays private (a file's
			 * page no commit materialized: none to take) */
			size_t off = pg * ISO_PAGE;
			if (r->file_fd >= 0 && !r->materialized[pg]) {
				r->dirty[kept++] = r->dirty[i++];
				continue;
			}
			uint64_t *mine = (uint64_t *)(r->base + off), *twin = (uint64_t *)(r->twin + off);
			const uint64_t *shared = (const uint64_t *)(r->shared + off);
			for (size_t w = 0; w < ISO_PAGE / 8; w++)
				if (shared[w] != twin[w]) {
					const unsigned char *sb = (const void *)&shared[w], *tb = (const void *)&twin[w];
					unsigned char *mb = (void *)&mine[w];
					for (int b = 0; b < 8; b++)
						if (sb[b] != tb[b])
							mb[b] = sb[b];
					twin[w] = shared[w];
				}
			r->dirty[kept++] = r->dirty[i++];
			continue;
		}
		size_t j = i + 1;
		while (j < r->ndirty && r->dirty[j] == r->dirty[j - 1] + 1 && !own_stack(r, r->dirty[j]) &&
		       !(keep_written && kept_when_written(r, r->dirty[j])))
			j++;
		for (size_t k = i; k < j; k++)
			r->is_dirty[r->dirty[k]] = 0;
		if (r->file_fd >= 0) { /* a committed page: the memfd's from now on */
			for (size_t k = i; k < j; k++) {
				size_t pg = r->dirty[k];
				if (r->materialized[pg] && !r->on_memfd[pg])
					view_on_memfd(r, pg, 1);
				else if (madvise((void *)(r->base + pg * ISO_PAGE), ISO_PAGE, MADV_DONTNEED) != 0 ||
					 mprotect((void *)(r->base + pg * ISO_PAGE), ISO_PAGE, PROT_READ) != 0)
					iso_die("cannot drop a private page: %s", strerror(errno));
			}
			i = j;
			continue;
		}
		void *p = (void *)(r->base + (uintptr_t)r->dirty[i] * ISO_PAGE);
		size_t len = (j - i) * ISO_PAGE;
		if (madvise(p, len, MADV_DONTNEED) != 0 || mprotect(p, len, PROT_READ) != 0)
			iso_die("cannot drop a private page: %s", strerror(errno));
		i = j;
	}
	r->ndirty = kept;
	take_materialized(r);
}

void iso_update(int keep_written)
{
	update_region(&globals, keep_written);
	update_region(&iso_heap_region, keep_written);
	update_region(&stacks, keep_written);
	update_region(&main_stack, keep_written);
	for (int i = 0; i < MAX_MAPPINGS; i++)
		update_region(&mappings[i], keep_written);
}
