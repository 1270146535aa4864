/*
 * tests/programs/raw_getrandom.c - random bytes from a raw system call
 * (a `syscall` instruction), past libc's getrandom and syscall(), which
 * libdet.so interposes: det's default recording does not see them, detrec --ptrace
 * does (tests/e2e/test_ptrace.py).
 *
 * The call is a `syscall` instruction of the program's own (inline
 * assembly, as Go, Rust's std or a hand-written loop make them): libc's
 * syscall() is interposed by libdet.so, this is not.
 *
 * Rules: it prints the bytes and nothing else that varies.
 */
#include <stdio.h>
#include <sys/syscall.h>

static long raw_getrandom(void *buf, unsigned long len)
{
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "a"((long)SYS_getrandom), "D"(buf), "S"(len), "d"(0L)
			 : "rcx", "r11", "memory");
	return ret;
}

int main(void)
{
	unsigned char bytes[16];
	if (raw_getrandom(bytes, sizeof bytes) != (long)sizeof bytes)
		return 2;
	printf("raw getrandom");
	for (size_t i = 0; i < sizeof bytes; i++)
		printf(" %02x", bytes[i]);
	printf("\n");
	return 0;
}
