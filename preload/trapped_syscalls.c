/*
 * preload/trapped_syscalls.c - raw system call instructions in a library's
 * or the executable's own code, trapped where one thread runs at a time.
 * GCC's OpenMP runtime (libgomp) waits at every barrier, lock and end of a
 * parallel region with an inline `syscall` of futex, which no preload sees:
 * in strict mode the waiting thread slept in the kernel with the turn until
 * the watchdog took it back, a preemption replay cannot repeat. Trapped,
 * the futex call is det's (futex.c), and hands the turn on.
 *
 * Rules of this file:
 *  - The sites come from detrec (det.check.patch: capstone's scan of the
 *    executable and the libraries the loader lists for it, libc and the
 *    loader aside) in DET_SYSCALL_SITES_ENV, "NAME@VADDR,VADDR;..." with NAME a
 *    library's file name ("-": the executable) and VADDR hex link-time
 *    addresses. detrec sets it for recordings that run one thread at a time;
 *    it is in the recorded environment, so their replays trap the same.
 *    A module whose bytes at its sites are not all `syscall` (another build,
 *    an exec'd image that inherited the variable) is left whole.
 *  - The trap is trapped_atomics.c's (int3, ud2 under gdb: det_trap_bytes)
 *    over the instruction's first byte, before the program's code runs.
 *  - At the trap, a futex call is done by det_futex_call (in the handler,
 *    as trapped atomics' events are); any other number runs out of line:
 *    the same `syscall` in a slot of its own that jumps back after it, in
 *    the program's context (a raw sigprocmask or clone must not run inside
 *    det's handler). rcx and r11 are left as the instruction leaves them.
 */
#include "runtime.h"

#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>

#define SITES_ENV DET_SYSCALL_SITES_ENV
#define SLOT 16 /* syscall; jmp *0(%rip); the address after the site */
#define MAX_SITES 4096

static uintptr_t *sites; /* sorted */
static size_t nsites;
static uint8_t *slots; /* nsites slots of SLOT bytes */

static const uint8_t SYSCALL_INSN[] = {0x0f, 0x05};

static long site_index(uintptr_t at)
{
	size_t lo = 0, hi = nsites;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (sites[mid] < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nsites && sites[lo] == at ? (long)lo : -1;
}

int det_syscall_trap(void *ucv)
{
	if (!nsites)
		return 0;
	greg_t *g = ((ucontext_t *)ucv)->uc_mcontext.gregs;
	uintptr_t at = (uintptr_t)g[REG_RIP] - (det_trap_sig == SIGTRAP); /* (int3 reports the address after it) */
	long i = site_index(at);
	if (i < 0)
		return 0;
	if (g[REG_RAX] != SYS_futex) {
		g[REG_RIP] = (greg_t)(slots + (size_t)i * SLOT);
		return 1;
	}
	long a[6] = {g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10], g[REG_R8], g[REG_R9]};
	g[REG_RAX] = det_futex_call(a, at);
	g[REG_RCX] = (greg_t)(at + sizeof(SYSCALL_INSN));
	g[REG_R11] = g[REG_EFL];
	g[REG_RIP] = (greg_t)(at + sizeof(SYSCALL_INSN));
	return 1;
}

/* ------------------------------------------------------------------ */
/* patching, before the program runs */

struct module_find {
	const char *name; /* "-": the executable */
	size_t len;
	int first;
	uintptr_t bias, lo, hi; /* hi == 0: not loaded */
};

static int find_module(struct dl_phdr_info *info, size_t size, void *p)
{
	(void)size;
	struct module_find *m = p;
	int first = m->first;
	m->first = 0;
	const char *path = info->dlpi_name ? info->dlpi_name : "";
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	int match = m->len == 1 && m->name[0] == '-' ? first : strlen(base) == m->len && !memcmp(base, m->name, m->len);
	if (!match)
		return 0;
	m->bias = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (!m->hi || lo < m->lo)
			m->lo = lo;
		if (hi > m->hi)
			m->hi = hi;
	}
	return 1;
}

static int by_address(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

/* The sites of one module's entry ("NAME@VADDR,..." up to ';' or the end)
 * added to all[*k]; returns where the entry ends. */
static const char *add_module(const char *p, uintptr_t *all, size_t *k)
{
	const char *at = strchr(p, '@'), *end = strchr(p, ';');
	if (!end)
		end = p + strlen(p);
	if (!at || at > end)
		det_fatal("%s: not NAME@VADDR,... at \"%.20s\"", SITES_ENV, p);
	struct module_find m = {.name = p, .len = (size_t)(at - p), .first = 1};
	dl_iterate_phdr(find_module, &m);
	size_t start = *k;
	int whole = m.hi != 0;
	for (const char *q = at + 1; q < end && *k < MAX_SITES;) {
		char *stop;
		unsigned long long v = strtoull(q, &stop, 16);
		if (stop == q || (stop < end && *stop != ','))
			det_fatal("%s: not NAME@VADDR,... at \"%.20s\"", SITES_ENV, q);
		uintptr_t a = m.bias + (uintptr_t)v;
		if (whole && (a < m.lo || a + sizeof(SYSCALL_INSN) > m.hi ||
			      memcmp((const void *)a, SYSCALL_INSN, sizeof(SYSCALL_INSN)) != 0))
			whole = 0;
		all[(*k)++] = a;
		q = stop < end ? stop + 1 : end;
	}
	if (!whole)
		*k = start; /* not loaded, or another build */
	return *end ? end + 1 : end;
}

void det_syscalls_init(void)
{
	const char *env = getenv(SITES_ENV);
	if (!env || !*env)
		return;
	uintptr_t *all = mmap(NULL, MAX_SITES * sizeof(*all), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			      -1, 0);
	if (all == MAP_FAILED)
		det_fatal("cannot map the table of trapped system calls");
	size_t k = 0;
	for (const char *p = env; *p;)
		p = add_module(p, all, &k);
	if (!k)
		return;
	qsort(all, k, sizeof(*all), by_address);
	size_t trap_len;
	const uint8_t *trap = det_trap_bytes(&trap_len);
	uint8_t *code = mmap(NULL, k * SLOT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		det_fatal("cannot map room for %zu trapped system calls", k);
	for (size_t i = 0; i < k; i++) {
		uint8_t *c = code + i * SLOT;
		uint64_t back = all[i] + sizeof(SYSCALL_INSN);
		memcpy(c, SYSCALL_INSN, sizeof(SYSCALL_INSN));
		static const uint8_t jmp_abs[] = {0xff, 0x25, 0, 0, 0, 0}; /* jmp *0(%rip) */
		memcpy(c + 2, jmp_abs, sizeof(jmp_abs));
		memcpy(c + 8, &back, sizeof(back));
	}
	mprotect(code, k * SLOT, PROT_READ | PROT_EXEC);
	sites = all;
	nsites = k;
	slots = code;
	for (size_t i = 0; i < k; i++)
		det_trap_at(all[i], trap, trap_len, "system call");
}
