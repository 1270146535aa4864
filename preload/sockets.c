/*
 * preload/sockets.c - receiving and sending: recv* recorded with their
 * address, ancillary data and msg_flags (a socket pair the program made is
 * received again in replay and checked, its passed descriptors real);
 * send* checked against the recording in replay, never sent; writes to
 * streams (pipes, terminals, devices) share the send path, their result an
 * input; options and names of outside-world sockets recorded.
 *
 * Rules of this file:
 *  - Those of preload/inputs.c, which holds what every input wrapper shares
 *    (preload/inputs.h): this file is one source of inputs, split out of it.
 */
#include "inputs.h"
#include "shared_out.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
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

/*
 * A receive is recorded with what recvmsg hands back besides the bytes:
 * struct recv_meta, then the address (name_kept bytes), the ancillary data
 * (control_len bytes) and the bytes copied into the buffers (the result
 * may be more: MSG_TRUNC gives a datagram's full length).
 */
struct recv_meta {
	uint32_t name_len;    /* msg_namelen out: the address's real length */
	uint32_t name_kept;   /* of it, the bytes that fit the caller's buffer */
	uint32_t control_len; /* msg_controllen out */
	int32_t msg_flags;    /* msg_flags out (MSG_TRUNC, MSG_CTRUNC, ...) */
	uint32_t copied;      /* bytes copied into msg_iov */
};

static size_t iov_room(const struct msghdr *msg)
{
	size_t room = 0;
	for (size_t i = 0; i < msg->msg_iovlen; i++)
		room += msg->msg_iov[i].iov_len;
	return room;
}

/* A TCP receive with MSG_TRUNC discards the bytes instead of copying them
 * (the result counts them); other sockets copy (a datagram's full length
 * is then more than the buffer holds). */
static int discards(int fd, int flags)
{
	if (!(flags & MSG_TRUNC))
		return 0;
	int type = 0, proto = 0;
	socklen_t tl = sizeof(type), pl = sizeof(proto);
	return real.getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_STREAM &&
	       real.getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &pl) == 0 && proto == IPPROTO_TCP;
}

static void record_recv(struct det_op *op, struct msghdr *msg, socklen_t name_room, int64_t res, int discarded)
{
	struct recv_meta m = {0};
	if (res >= 0) {
		m.name_len = msg->msg_name ? msg->msg_namelen : 0;
		m.name_kept = m.name_len < name_room ? m.name_len : name_room;
		m.control_len = msg->msg_control ? (uint32_t)msg->msg_controllen : 0;
		m.msg_flags = msg->msg_flags;
		size_t room = iov_room(msg);
		m.copied = discarded ? 0 : (uint32_t)((size_t)res < room ? (size_t)res : room);
	}
	det_ops.rec_data(op->t, &m, sizeof(m));
	if (m.name_kept)
		det_ops.rec_data(op->t, msg->msg_name, m.name_kept);
	if (m.control_len)
		det_ops.rec_data(op->t, msg->msg_control, m.control_len);
	record_iov(op->t, msg->msg_iov, (int)msg->msg_iovlen, m.copied);
	det_ops.rec_input(op, res, (uint32_t)(sizeof(m) + m.name_kept + m.control_len + m.copied));
}

/* The recorded receive's parts; NULL if its data is not that shape. */
static const struct recv_meta *recorded_recv(const struct det_sched *e, const uint8_t **name, const uint8_t **control,
					     const uint8_t **bytes)
{
	static __thread struct recv_meta m;
	const uint8_t *d = det_replay_data(e);
	if (e->data_len < sizeof(m))
		return NULL;
	memcpy(&m, d, sizeof(m));
	if ((uint64_t)sizeof(m) + m.name_kept + m.control_len + m.copied != e->data_len)
		return NULL;
	*name = d + sizeof(m);
	*control = *name + m.name_kept;
	*bytes = *control + m.control_len;
	return &m;
}

