/*
 * supervisor/identity.c - libdetsup.so: a trace file's identity, the key of
 * det.validate's cache of traces that passed the full pass (a file with
 * exactly those bytes needs only the cheap checks).
 *
 * Rules of this file:
 *  - Every byte of the file counts, and its length: 4 lanes of 64 bits
 *    over 32-byte stripes (XXH64's round: acc = rotl(acc + w * P2, 31) * P1),
 *    the last partial stripe zero-padded, each lane finished with XXH64's
 *    avalanche and the length: 256 bits. An accidental change (a bit
 *    flipped, a page torn, an edit) escapes it with odds of about 2^-64.
 *    It is not a cryptographic hash, and need not be: whoever can write a
 *    trace can also write a valid content checksum (meta content_sum is
 *    SHA-256 over public content), so the cache guards against damage and
 *    edits, never against a forger; det.trust decides whose traces run.
 *    It reads at memory speed, where SHA-256 took ~0.1 s per 60 MB trace
 *    at every replay.
 *  - Read with read() into one buffer (no mapping: a file cut while read
 *    is an error, not a SIGBUS). Nothing is written.
 */
#include "supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define P1 11400714785074694791ULL
#define P2 14029467366897019727ULL
#define P3 1609587929392839161ULL
#define P5 2870177450012600261ULL

static inline uint64_t rotl(uint64_t x, int r)
{
	return x << r | x >> (64 - r);
}

static inline uint64_t round64(uint64_t acc, uint64_t w)
{
	return rotl(acc + w * P2, 31) * P1;
}

static inline uint64_t avalanche(uint64_t h)
{
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	h ^= h >> 32;
	return h;
}

static void stripes(uint64_t acc[4], const uint8_t *p, size_t n)
{
	uint64_t a = acc[0], b = acc[1], c = acc[2], d = acc[3];
	for (; n >= 32; p += 32, n -= 32) {
		uint64_t w[4];
		memcpy(w, p, 32);
		a = round64(a, w[0]);
		b = round64(b, w[1]);
		c = round64(c, w[2]);
		d = round64(d, w[3]);
	}
	acc[0] = a;
	acc[1] = b;
	acc[2] = c;
	acc[3] = d;
}

/* The identity of the file at path as 64 hex digits (hex: 65 bytes). 0, or
 * -1 with a message in hex when it cannot be read. */
SUP_EXPORT int det_file_identity(const char *path, char *hex, uint32_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(hex, len, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	enum { BUF = 1 << 20 };
	uint8_t *buf = malloc(BUF + 32);
	if (!buf) {
		close(fd);
		snprintf(hex, len, "out of memory");
		return -1;
	}
	uint64_t acc[4] = {P1 + P2, P2, 0, 0 - P1}, total = 0;
	size_t have = 0; /* bytes in buf not hashed yet (less than a stripe after a pass) */
	int r = 0;
	for (;;) {
		ssize_t n = read(fd, buf + have, BUF);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(hex, len, "cannot read %s: %s", path, strerror(errno));
			r = -1;
			break;
		}
		if (n == 0)
			break;
		total += (uint64_t)n;
		have += (size_t)n;
		size_t whole = have & ~(size_t)31;
		stripes(acc, buf, whole);
		memmove(buf, buf + whole, have - whole);
		have -= whole;
	}
	close(fd);
	if (!r) {
		memset(buf + have, 0, 32 - have);
		stripes(acc, buf, have ? 32 : 0);
		char *o = hex;
		for (int i = 0; i < 4 && len >= 65; i++, o += 16)
			snprintf(o, 17, "%016llx",
				 (unsigned long long)avalanche(acc[i] ^ (total * P5) ^ ((uint64_t)i + 1) * P3));
		if (len < 65) {
			snprintf(hex, len, "no room");
			r = -1;
		}
	}
	free(buf);
	return r;
}
