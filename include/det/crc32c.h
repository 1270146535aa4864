/*
 * include/det/crc32c.h - crc32c of 8-byte words in plain C: the capture
 * log's chunk checksums (recorder/logfmt.h) and libdet's checksums of data
 * it re-reads or sends (preload/inputs.c) use the same function.
 *
 * Rules of this file: header only, no state; the value is the one SSE4.2's
 * crc32 instruction computes, so a caller may use either.
 */
#ifndef DET_CRC32C_H
#define DET_CRC32C_H

#include <stdint.h>

/* crc32c of 8 bytes, as SSE4.2's crc32 instruction computes it (for CPUs,
 * and emulators like qemu's TCG, without it). */
static inline uint64_t det_crc32c_soft(uint64_t crc, uint64_t w)
{
	uint32_t c = (uint32_t)crc;
	for (int i = 0; i < 64; i++) {
		uint32_t bit = (c ^ (uint32_t)(w >> i)) & 1;
		c = (c >> 1) ^ (0x82F63B78u & -bit);
	}
	return c;
}

#endif /* DET_CRC32C_H */
