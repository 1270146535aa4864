/*
 * preload/transfers.c - data the kernel moves between two descriptors
 * without the program seeing it: sendfile, splice, tee, copy_file_range.
 * Each is a TRANSFER event (its count steers the program, like a write's).
 *
 * Rules of this file:
 *  - Those of preload/inputs.c, which holds what every input wrapper shares
 *    (preload/inputs.h): this file is one source of inputs, split out of it.
 *  - By the classes of the two ends: into a socket from the outside world,
 *    replay sends nothing (as for send) and only moves the source on (a
 *    file's offset, a pipe's bytes), checking a file's bytes by hash; from
 *    a socket or device, recording reads and writes itself and keeps the
 *    bytes, which replay writes; between files and the program's own pipes,
 *    replay moves the recorded count again for real.
 */
#include "inputs.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <unistd.h>

enum transfer_call { TR_SENDFILE, TR_SPLICE, TR_TEE, TR_COPY };

struct transfer {
	enum transfer_call call;
	int in, out;
	loff_t *in_off, *out_off; /* NULL: the descriptor's own position */
	size_t count;
	unsigned flags;
};

/* Recorded as this, then (from a socket or device) the bytes moved. */
struct transfer_rec {
	int64_t start;   /* where in the source file the bytes began */
	uint64_t hash;   /* of the bytes, when `hashed` */
	uint32_t hashed; /* 1: a file sent into a socket, hashed */
	uint32_t copied; /* 1: read and written by det; the bytes follow */
};

static ssize_t perform(const struct transfer *x, size_t count)
{
	switch (x->call) {
	case TR_SENDFILE:
		return real.sendfile(x->out, x->in, (off_t *)x->in_off, count);
	case TR_SPLICE:
		return real.splice(x->in, x->in_off, x->out, x->out_off, count, x->flags);
	case TR_TEE:
		return real.tee(x->in, x->out, count, x->flags);
	default:
		return real.copy_file_range(x->in, x->in_off, x->out, x->out_off, count, x->flags);
	}
}

#define SCRATCH (1L << 20)

static char *scratch(void)
{
	long m = det_sys(SYS_mmap, 0, SCRATCH, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return m < 0 && m > -4096 ? NULL : (char *)m;
}

/* The hash of `len` bytes of file fd from `start`, read with pread. */
static uint64_t hash_file(int fd, int64_t start, size_t len, int *ok)
{
	char *buf = scratch();
	struct iovec iov = {buf, 0};
	uint64_t h = 0;
	*ok = buf != NULL;
	/* one hash over the range: read it whole when it fits, else the
	 * first SCRATCH bytes (a check, not a proof) */
	size_t want = len < (size_t)SCRATCH ? len : (size_t)SCRATCH;
	size_t got = 0;
	while (*ok && got < want) {
		long r = det_sys(SYS_pread64, fd, (long)(buf + got), (long)(want - got), start + (long)got, 0, 0);
		if (r <= 0)
			*ok = 0;
		else
			got += (size_t)r;
	}
	if (*ok) {
		iov.iov_len = got;
		h = hash_iov(&iov, 1, got);
	}
	if (buf)
		det_sys(SYS_munmap, (long)buf, SCRATCH, 0, 0, 0, 0);
	return h;
}

static int64_t position(int fd, const loff_t *off)
{
	return off ? *off : det_sys(SYS_lseek, fd, 0, SEEK_CUR, 0, 0, 0);
}

/* Move the source on by n bytes, as the transfer would have. */
static void advance(int fd, loff_t *off, int64_t n)
{
	if (off)
		*off += n;
	else
		det_sys(SYS_lseek, fd, n, SEEK_CUR, 0, 0, 0);
}

/* Write all of buf to out (at *out_off if given); bytes written, or -errno. */
static int64_t write_all(int out, loff_t *out_off, const char *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		long r = out_off ? det_sys(SYS_pwrite64, out, (long)(buf + done), (long)(len - done), *out_off, 0, 0)
				 : det_sys(SYS_write, out, (long)(buf + done), (long)(len - done), 0, 0, 0);
		if (r == -EINTR)
			continue;
		if (r <= 0)
			return done ? (int64_t)done : (r ? r : -EIO);
		if (out_off)
			*out_off += r;
		done += (size_t)r;
	}
	return (int64_t)done;
}

