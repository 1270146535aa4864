/*
 * tests/programs/det_residue.c - what det's start-up left on the main
 * thread's stack: every word in the 64 KiB below main's frame that points
 * into libdet.so, printed as its offset there ("none" without det).
 *
 * A program that reads an uninitialised local deep in main finds those
 * words; det's start-up runs different code in each mode, so on the
 * program's stack it would leave a recording's words and a replay's
 * (samples/uninit_local read them on a CPU whose loader leaves a shallower
 * stack: an AMD EPYC without AVX-512). Recorded and replayed, the lines
 * must be the same.
 */
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uintptr_t lo, hi;

static int find_det(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "/libdet.so"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
		if (!lo || a < lo)
			lo = a;
		if (b > hi)
			hi = b;
	}
	return 1;
}

#define WORDS 8192
static uintptr_t saved[WORDS];

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
/* A copy of what lies below main's frame, made with no call. */
static __attribute__((noinline)) void keep_below(void)
{
	volatile uintptr_t below[WORDS]; /* never written */
	for (unsigned i = 0; i < WORDS; i++)
		saved[i] = below[i];
}

int main(void)
{
	keep_below(); /* first, before anything else runs on this stack */
	dl_iterate_phdr(find_det, NULL);
	int found = 0;
	for (unsigned i = 0; i < WORDS; i++)
		if (saved[i] >= lo && saved[i] < hi)
			printf("%s%u:+%#lx", found++ ? " " : "", WORDS - 1 - i, (unsigned long)(saved[i] - lo));
	printf(found ? "\n" : "none\n");
	return 0;
}
