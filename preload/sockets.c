/*
 * preload/sockets.c - receiving and sending: recv* recorded; send*
 * checked against the recording in replay, never sent; writes to streams
 * (pipes, terminals, devices) share the send path, their result an input.
 *
 * Rules of this file:
 *  - Those of preload/inputs.c, which holds what every input wrapper shares
 *    (preload/inputs.h): this file is one source of inputs, split out of it.
 */
#include "inputs.h"

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
/* sockets */

/* Recorded as: socklen_t address length, the address, int msg flags, the bytes. */
static ssize_t det_recv(struct det_thread *t, int fd, struct msghdr *msg, int flags, uint64_t ra)
{
	struct det_op op = {0};
	if (fd_class(fd) == FDC_INTERNAL) {
		/* a socketpair of the program's own: re-read like a pipe */
		struct read_call rc = {fd, msg->msg_iov, (int)msg->msg_iovlen, 0, perform_read, 0, flags};
		for (size_t i = 0; i < msg->msg_iovlen; i++)
			rc.want += msg->msg_iov[i].iov_len;
		msg->msg_namelen = 0;
		msg->msg_controllen = 0;
		msg->msg_flags = 0;
		return det_read(t, &rc, ra);
	}
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_RECV, (uint32_t)fd, ra)) {
		res = op.rec->result;
		const uint8_t *d = det_replay_data(op.rec);
		size_t len = op.rec->data_len;
		socklen_t alen = 0;
		int mflags = 0;
		if (len >= sizeof(alen) + sizeof(mflags)) {
			memcpy(&alen, d, sizeof(alen));
			if (sizeof(alen) + alen + sizeof(mflags) <= len) {
				if (msg->msg_name && msg->msg_namelen)
					memcpy(msg->msg_name, d + sizeof(alen), alen < msg->msg_namelen ? alen : msg->msg_namelen);
				msg->msg_namelen = alen;
				memcpy(&mflags, d + sizeof(alen) + alen, sizeof(mflags));
				msg->msg_flags = mflags;
				d += sizeof(alen) + alen + sizeof(mflags);
				if (res > 0)
					scatter(msg->msg_iov, (int)msg->msg_iovlen, d, (size_t)res);
			}
		}
		msg->msg_controllen = 0;
		det_input_end(&op, res, NULL, 0);
		return ret_of(res);
	}
	res = res_of(BLOCKING(&op, real.recvmsg(fd, msg, flags)));
	size_t bytes = res > 0 ? (size_t)res : 0;
	socklen_t alen = msg->msg_name ? msg->msg_namelen : 0;
	int mflags = res >= 0 ? msg->msg_flags : 0;
	det_ops.rec_data(t, &alen, sizeof(alen));
	if (alen)
		det_ops.rec_data(t, msg->msg_name, alen);
	det_ops.rec_data(t, &mflags, sizeof(mflags));
	record_iov(t, msg->msg_iov, (int)msg->msg_iovlen, bytes);
	det_ops.rec_input(&op, res, (uint32_t)(sizeof(alen) + alen + sizeof(mflags) + bytes));
	return ret_of(res);
}

#define DET_RECV_CALL(fd, msg, flags, pass)                                                        \
	do {                                                                                       \
		DET_ENTER(t);                                                                      \
		if (!t)                                                                            \
			return pass;                                                               \
		ssize_t r = det_recv(t, fd, &msg, flags, DET_RA());                                \
		int e = errno;                                                                     \
		det_leave(t);                                                                      \
		errno = e;                                                                         \
		return r;                                                                          \
	} while (0)

DET_IMPL ssize_t det_impl_recvmsg(int fd, struct msghdr *msg, int flags)
{
	DET_RECV_CALL(fd, (*msg), flags, real.recvmsg(fd, msg, flags));
}

DET_IMPL ssize_t det_impl_recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr, socklen_t *alen)
{
	struct iovec iov = {buf, n};
	struct msghdr msg = {addr, addr && alen ? *alen : 0, &iov, 1, NULL, 0, 0};
	DET_ENTER(t);
	if (!t)
		return real.recvfrom(fd, buf, n, flags, addr, alen);
	ssize_t r = det_recv(t, fd, &msg, flags, DET_RA());
	int e = errno;
	det_leave(t);
	if (r >= 0 && addr && alen)
		*alen = msg.msg_namelen;
	errno = e;
	return r;
}