static ssize_t det_transfer(struct transfer *x, uint64_t ra)
{
	DET_ENTER(t);
	if (!t)
		return perform(x, x->count);
	enum fd_class in = fd_class(x->in), out = fd_class(x->out);
	int into_socket = out == FDC_SOCKET;
	int from_world = !into_socket && (in == FDC_SOCKET || in == FDC_EXTERNAL);
	struct transfer_rec tr = {0};
	struct det_op op = {0};
	int64_t res;
	if (!det_input_begin(&op, t, DET_EV_TRANSFER, (uint32_t)x->out, ra)) {
		char *buf = NULL;
		if (into_socket && in == FDC_FILE)
			tr.start = position(x->in, x->in_off);
		if (from_world && (buf = scratch())) {
			/* det reads and writes itself, to keep the bytes */
			size_t n = x->count < (size_t)SCRATCH ? x->count : (size_t)SCRATCH;
			res = x->in_off ? res_of(BLOCKING(&op, pread(x->in, buf, n, *x->in_off)))
					: res_of(BLOCKING(&op, read(x->in, buf, n)));
			if (res > 0) {
				if (x->in_off)
					*x->in_off += res;
				res = write_all(x->out, x->out_off, buf, (size_t)res);
			}
			tr.copied = 1;
		} else {
			res = res_of(BLOCKING(&op, perform(x, x->count)));
		}
		if (res > 0 && into_socket && in == FDC_FILE) {
			int ok;
			tr.hash = hash_file(x->in, tr.start, (size_t)res, &ok);
			tr.hashed = (uint32_t)ok;
		}
		det_ops.rec_data(t, &tr, sizeof(tr));
		if (tr.copied && res > 0)
			det_ops.rec_data(t, buf, (uint32_t)res);
		det_ops.rec_input(&op, res, (uint32_t)(sizeof(tr) + (tr.copied && res > 0 ? res : 0)));
		if (buf)
			det_sys(SYS_munmap, (long)buf, SCRATCH, 0, 0, 0, 0);
	} else {
		res = op.rec->result;
		if (op.rec->data_len >= sizeof(tr))
			memcpy(&tr, det_replay_data(op.rec), sizeof(tr));
		else
			diverge_data(&op, "a recorded transfer is damaged");
		if (res > 0 && tr.copied) {
			if (op.rec->data_len != sizeof(tr) + (uint64_t)res)
				diverge_data(&op, "a recorded transfer is damaged");
			advance(x->in, x->in_off, res);
			if (write_all(x->out, x->out_off, (const char *)det_replay_data(op.rec) + sizeof(tr),
				      (size_t)res) != res)
				diverge_data(&op, "a transfer's bytes could not be written as recorded");
		} else if (res > 0 && into_socket) {
			/* nothing is sent; the source moves on as it did */
			if (in == FDC_FILE) {
				int64_t start = position(x->in, x->in_off);
				int ok;
				if (tr.hashed && (start != tr.start || hash_file(x->in, start, (size_t)res, &ok) != tr.hash))
					diverge_file(&op, x->in, "other bytes");
				advance(x->in, x->in_off, res);
			} else if (in == FDC_INTERNAL) { /* the program's own pipe: drain it */
				char sink[4096];
				for (int64_t left = res; left > 0;) {
					long r = det_sys(SYS_read, x->in, (long)sink,
							 left < (int64_t)sizeof(sink) ? left : (long)sizeof(sink), 0, 0, 0);
					if (r == -EINTR)
						continue;
					if (r <= 0)
						diverge_data(&op, "a pipe sent into a socket held fewer bytes than recorded");
					left -= r;
				}
			}
		} else if (res > 0) {
			/* both ends real: move the recorded count again */
			int64_t done = 0;
			while (done < res) {
				int64_t r = res_of(perform(x, (size_t)(res - done)));
				if (r == -EINTR)
					continue;
				if (r <= 0)
					diverge_data(&op, "a transfer moved another count than recorded");
				done += r;
			}
		}
		det_input_end(&op, res, NULL, 0);
	}
	int e = errno;
	det_leave(t);
	errno = e;
	return ret_of(res);
}

DET_IMPL ssize_t det_impl_sendfile(int out, int in, off_t *off, size_t count)
{
	struct transfer x = {TR_SENDFILE, in, out, (loff_t *)off, NULL, count, 0};
	return det_transfer(&x, DET_RA());
}

DET_IMPL ssize_t det_impl_splice(int in, loff_t *in_off, int out, loff_t *out_off, size_t len, unsigned int flags)
{
	struct transfer x = {TR_SPLICE, in, out, in_off, out_off, len, flags};
	return det_transfer(&x, DET_RA());
}

DET_IMPL ssize_t det_impl_tee(int in, int out, size_t len, unsigned int flags)
{
	struct transfer x = {TR_TEE, in, out, NULL, NULL, len, flags};
	return det_transfer(&x, DET_RA());
}

DET_IMPL ssize_t det_impl_copy_file_range(int in, loff_t *in_off, int out, loff_t *out_off, size_t len,
					  unsigned int flags)
{
	struct transfer x = {TR_COPY, in, out, in_off, out_off, len, flags};
	return det_transfer(&x, DET_RA());
}
