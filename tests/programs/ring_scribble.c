/* tests/programs/ring_scribble.c - writes over det's shared region from
 * inside the program, as a buggy or hostile program can: the region is
 * mapped writable into every process of the program. detrec must end the
 * recording in one line, never crash, copy garbage for ever or hang.
 *
 * ring_scribble head|ring|layout|procs PID
 *   head:   T0's published ring index far past anything it wrote
 *   ring:   T0's ring number out of range
 *   layout: the header's offsets, counts and sizes (rings, slots,
 *           processes, files) and the thread count
 *   procs:  a second process in the process table, running as PID (a
 *           process that is not the program's)
 * From then on it makes raw system calls only, which det does not see (an
 * event would publish T0's real index again, and det's runtime in it reads
 * the header too): head and ring sleep 20 s first (detrec stops them
 * before), then each writes "finished" and exits 0. */
#include "det/shm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static long raw_syscall(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return ret;
}

/* Is det's region mapped here? (/proc/self/maps names its memfd) */
static int det_mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int found = 0;
	while (f && fgets(line, sizeof(line), f))
		if (strtoul(line, NULL, 16) == DET_SHM_ADDR && strstr(line, "det-shm"))
			found = 1;
	if (f)
		fclose(f);
	return found;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "head";
	if (!det_mapped()) {
		fprintf(stderr, "ring_scribble: det's region is not mapped (run it under detrec)\n");
		return 2;
	}
	for (int i = 0; i < 1000; i++) { /* events in T0's ring */
		pthread_mutex_lock(&lock);
		pthread_mutex_unlock(&lock);
	}
	printf("scribbling: %s\n", mode);
	fflush(stdout);
	struct det_shm_header *h = (struct det_shm_header *)DET_SHM_ADDR;
	struct det_slot *t0 = det_shm_slot(h, 0);
	if (!strcmp(mode, "head")) {
		atomic_store(&t0->head, atomic_load(&t0->tail) + 1000 * h->ring_entries + 7);
	} else if (!strcmp(mode, "ring")) {
		t0->ring = 0xfffffff0u;
	} else if (!strcmp(mode, "procs") && argc > 2) {
		struct det_proc *p = det_shm_proc(h, 1);
		atomic_store(&p->pid, atoi(argv[2]));
		atomic_store(&p->state, DET_PS_RUNNING);
		atomic_store(&h->next_proc, 2);
	} else if (!strcmp(mode, "layout")) {
		h->max_threads = 0xffffffffu;
		h->slots_off = 1ull << 46;
		h->ring_count = 0xffffffffu;
		h->ring_owner_off = 1ull << 46;
		h->rings_off = 1ull << 46;
		h->ring_entries = 0;
		h->procs_off = 1ull << 46;
		h->max_procs = 0xffffffffu;
		atomic_store(&h->next_proc, 0xffffffffu);
		h->files_off = 1ull << 46;
		h->files_cap = 0xffffffffu;
		atomic_store(&h->files_count, 0xfffffff0u);
		h->objects_off = 1ull << 46;
		h->objects_cap = 0;
		atomic_store(&h->clock, atomic_load(&h->clock) | (0xffffull << DET_SEQ_BITS));
	} else {
		fprintf(stderr, "ring_scribble: unknown mode %s\n", mode);
		return 2;
	}
	struct timespec ts = {20, 0};
	if (!strcmp(mode, "head") || !strcmp(mode, "ring"))
		raw_syscall(SYS_nanosleep, (long)&ts, 0, 0);
	raw_syscall(SYS_write, 1, (long)"finished\n", 9);
	raw_syscall(SYS_exit_group, 0, 0, 0);
	return 0;
}
