/*
 * tests/programs/rdrand_draw.c - a program that takes a random number from
 * the CPU itself (rdrand, as OpenSSL's and some hash tables' seeding do)
 * and prints it. No preload sees the instruction and this kernel has no
 * CPUID faulting to hide it, so det cannot record the value: detrec says
 * so before the program runs, and detreplay names it when the replay's
 * output differs.
 */
#include <stdio.h>

int main(void)
{
	unsigned a = 1, b, c = 0, d;
	__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
	if (!(c & (1u << 30))) {
		printf("this CPU has no rdrand\n");
		return 2;
	}
	unsigned long long r = 0;
	unsigned char ok = 0;
	for (int i = 0; i < 10 && !ok; i++)
		__asm__ volatile("rdrand %0; setc %1" : "=r"(r), "=qm"(ok));
	printf("drew %016llx\n", r);
	return ok ? 0 : 1;
}
