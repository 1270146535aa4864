/*
 * preload/inputs.c - what the program learns from the world: time,
 * randomness, data from files, pipes, sockets and devices, readiness,
 * process ids, sleeps. The wrappers live in one file per source
 * (preload/inputs.h names them); this one holds what they share: the
 * checksum of re-read or sent data, and results and data recorded,
 * scattered back and checked. These rules hold for all of them.
 *
 * Rules of this file:
 *  - Every wrapper records the call's result and the bytes it produced, and
 *    in replay returns them without touching the world - except for sources
 *    that replay re-reads and checks instead (regular files, pipes and socket
 *    pairs whose both ends belong to the program, stdin fed by det): those are read for real
 *    and compared, so that writes into them still drain.
 *  - Which kind of source an fd is gets decided once per fd (fd_class) and
 *    the event kind records it; replay with another kind is a divergence.
 *  - Writes to stdout, stderr, files and pipes happen in replay; writes to
 *    sockets are checked against the recording, never sent.
 *  - Results are stored as -errno on failure; wrappers restore errno.
 *  - Wrappers enter with DET_ENTER (runtime.h): most of these calls are
 *    cancellation points, and for the others its guard is one compare.
 */
#include "inputs.h"
#include "det/crc32c.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <sys/signalfd.h>
#include <sys/inotify.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* a 64-bit checksum of re-read or sent data (crc32c, two lanes), over the
 * first `len` bytes of an iovec array, without copying them */

struct hasher {
	uint64_t h1, h2, carry;
	unsigned ncarry;
};

__attribute__((target("sse4.2"))) static void hash_word_sse42(struct hasher *h, uint64_t w)
{
	h->h1 = __builtin_ia32_crc32di(h->h1, w);
	h->h2 = __builtin_ia32_crc32di(h->h2, w ^ 0x5bd1e9955bd1e995ull);
}

/* the same value without SSE4.2 (older CPUs, qemu's TCG) */
static void hash_word(struct hasher *h, uint64_t w)
{
	static int sse42 = -1;
	if (det_unlikely(sse42 < 0)) {
		__builtin_cpu_init();
		sse42 = __builtin_cpu_supports("sse4.2") != 0;
	}
	if (det_likely(sse42)) {
		hash_word_sse42(h, w);
	} else {
		h->h1 = det_crc32c_soft(h->h1, w);
		h->h2 = det_crc32c_soft(h->h2, w ^ 0x5bd1e9955bd1e995ull);
	}
}

static void hash_bytes(struct hasher *h, const uint8_t *b, size_t n)
{
	while (n && h->ncarry) {
		h->carry |= (uint64_t)*b++ << (8 * h->ncarry++);
		n--;
		if (h->ncarry == 8) {
			hash_word(h, h->carry);
			h->carry = 0;
			h->ncarry = 0;
		}
	}
	for (; n >= 8; n -= 8, b += 8) {
		uint64_t w;
		memcpy(&w, b, 8);
		hash_word(h, w);
	}
	for (; n; n--)
		h->carry |= (uint64_t)*b++ << (8 * h->ncarry++);
}

uint64_t hash_iov(const struct iovec *iov, int n, size_t len)
{
	struct hasher h = {0x9E3779B9u, 0x85EBCA6Bu, 0, 0};
	for (int i = 0; i < n && len; i++) {
		size_t k = iov[i].iov_len < len ? iov[i].iov_len : len;
		hash_bytes(&h, iov[i].iov_base, k);
		len -= k;
	}
	if (h.ncarry)
		hash_word(&h, h.carry ^ ((uint64_t)h.ncarry << 56));
	return (h.h1 << 32) | (uint32_t)h.h2;
}

/* ------------------------------------------------------------------ */
/* helpers */

void diverge_data(struct det_op *op, const char *what)
{
	det_ops.diverge(op->t, DET_DIV_RESULT, op->kind, NULL, op->ra, what);
}

/* A regular file read back in replay is not what was recorded: say which. */
void diverge_file(struct det_op *op, int fd, const char *what)
{
	static __thread char msg[200];
	char link[32], path[128];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	long n = det_sys(SYS_readlink, (long)link, (long)path, sizeof(path) - 1, 0, 0, 0);
	path[n > 0 ? n : 0] = 0;
	snprintf(msg, sizeof(msg), "a file read returned %s: %s changed since recording", what,
		 n > 0 ? path : "the file");
	det_ops.diverge(op->t, DET_DIV_RESULT, op->kind, NULL, op->ra, msg);
}

/* Copy recorded bytes into an iovec array. */
void scatter(const struct iovec *iov, int n, const uint8_t *data, size_t len)
{
	for (int i = 0; i < n && len; i++) {
		size_t k = iov[i].iov_len < len ? iov[i].iov_len : len;
		memcpy(iov[i].iov_base, data, k);
		data += k;
		len -= k;
	}
}

/* Record the first len bytes of an iovec array as the next event's data.
 * det never allocates in the program's heap: a malloc in one mode and not
 * the other would move the program's own memory between record and replay. */
void record_iov(struct det_thread *t, const struct iovec *iov, int n, size_t len)
{
	for (int i = 0; i < n && len; i++) {
		size_t k = iov[i].iov_len < len ? iov[i].iov_len : len;
		det_ops.rec_data(t, iov[i].iov_base, (uint32_t)k);
		len -= k;
	}
}

/* Are the first len bytes of an iovec array these? */
int same_iov(const struct iovec *iov, int n, const uint8_t *data, size_t len)
{
	for (int i = 0; i < n && len; i++) {
		size_t k = iov[i].iov_len < len ? iov[i].iov_len : len;
		if (memcmp(iov[i].iov_base, data, k))
			return 0;
		data += k;
		len -= k;
	}
	return len == 0;
}