/* Give the program the recorded address, ancillary data and msg_flags. */
static void give_recorded(struct msghdr *msg, const struct recv_meta *m, const uint8_t *name, const uint8_t *control)
{
	if (msg->msg_name && msg->msg_namelen)
		memcpy(msg->msg_name, name, m->name_kept < msg->msg_namelen ? m->name_kept : msg->msg_namelen);
	msg->msg_namelen = m->name_len;
	size_t croom = msg->msg_control ? msg->msg_controllen : 0;
	if (croom)
		memcpy(msg->msg_control, control, m->control_len < croom ? m->control_len : croom);
	msg->msg_controllen = m->control_len < croom ? m->control_len : croom;
	msg->msg_flags = m->msg_flags;
}

/* The descriptors an SCM_RIGHTS message in this control data carries. */
#define EACH_PASSED_FD(control, len, fdp)                                                          \
	for (struct msghdr m_ = {.msg_control = (void *)(control), .msg_controllen = (len)},       \
			  *once_ = &m_;                                                            \
	     once_; once_ = NULL)                                                                 \
		for (struct cmsghdr *c_ = CMSG_FIRSTHDR(&m_); c_; c_ = CMSG_NXTHDR(&m_, c_))        \
			if (c_->cmsg_level == SOL_SOCKET && c_->cmsg_type == SCM_RIGHTS)            \
				for (int *fdp = (int *)CMSG_DATA(c_);                                  \
				     (char *)(fdp + 1) <= (char *)c_ + c_->cmsg_len; fdp++)

/*
 * A socket pair the program made: the sender is the program too and sends
 * again in replay, so replay receives for real (descriptors passed are
 * real, usable ones), waits for what the recording got (also on a
 * non-blocking socket), checks it, and gives the received descriptors
 * their recorded numbers.
 */
/* recvmsg for a receive whose bytes the recording got: on a non-blocking
 * socket (O_NONBLOCK: nginx's channels) the sender may not have sent them
 * yet, so EAGAIN waits until something is there. */
static int64_t recv_waiting(int fd, struct msghdr *r, int flags)
{
	for (;;) {
		int64_t got = res_of(real.recvmsg(fd, r, flags));
		if (got == -EAGAIN) {
			struct pollfd p = {fd, POLLIN, 0};
			det_sys(SYS_poll, (long)&p, 1, -1, 0, 0, 0);
		} else if (got != -EINTR) {
			return got;
		}
	}
}