DET_IMPL ssize_t det_impl_recv(int fd, void *buf, size_t n, int flags)
{
	struct iovec iov = {buf, n};
	struct msghdr msg = {NULL, 0, &iov, 1, NULL, 0, 0};
	DET_RECV_CALL(fd, msg, flags, real.recv(fd, buf, n, flags));
}

DET_IMPL ssize_t det_impl___recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
	if (n > buflen)
		abort();
	return recv(fd, buf, n, flags);
}

DET_IMPL ssize_t det_impl___recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *addr,
			      socklen_t *alen)
{
	if (n > buflen)
		abort();
	return recvfrom(fd, buf, n, flags, addr, alen);
}

/*
 * Sending on an external socket: recorded with a checksum; replay checks
 * the program sends the same bytes and does not send them (the peer may be
 * gone). Everything else (files, pipes, terminals) is written for real.
 */
static ssize_t det_send(struct det_thread *t, int fd, const struct iovec *iov, int iovcnt,
			ssize_t (*perform)(void *ctx), void *ctx, uint64_t ra)
{
	struct det_op op = {0};
	int64_t res;
	size_t want = 0;
	for (int i = 0; i < iovcnt; i++)
		want += iov[i].iov_len;
	if (det_input_begin(&op, t, DET_EV_SEND, (uint32_t)fd, ra)) {
		res = op.rec->result;
		if (res > 0) {
			uint64_t h = hash_iov(iov, iovcnt, (size_t)res);
			if ((size_t)res > want || op.rec->data_len != 8 || h != *(const uint64_t *)det_replay_data(op.rec))
				diverge_data(&op, "the program sends other bytes than it did when recorded");
		}
		det_input_end(&op, res, NULL, 0);
		return ret_of(res);
	}
	res = res_of(BLOCKING(&op, perform(ctx)));
	uint64_t h = res > 0 ? hash_iov(iov, iovcnt, (size_t)res) : 0;
	det_input_end(&op, res, &h, sizeof(h));
	return ret_of(res);
}

struct send_args {
	int fd;
	const void *buf;
	size_t n;
	int flags;
	const struct sockaddr *to;
	socklen_t tolen;
	const struct msghdr *msg;
	const struct iovec *iov;
	int iovcnt;
};

static ssize_t do_sendto(void *p)
{
	struct send_args *a = p;
	return real.sendto(a->fd, a->buf, a->n, a->flags, a->to, a->tolen);
}

static ssize_t do_sendmsg(void *p)
{
	struct send_args *a = p;
	return real.sendmsg(a->fd, a->msg, a->flags);
}

static ssize_t do_write(void *p)
{
	struct send_args *a = p;
	return real.write(a->fd, a->buf, a->n);
}

static ssize_t do_writev(void *p)
{
	struct send_args *a = p;
	return real.writev(a->fd, a->iov, a->iovcnt);
}

/*
 * A write to a pipe, terminal or device happens in replay too (the user sees
 * the output), but its result is an input: a non-blocking fd may take part
 * of it or none (EAGAIN), and the program acts on that. Replay writes
 * exactly the recorded count, waiting for room if it must, or returns the
 * recorded error without writing.
 */
