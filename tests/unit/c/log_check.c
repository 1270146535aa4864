/*
 * tests/unit/c/log_check.c - the capture log's checksum is the same with
 * SSE4.2's crc32 instruction and without it (the path a CPU or emulator
 * without SSE4.2 takes): payloads of 0 bytes to 64 KB of random bytes.
 * Prints "same" and exits 0, or the first size where they differ.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "logfmt.h" /* recorder/ */
int main(void)
{
	static uint8_t buf[1 << 16];
	srand(7);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rand();
	for (size_t n = 0; n <= sizeof(buf); n = n * 2 + 8) {
		uint32_t a = det_log_check_sse42(buf, n, 3, (uint32_t)n), b = det_log_check_soft(buf, n, 3, (uint32_t)n);
		if (a != b) { printf("differ at %zu: %08x %08x\n", n, a, b); return 1; }
	}
	puts("same");
	return 0;
}
