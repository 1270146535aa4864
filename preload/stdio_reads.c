/*
 * preload/stdio_reads.c - what stdio reads (fgets, fread, getline, scanf,
 * getc, a popen'ed command's output) goes through det's read.
 *
 * glibc's stdio fills a FILE's buffer from its descriptor with libc's
 * internal read, which no preload sees: a file read through stdio was read
 * afresh in replay, unchecked (/dev/urandom, /proc, a configuration edited
 * since, stdin).
 *
 * Rules of this file:
 *  - stdio reads a descriptor through the read slot of the FILE's vtable,
 *    _IO_file_read for files, pipes (popen) and wide streams alike. glibc
 *    checks on every call that a FILE's vtable lies in its own vtable
 *    section, which is in libc's RELRO: so det rewrites, once, before the
 *    program runs, every word of libc's RELRO that holds _IO_file_read's
 *    address (the slot of each vtable) to det's, and puts the protection
 *    back. Nothing else of glibc's stdio changes.
 *  - det's replacement does what _IO_file_read does, through det's read
 *    entry, so each refill of the buffer is an event of det's read with
 *    its mode's rules (a regular file re-read and checked or kept, a device
 *    or terminal recorded, the program's own pipe re-read).
 *  - Except a FILE opened with "c" (no cancellation), which is how glibc
 *    opens files for itself (the time zone, nss's /etc files,
 *    /proc/self/maps): those reads stay libc's own, as before det. Their
 *    caller may hold a lock of libc's (the time zone's, taken by whichever
 *    thread first asks for local time) that det cannot see, so the thread
 *    doing them need not be the recording's.
 *  - Without _IO_file_read exported (another C library), nothing changes.
 */
#include "inputs.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

typedef ssize_t (*file_read_fn)(FILE *f, void *buf, ssize_t n);

static file_read_fn libc_file_read;

/* _IO_file_read's work (a FILE's descriptor, a buffer, its size), through
 * det's exported read: det's stub takes the call as the program's. */
#define GLIBC_IO_FLAGS2_NOTCANCEL 2 /* (glibc's libio.h: a FILE opened with "c") */

static ssize_t det_file_read(FILE *f, void *buf, ssize_t n)
{
	if (f->_flags2 & GLIBC_IO_FLAGS2_NOTCANCEL)
		return libc_file_read(f, buf, n);
	return read(fileno_unlocked(f), buf, (size_t)n);
}

struct relro_find {
	uintptr_t inside; /* an address in the object sought */
	uintptr_t start, end;
};

static int find_relro(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct relro_find *rf = data;
	int mine = 0;
	uintptr_t start = 0, end = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + p->p_vaddr;
		if (p->p_type == PT_LOAD && rf->inside >= lo && rf->inside < lo + p->p_memsz)
			mine = 1;
		if (p->p_type == PT_GNU_RELRO) {
			start = lo;
			end = lo + p->p_memsz;
		}
	}
	if (!mine)
		return 0;
	rf->start = start;
	rf->end = end;
	return 1;
}

DET_HIDDEN void det_stdio_reads_init(void)
{
	if (!libc_file_read)
		libc_file_read = (file_read_fn)dlsym(RTLD_NEXT, "_IO_file_read");
	struct relro_find rf = {(uintptr_t)libc_file_read, 0, 0};
	if (!libc_file_read || !dl_iterate_phdr(find_relro, &rf) || rf.start >= rf.end)
		return;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = rf.start & ~(page - 1), hi = (rf.end + page - 1) & ~(page - 1);
	/* (RELRO is read-only once the loader is done; it stays so after) */
	if (det_sys(SYS_mprotect, (long)lo, (long)(hi - lo), PROT_READ | PROT_WRITE, 0, 0, 0) != 0)
		return;
	for (uintptr_t *w = (uintptr_t *)((rf.start + 7) & ~(uintptr_t)7); (uintptr_t)(w + 1) <= rf.end; w++)
		if (*w == (uintptr_t)libc_file_read)
			*w = (uintptr_t)det_file_read;
	det_sys(SYS_mprotect, (long)lo, (long)(hi - lo), PROT_READ, 0, 0, 0);
}