static ssize_t det_write_stream(struct det_thread *t, int fd, const struct iovec *iov, int iovcnt,
				ssize_t (*perform)(void *ctx), void *ctx, uint64_t ra)
{
	struct det_op op = {0};
	if (!det_input_begin(&op, t, DET_EV_WRITE, (uint32_t)fd, ra)) {
		/* The write takes its place in the order before it runs, and
		 * in strict mode keeps the turn while it runs: threads that
		 * wrote while others held the turn would reach the kernel in
		 * an order nobody recorded. (A write that blocks for long,
		 * say on a pipe this program itself must drain, loses the
		 * turn to the watchdog.) */
		det_ops.rec_call_begin(&op);
		int64_t res = res_of(det_strict ? perform(ctx) : BLOCKING(&op, perform(ctx)));
		det_ops.rec_call_end(&op, res);
		return ret_of(res);
	}
	int64_t res = op.rec->result;
	if (res == DET_RESULT_PENDING) /* the writer died in it (a SIGPIPE, a kill) */
		det_ops.replay_vanish(&op);
	/* The write is a hand-off (det_kind_handoff): the readers after it in
	 * the order wait for it. Its turn is over once the thread is here (what
	 * it did before is done), so it says so before it writes: a write
	 * larger than the pipe or socket buffer returns only once a reader
	 * took part of it, and those readers wait for this turn. A reader of
	 * the program's own pipe reads for real, so it still waits for the
	 * bytes. (Strict mode and gdb keep the write inside its turn.) */
	int done_first = det_ops.replay_free_running();
	if (done_first)
		det_input_end(&op, res, NULL, 0);
	uint64_t pipe = res > 0 ? det_own_pipe(fd) : 0;
	size_t done = 0;
	for (int i = 0; i < iovcnt && done < (size_t)(res > 0 ? res : 0);) {
		size_t k = iov[i].iov_len < (size_t)res - done ? iov[i].iov_len : (size_t)res - done;
		size_t off = 0;
		while (off < k) {
			/* Into the program's own pipe, a write that may not fit
			 * (more than PIPE_BUF, or no free slot) says so while it
			 * runs: a reader due after it may drain the pipe meanwhile
			 * (read_ahead). Tokens written to a shared pipe (make's
			 * jobserver) fit, and are not read ahead. */
			struct pollfd p = {fd, POLLOUT, 0};
			int may_wait = pipe && (k - off > PIPE_BUF || det_sys(SYS_poll, (long)&p, 1, 0, 0, 0, 0) == 0);
			if (may_wait)
				atomic_store(&t->slot->pipe_writing, pipe);
			long n = det_sys(SYS_write, fd, (long)((const char *)iov[i].iov_base + off), (long)(k - off), 0, 0,
					 0);
			if (may_wait)
				atomic_store(&t->slot->pipe_writing, 0);
			if (n == -EAGAIN) {
				atomic_store(&t->slot->pipe_writing, pipe);
				det_sys(SYS_poll, (long)&p, 1, -1, 0, 0, 0);
				atomic_store(&t->slot->pipe_writing, 0);
			} else if (n == -EINTR) {
				continue;
			} else if (n <= 0) {
				done = (size_t)res; /* the reader is gone: the recording's count stands */
				break;
			} else {
				off += (size_t)n;
			}
		}
		done += off;
		i++;
	}
	if (!done_first)
		det_input_end(&op, res, NULL, 0);
	return ret_of(res);
}

#define DET_SEND_CALL(fd, iov, iovcnt, perform, args, pass, streams)                               \
	do {                                                                                       \
		DET_ENTER(t);                                                                      \
		if (!t)                                                                            \
			return pass;                                                               \
		enum fd_class c = fd_class(fd);                                                    \
		ssize_t r;                                                                         \
		if (c == FDC_SOCKET)                                                               \
			r = det_send(t, fd, iov, iovcnt, perform, &args, DET_RA());               \
		else if (streams && (c == FDC_EXTERNAL || c == FDC_INTERNAL))                      \
			r = det_write_stream(t, fd, iov, iovcnt, perform, &args, DET_RA());       \
		else {                                                                             \
			det_leave(t);                                                              \
			return pass;                                                               \
		}                                                                                  \
		int e = errno;                                                                     \
		det_leave(t);                                                                      \
		errno = e;                                                                         \
		return r;                                                                          \
	} while (0)

DET_IMPL ssize_t det_impl_sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *to, socklen_t tolen)
{
	struct iovec iov = {(void *)buf, n};
	struct send_args a = {fd, buf, n, flags, to, tolen, NULL, NULL, 0};
	DET_SEND_CALL(fd, &iov, 1, do_sendto, a, real.sendto(fd, buf, n, flags, to, tolen), 0);
}

DET_IMPL ssize_t det_impl_send(int fd, const void *buf, size_t n, int flags)
{
	return sendto(fd, buf, n, flags, NULL, 0);
}

DET_IMPL ssize_t det_impl_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct send_args a = {fd, NULL, 0, flags, NULL, 0, msg, NULL, 0};
	DET_SEND_CALL(fd, msg->msg_iov, (int)msg->msg_iovlen, do_sendmsg, a, real.sendmsg(fd, msg, flags), 0);
}

DET_IMPL ssize_t det_impl_write(int fd, const void *buf, size_t n)
{
	struct iovec iov = {(void *)buf, n};
	struct send_args a = {fd, buf, n, 0, NULL, 0, NULL, NULL, 0};
	DET_SEND_CALL(fd, &iov, 1, do_write, a, real.write(fd, buf, n), 1);
}

DET_IMPL ssize_t det_impl_writev(int fd, const struct iovec *iov, int iovcnt)
{
	struct send_args a = {fd, NULL, 0, 0, NULL, 0, NULL, iov, iovcnt};
	DET_SEND_CALL(fd, iov, iovcnt, do_writev, a, real.writev(fd, iov, iovcnt), 1);
}