static int64_t rereceive(struct det_op *op, int fd, struct msghdr *msg, int flags)
{
	const uint8_t *name, *control, *bytes;
	const struct recv_meta *m = recorded_recv(op->rec, &name, &control, &bytes);
	int64_t res = op->rec->result;
	if (!m)
		diverge_data(op, "a recorded receive is damaged");
	if (res < 0) /* EAGAIN of MSG_DONTWAIT, a reset: nothing to take */
		return res;
	int type = 0;
	socklen_t tl = sizeof(type);
	real.getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl);
	/* the recorded bytes were there; in replay they may not be yet */
	int rflags = flags & ~MSG_DONTWAIT;
	struct iovec local[64];
	int n = msg->msg_iovlen < 64 ? (int)msg->msg_iovlen : 64;
	memcpy(local, msg->msg_iov, (size_t)n * sizeof(*local));
	struct msghdr r = *msg;
	r.msg_iov = local;
	r.msg_iovlen = (size_t)n;
	int64_t got;
	if (type != SOCK_STREAM) {
		/* one datagram or record, its full length with MSG_TRUNC */
		got = recv_waiting(fd, &r, rflags);
		if (got != res)
			diverge_data(op, "a socket pair's receive returned another count than recorded");
	} else {
		/* a stream: take exactly the recorded bytes (a peek looks again
		 * until they are all there) */
		size_t done = 0, want = m->copied;
		long nap = NAP_FIRST;
		while (done < want) {
			size_t skip = done, room = want - done;
			int first = 0;
			memcpy(local, msg->msg_iov, (size_t)n * sizeof(*local));
			while (first < n && skip >= local[first].iov_len)
				skip -= local[first++].iov_len;
			if (first < n) {
				local[first].iov_base = (char *)local[first].iov_base + skip;
				local[first].iov_len -= skip;
			}
			int last = first;
			for (size_t have = 0; last < n && have < room; last++) {
				have += local[last].iov_len;
				if (have > room)
					local[last].iov_len -= have - room;
			}
			r.msg_iov = &local[first];
			r.msg_iovlen = (size_t)(last - first);
			r.msg_control = done ? NULL : msg->msg_control;
			r.msg_controllen = done ? 0 : msg->msg_controllen;
			got = recv_waiting(fd, &r, rflags);
			if (got <= 0) /* the end, or an error: not what the recording got */
				diverge_data(op, "a socket pair's receive returned another count than recorded");
			if (!done)
				msg->msg_controllen = r.msg_controllen;
			if (flags & MSG_PEEK) {
				if ((size_t)got < want) {
					nap_longer(&nap);
					continue;
				}
				done = (size_t)got;
				break;
			}
			done += (size_t)got;
		}
		if (done == (size_t)res)
			got = res;
		else
			diverge_data(op, "a socket pair's receive returned another count than recorded");
		r.msg_controllen = msg->msg_controllen;
		r.msg_control = msg->msg_control;
	}
	if (!same_iov(msg->msg_iov, (int)msg->msg_iovlen, bytes, m->copied))
		diverge_data(op, "a socket pair's receive returned other bytes than recorded");
	/* descriptors passed: the recorded ones, in the recorded order */
	size_t clen = msg->msg_control ? r.msg_controllen : 0;
	if (clen != m->control_len)
		diverge_data(op, "a socket pair's receive returned other ancillary data than recorded");
	int want_fds[64], nwant = 0;
	EACH_PASSED_FD(control, m->control_len, fdp)
	if (nwant < 64)
		memcpy(&want_fds[nwant++], fdp, sizeof(int));
	int i = 0;
	EACH_PASSED_FD(msg->msg_control, clen, fdp)
	{
		int have;
		memcpy(&have, fdp, sizeof(int));
		if (i >= nwant || move_fd(have, want_fds[i]) != want_fds[i])
			diverge_data(op, "a descriptor passed over a socket pair cannot get its recorded number");
		fd_set_class(want_fds[i++], FDC_UNKNOWN);
	}
	if (i != nwant)
		diverge_data(op, "a socket pair's receive passed other descriptors than recorded");
	give_recorded(msg, m, name, control); /* credentials as recorded: the recorded pids */
	return res;
}

