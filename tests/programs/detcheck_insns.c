/* tests/programs/detcheck_insns.c - instructions det does not see in a
 * program's own code, each on a line marked for tests/e2e/test_detcheck.py:
 * a raw `syscall` instruction with its number loaded just before (getpid,
 * 39), rdtsc, cpuid, and rdrand when the CPU has it (cpuid leaf 1, ECX bit
 * 30). Prints the pid the raw call returned, then "ok". */
#include <stdio.h>

static long raw_getpid(void)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(39L) : "rcx", "r11", "memory"); /* syscall here */
	return r;
}

static unsigned long long tsc(void)
{
	unsigned lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi)); /* rdtsc here */
	return ((unsigned long long)hi << 32) | lo;
}

static unsigned cpuid_ecx(unsigned leaf)
{
	unsigned a = leaf, b, c = 0, d;
	__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d)); /* cpuid here */
	return c;
}

static unsigned random32(void)
{
	unsigned r = 0;
	unsigned char ok;
	__asm__ volatile("rdrand %0; setc %1" : "=r"(r), "=qm"(ok)); /* rdrand here */
	return ok ? r : 0;
}

int main(void)
{
	printf("%ld\n", raw_getpid());
	unsigned long long t = tsc();
	if (cpuid_ecx(1) & (1u << 30))
		(void)random32();
	printf(t ? "ok\n" : "no tsc\n");
	return 0;
}