static ssize_t det_recv(struct det_thread *t, int fd, struct msghdr *msg, int flags, uint64_t ra)
{
	struct det_op op = {0};
	enum fd_class c = fd_class(fd);
	/* a socket pair of the program's own is received again in replay */
	uint16_t kind = c == FDC_INTERNAL ? DET_EV_SOCK_RECV : DET_EV_RECV;
	int64_t res;
	if (det_input_begin(&op, t, kind, (uint32_t)fd, ra)) {
		if (kind == DET_EV_SOCK_RECV) {
			res = rereceive(&op, fd, msg, flags);
		} else {
			const uint8_t *name, *control, *bytes;
			const struct recv_meta *m = recorded_recv(op.rec, &name, &control, &bytes);
			res = op.rec->result;
			if (!m)
				diverge_data(&op, "a recorded receive is damaged");
			if (res >= 0) {
				scatter(msg->msg_iov, (int)msg->msg_iovlen, bytes, m->copied);
				give_recorded(msg, m, name, control);
				/* descriptors from the outside world: stand-ins at the
				 * recorded numbers, read from the recording like it */
				EACH_PASSED_FD(msg->msg_control, msg->msg_controllen, fdp)
				{
					int want;
					memcpy(&want, fdp, sizeof(int));
					if (stand_in(want) != want)
						diverge_data(&op, "the recorded number of a descriptor received is taken");
					fcntl(want, F_SETFD, flags & MSG_CMSG_CLOEXEC ? FD_CLOEXEC : 0);
				}
			}
		}
		det_input_end(&op, res, NULL, 0);
		return ret_of(res);
	}
	socklen_t name_room = msg->msg_name ? msg->msg_namelen : 0;
	res = res_of(BLOCKING(&op, real.recvmsg(fd, msg, flags)));
	if (res >= 0 && kind == DET_EV_RECV && msg->msg_control) {
		/* read in replay from the recording, like the socket they came on */
		EACH_PASSED_FD(msg->msg_control, msg->msg_controllen, fdp)
		{
			int got;
			memcpy(&got, fdp, sizeof(int));
			fd_set_class(got, FDC_SOCKET);
		}
	} else if (res >= 0 && msg->msg_control) {
		EACH_PASSED_FD(msg->msg_control, msg->msg_controllen, fdp)
		{
			int got;
			memcpy(&got, fdp, sizeof(int));
			fd_set_class(got, FDC_UNKNOWN);
		}
	}
	record_recv(&op, msg, name_room, res, res > 0 && discards(fd, flags));
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

/* One event a message: the first as the flags say, the rest only if
 * already there with MSG_WAITFORONE. (The timeout is not kept: a receive
 * that waits, waits for its first message.) */
DET_IMPL int det_impl_recvmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags, struct timespec *timeout)
{
	DET_ENTER(t);
	if (!t)
		return real.recvmmsg(fd, vec, vlen, flags, timeout);
	int done = 0, e = 0;
	for (unsigned i = 0; i < vlen; i++) {
		int f = done && (flags & MSG_WAITFORONE) ? flags | MSG_DONTWAIT : flags;
		ssize_t r = det_recv(t, fd, &vec[i].msg_hdr, f & ~MSG_WAITFORONE, DET_RA());
		if (r < 0) {
			e = errno;
			break;
		}
		vec[i].msg_len = (unsigned)r;
		done++;
	}
	det_leave(t);
	if (!done) {
		errno = e;
		return -1;
	}
	return done;
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

/* Credentials a message carries name the sender's pid, the recorded one in
 * replay, which the kernel refuses (EPERM): sent with the live one (the
 * receiver gets the recorded credentials back from the trace: rereceive). */
static ssize_t do_sendmsg(void *p)
{
	struct send_args *a = p;
	const struct msghdr *m = a->msg;
	char control[512] __attribute__((aligned(sizeof(size_t))));
	if (!det_replaying() || !m->msg_control || !m->msg_controllen || m->msg_controllen > sizeof(control))
		return real.sendmsg(a->fd, m, a->flags);
	struct msghdr live = *m;
	memcpy(control, m->msg_control, m->msg_controllen);
	live.msg_control = control;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&live); c; c = CMSG_NXTHDR(&live, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
		    c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
			struct ucred u;
			memcpy(&u, CMSG_DATA(c), sizeof(u));
			u.pid = det_pid_to_real(u.pid);
			memcpy(CMSG_DATA(c), &u, sizeof(u));
		}
	return real.sendmsg(a->fd, &live, a->flags);
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

/* Replay of a send on a socket pair of the program's own whose whole
 * message went in the recording: the same call again (its ancillary data,
 * SCM_RIGHTS descriptors, and a datagram's boundary go with it), waiting
 * for room if the socket has none now. */
static void resend_message(int fd, ssize_t (*perform)(void *ctx), void *ctx)
{
	for (;;) {
		ssize_t n = perform(ctx);
		if (n >= 0 || (errno != EAGAIN && errno != EINTR))
			return; /* sent, or the reader is gone: the recording's count stands (det_sigpipe_hold) */
		if (errno == EAGAIN) {
			struct pollfd p = {fd, POLLOUT, 0};
			det_sys(SYS_poll, (long)&p, 1, -1, 0, 0, 0);
		}
	}
}

/*
 * A write to a pipe, terminal or device happens in replay too (the user sees
 * the output), but its result is an input: a non-blocking fd may take part
 * of it or none (EAGAIN), and the program acts on that. Replay writes
 * exactly the recorded count, waiting for room if it must, or returns the
 * recorded error without writing. A send, sendto or sendmsg on a socket
 * pair the program made (message) is one too: the hand-off its reader
 * waits for (nginx's master tells its workers to quit that way); replay
 * sends a message that went whole by the same call.
 */
/* Strict recording: will this write into the program's own pipe wait for a
 * reader (more than the room left)? Then it gives the turn up while it
 * waits, as a blocking read does: the reader may be a thread that has not
 * run yet (before, the watchdog took the turn, which replay cannot repeat). */
static int overfills(int fd, size_t want)
{
	if (!det_own_pipe(fd))
		return 0;
	long cap = det_sys(SYS_fcntl, fd, F_GETPIPE_SZ, 0, 0, 0, 0);
	int queued = 0;
	if (cap <= 0 || det_sys(SYS_ioctl, fd, FIONREAD, (long)&queued, 0, 0, 0) != 0)
		return want > PIPE_BUF;
	return want > (size_t)(cap - queued);
}

/* Replay of a write into the program's own pipe that never came back (its
 * writer died in it): its bytes may have reached the pipe first, and a
 * reader read them with a count the trace holds (a child killed by its
 * parent's death signal right after it wrote). What fits goes in now
 * without blocking (a write that blocked on a full pipe stays blocked as
 * it was); a reader that is gone takes nothing, and no SIGPIPE comes of it. */
static void write_what_fits(int fd, const struct iovec *iov, int iovcnt)
{
	struct det_sigpipe_hold quiet = det_sigpipe_hold();
	for (int i = 0; i < iovcnt; i++) {
		for (size_t off = 0; off < iov[i].iov_len;) {
			struct pollfd p = {fd, POLLOUT, 0};
			if (det_sys(SYS_poll, (long)&p, 1, 0, 0, 0, 0) != 1 || !(p.revents & POLLOUT))
				goto full; /* (ready: a write of PIPE_BUF bytes at most does not block) */
			size_t k = iov[i].iov_len - off < PIPE_BUF ? iov[i].iov_len - off : PIPE_BUF;
			long n = det_sys(SYS_write, fd, (long)((const char *)iov[i].iov_base + off), (long)k, 0, 0, 0);
			if (n <= 0)
				goto full;
			off += (size_t)n;
		}
	}
full:
	det_sigpipe_release(quiet, 1);
}

static ssize_t det_write_stream(struct det_thread *t, int fd, const struct iovec *iov, int iovcnt,
				ssize_t (*perform)(void *ctx), void *ctx, int message, uint64_t ra)
{
	struct det_op op = {0};
	size_t want = 0;
	for (int i = 0; i < iovcnt; i++)
		want += iov[i].iov_len;
	/* a stream other processes write too: place and write under its
	 * lock, here and in replay (preload/shared_out.c) */
	struct det_out_lock *shared = shared_out(fd);
	if (!det_input_begin(&op, t, DET_EV_WRITE, (uint32_t)fd, ra)) {
		/* The write takes its place in the order before it runs, and
		 * in strict mode keeps the turn while it runs: threads that
		 * wrote while others held the turn would reach the kernel in
		 * an order nobody recorded. (A write that blocks for long,
		 * say on a pipe this program itself must drain, loses the
		 * turn to the watchdog.) */
		if (shared)
			shared_out_lock(shared);
		det_ops.rec_call_begin(&op);
		int64_t res = res_of(det_strict && !overfills(fd, want) ? perform(ctx) : BLOCKING(&op, perform(ctx)));
		if (shared)
			shared_out_unlock(shared);
		det_ops.rec_call_end(&op, res);
		return ret_of(res);
	}
	int64_t res = op.rec->result;
	if (res == DET_RESULT_PENDING) { /* the writer died in it (a SIGPIPE, a kill) */
		if (det_own_pipe(fd))
			write_what_fits(fd, iov, iovcnt);
		det_ops.replay_vanish(&op);
	}
	/* The write is a hand-off (det_kind_handoff): the readers after it in
	 * the order wait for it. Its turn is over once the thread is here (what
	 * it did before is done), so it says so before it writes: a write
	 * larger than the pipe or socket buffer returns only once a reader
	 * took part of it, and those readers wait for this turn. A reader of
	 * the program's own pipe reads for real, so it still waits for the
	 * bytes. (Strict mode and gdb keep the write inside its turn.) */
	int done_first = det_ops.replay_free_running();
	/* Strict: a write that gave the turn up while it waited for a reader
	 * (overfills: a BLOCK right after it in the thread's order) is done,
	 * and that turn passed on, before it writes: its reader may be a
	 * thread whose first event comes after the BLOCK. */
	uint64_t pipe = res > 0 ? det_own_pipe(fd) : 0;
	const struct det_sched *after = done_first ? NULL : det_sched_peek(t, t->idx + 1);
	/* (the BLOCK names the call that gave the turn up: a sleep's or a
	 * wait's that comes next is not this write's, and taken here it let
	 * the events after it run before the thread got to that call) */
	int hands_on = after && after->kind == DET_EV_BLOCK && after->aux == DET_EV_WRITE && pipe;
	if (hands_on) {
		det_input_end(&op, res, NULL, 0);
		det_ops.replay_take_block(t);
	}
	if (shared && res > 0) /* the next writer in the order waits for the bytes */
		shared_out_lock(shared);
	else
		shared = NULL;
	if (done_first && !hands_on)
		det_input_end(&op, res, NULL, 0);
	struct det_sigpipe_hold quiet = {0, 0};
	int broke = 0; /* a write found the reader gone */
	if (res > 0)
		quiet = det_sigpipe_hold();
	if (message && res > 0 && (size_t)res == want) {
		resend_message(fd, perform, ctx);
		iovcnt = 0; /* sent: the recording's count stands */
		broke = 1;  /* (a stream socket's send may have been cut short) */
	}
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
				broke = n == -EPIPE;
				done = (size_t)res; /* the reader is gone: the recording's count stands */
				break;
			} else {
				off += (size_t)n;
			}
		}
		done += off;
		i++;
	}
	if (res > 0)
		det_sigpipe_release(quiet, broke);
	if (shared)
		shared_out_unlock(shared);
	if (!done_first && !hands_on)
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
		else if (c == FDC_INTERNAL || (streams && c == FDC_EXTERNAL))                      \
			r = det_write_stream(t, fd, iov, iovcnt, perform, &args, !streams, DET_RA()); \
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

/* At offset -1 without flags, writev (a socket's or pipe's stream, or the
 * file's position); else the kernel's, as pwritev (a file's bytes). */
DET_IMPL ssize_t det_impl_pwritev2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)
{
	if (off == -1 && !flags)
		return writev(fd, iov, iovcnt);
	return real.pwritev2(fd, iov, iovcnt, off, flags);
}

/* One sendmsg a message, to the first that fails. */
DET_IMPL int det_impl_sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, int flags)
{
	int done = 0;
	for (unsigned i = 0; i < vlen; i++) {
		ssize_t r = sendmsg(fd, &vec[i].msg_hdr, flags);
		if (r < 0)
			return done ? done : -1;
		vec[i].msg_len = (unsigned)r;
		done++;
	}
	return done;
}

/*
 * Options and names of a socket from the outside world: in replay it may be
 * a stand-in (an accepted connection) or never connected (connect is not
 * performed), so what they say is recorded (nginx sets TCP_NODELAY on its
 * connections; a non-blocking connect's outcome is getsockopt(SO_ERROR)).
 * setsockopt still runs in replay (a listening socket is real there, and
 * SO_REUSEADDR decides its bind) but returns the recorded result; so does
 * shutdown (a connection never made in replay has nothing to shut: ENOTCONN).
 */
enum sockopt_call { SOCKOPT_SET, SOCKOPT_GET, SOCKOPT_NAME, SOCKOPT_PEER, SOCKOPT_SHUTDOWN };

struct sockopt_args {
	enum sockopt_call call;
	int fd, level, name;
	void *val;
	socklen_t *len;
	const void *setval;
	socklen_t setlen;
};

static int64_t perform_sockopt(const struct sockopt_args *a)
{
	switch (a->call) {
	case SOCKOPT_SET:
		return res_of(real.setsockopt(a->fd, a->level, a->name, a->setval, a->setlen));
	case SOCKOPT_GET:
		return res_of(real.getsockopt(a->fd, a->level, a->name, a->val, a->len));
	case SOCKOPT_NAME:
		return res_of(real.getsockname(a->fd, a->val, a->len));
	case SOCKOPT_SHUTDOWN:
		return res_of(real.shutdown(a->fd, a->level));
	default:
		return res_of(real.getpeername(a->fd, a->val, a->len));
	}
}

/* Recorded as: the length the call reported, then the bytes it wrote. */
static int det_sockopt(struct sockopt_args *a, uint64_t ra)
{
	DET_ENTER(t);
	if (!t || fd_class(a->fd) != FDC_SOCKET) {
		if (t)
			det_leave(t);
		int r = (int)ret_of(perform_sockopt(a));
		if (r == 0 && a->call == SOCKOPT_GET)
			det_peercred_to_rec(a->level, a->name, a->val, a->len);
		return r;
	}
	struct det_op op = {0};
	int64_t res;
	socklen_t room = a->len ? *a->len : 0;
	if (det_input_begin(&op, t, DET_EV_SOCKOPT, (uint32_t)a->fd, ra)) {
		res = op.rec->result;
		if (a->call == SOCKOPT_SET || a->call == SOCKOPT_SHUTDOWN)
			perform_sockopt(a);
		const uint8_t *d = det_replay_data(op.rec);
		socklen_t got;
		if (res == 0 && a->call != SOCKOPT_SET && op.rec->data_len >= sizeof(got) && a->len) {
			memcpy(&got, d, sizeof(got));
			size_t kept = op.rec->data_len - sizeof(got);
			if (a->val)
				memcpy(a->val, d + sizeof(got), kept < room ? kept : room);
			*a->len = got;
		}
		det_input_end(&op, res, NULL, 0);
	} else {
		res = perform_sockopt(a);
		if (res == 0 && a->call != SOCKOPT_SET && a->len) {
			socklen_t got = *a->len;
			uint32_t kept = a->val ? (got < room ? got : room) : 0;
			det_ops.rec_data(t, &got, sizeof(got));
			if (kept)
				det_ops.rec_data(t, a->val, kept);
			det_ops.rec_input(&op, res, (uint32_t)sizeof(got) + kept);
		} else {
			det_input_end(&op, res, NULL, 0);
		}
	}
	int e = errno;
	det_leave(t);
	errno = e;
	return (int)ret_of(res);
}

DET_IMPL int det_impl_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	struct sockopt_args a = {SOCKOPT_SET, fd, level, name, NULL, NULL, val, len};
	return det_sockopt(&a, DET_RA());
}

DET_IMPL int det_impl_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	struct sockopt_args a = {SOCKOPT_GET, fd, level, name, val, len, NULL, 0};
	return det_sockopt(&a, DET_RA());
}

DET_IMPL int det_impl_getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct sockopt_args a = {SOCKOPT_NAME, fd, 0, 0, addr, len, NULL, 0};
	return det_sockopt(&a, DET_RA());
}

DET_IMPL int det_impl_getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct sockopt_args a = {SOCKOPT_PEER, fd, 0, 0, addr, len, NULL, 0};
	return det_sockopt(&a, DET_RA());
}

DET_IMPL int det_impl_shutdown(int fd, int how)
{
	struct sockopt_args a = {SOCKOPT_SHUTDOWN, fd, how, 0, NULL, NULL, NULL, 0};
	return det_sockopt(&a, DET_RA());
}
