/*
 * preload/readiness.c - readiness: poll, select, epoll: which fds are
 * ready is an input; so is how many bytes wait (ioctl FIONREAD, TIOCOUTQ),
 * and a terminal's size (TIOCGWINSZ).
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
/* ioctls that answer with the state of the moment (pids.c's ioctl asks) */

static size_t ioctl_answer_size(unsigned long req)
{
	switch (req) {
	case FIONREAD: /* (TIOCINQ, SIOCINQ) */
	case TIOCOUTQ: /* (SIOCOUTQ) */
		return sizeof(int);
	case TIOCGWINSZ:
		return sizeof(struct winsize);
	default:
		return 0;
	}
}

int det_ioctl_recorded(unsigned long req)
{
	return ioctl_answer_size(req) != 0;
}

/* A regular file's FIONREAD (its size past the offset) is the file's, which
 * replay checks when it reads it: the kernel's. */
int det_ioctl_input(int fd, unsigned long req, void *arg, uint64_t ra)
{
	DET_ENTER(t);
	if (!t || fd_class(fd) == FDC_FILE) {
		if (t)
			det_leave(t);
		return real.ioctl(fd, req, arg);
	}
	size_t size = ioctl_answer_size(req);
	struct det_op op = {0};
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_IOCTL, (uint32_t)(req & 0xffff), ra)) {
		res = op.rec->result;
		if (res == 0 && arg && op.rec->data_len == size)
			memcpy(arg, det_replay_data(op.rec), size);
		det_input_end(&op, res, NULL, 0);
	} else {
		res = res_of(real.ioctl(fd, req, arg));
		det_input_end(&op, res, arg, res == 0 && arg ? (uint32_t)size : 0);
	}
	int e = errno;
	det_leave(t);
	errno = e;
	return (int)ret_of(res);
}

/* ------------------------------------------------------------------ */
/* readiness */

static int det_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout, const sigset_t *mask,
		     uint64_t ra)
{
	DET_ENTER(t);
	if (!t)
		return real.ppoll(fds, n, timeout, mask);
	struct det_op op = {0};
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_POLL, (uint32_t)n, ra)) {
		res = op.rec->result;
		const short *rev = det_replay_data(op.rec);
		for (nfds_t i = 0; i < n && (i + 1) * sizeof(short) <= op.rec->data_len; i++)
			fds[i].revents = rev[i];
		det_input_end(&op, res, NULL, 0);
	} else {
		res = res_of(BLOCKING(&op, real.ppoll(fds, n, timeout, mask)));
		if (res >= 0)
			for (nfds_t i = 0; i < n; i++)
				det_ops.rec_data(t, &fds[i].revents, sizeof(short));
		det_ops.rec_input(&op, res, res >= 0 ? (uint32_t)(n * sizeof(short)) : 0);
	}
	int e = errno;
	det_leave(t);
	errno = e;
	return (int)ret_of(res);
}

DET_IMPL int det_impl_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *timeout, const sigset_t *mask)
{
	return det_ppoll(fds, n, timeout, mask, DET_RA());
}

DET_IMPL int det_impl_poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	struct timespec ts = {timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
	return det_ppoll(fds, n, timeout_ms < 0 ? NULL : &ts, NULL, DET_RA());
}

DET_IMPL int det_impl___poll_chk(struct pollfd *fds, nfds_t n, int timeout_ms, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n)
		abort();
	struct timespec ts = {timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
	return det_ppoll(fds, n, timeout_ms < 0 ? NULL : &ts, NULL, DET_RA());
}

/* select and pselect: which fds are ready, and for select the time it did
 * not sleep, which Linux writes back into tv (programs print it, or loop on
 * it): the data is the three sets, then that timeval when tv is given. */
static int select_input(int nfds, fd_set *r, fd_set *w, fd_set *x, struct timeval *tv, const struct timespec *ts,
			const sigset_t *mask, int is_select)
{
	DET_ENTER(t);
	if (!t)
		return is_select ? real.select(nfds, r, w, x, tv) : real.pselect(nfds, r, w, x, ts, mask);
	struct det_op op = {0};
	int64_t res;
	fd_set *sets[3] = {r, w, x};
	struct {
		fd_set sets[3];
		struct timeval left;
	} out;
	if (det_input_begin(&op, t, DET_EV_SELECT, (uint32_t)nfds, DET_RA())) {
		res = op.rec->result;
		const char *data = det_replay_data(op.rec);
		if (res >= 0 && op.rec->data_len >= sizeof(out.sets))
			for (int i = 0; i < 3; i++)
				if (sets[i])
					memcpy(sets[i], data + i * sizeof(fd_set), sizeof(fd_set));
		if (tv && op.rec->data_len == sizeof(out))
			memcpy(tv, data + offsetof(__typeof__(out), left), sizeof(*tv));
		else if (tv && res >= 0) /* a trace from before the time left was recorded */
			tv->tv_sec = tv->tv_usec = 0;
		det_input_end(&op, res, NULL, 0);
	} else {
		res = res_of(BLOCKING(&op, is_select ? real.select(nfds, r, w, x, tv)
						     : real.pselect(nfds, r, w, x, ts, mask)));
		for (int i = 0; i < 3; i++) {
			if (sets[i] && res >= 0)
				out.sets[i] = *sets[i];
			else
				FD_ZERO(&out.sets[i]);
		}
		if (tv)
			out.left = *tv;
		det_input_end(&op, res, &out, tv ? sizeof(out) : res >= 0 ? sizeof(out.sets) : 0);
	}
	int e = errno;
	det_leave(t);
	errno = e;
	return (int)ret_of(res);
}

DET_IMPL int det_impl_pselect(int nfds, fd_set *r, fd_set *w, fd_set *x, const struct timespec *timeout, const sigset_t *mask)
{
	return select_input(nfds, r, w, x, NULL, timeout, mask, 0);
}

DET_IMPL int det_impl_select(int nfds, fd_set *r, fd_set *w, fd_set *x, struct timeval *tv)
{
	return select_input(nfds, r, w, x, tv, NULL, NULL, 1);
}

/* epoll_pwait (ts NULL, timeout in ms) or epoll_pwait2 (ts, or NULL with
 * timeout -1: for ever): one event kind, the ready list as data. */
static int epoll_wait_event(int epfd, struct epoll_event *ev, int max, int timeout, const struct timespec *ts,
			    int pwait2, const sigset_t *mask, uint64_t ra)
{
	DET_ENTER(t);
	if (!t)
		return pwait2 ? real.epoll_pwait2(epfd, ev, max, ts, mask) : real.epoll_pwait(epfd, ev, max, timeout, mask);
	struct det_op op = {0};
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_EPOLL_WAIT, (uint32_t)epfd, ra)) {
		res = op.rec->result;
		if (res > 0)
			memcpy(ev, det_replay_data(op.rec),
			       op.rec->data_len < (uint32_t)max * sizeof(*ev) ? op.rec->data_len : max * sizeof(*ev));
		det_input_end(&op, res, NULL, 0);
	} else {
		res = res_of(BLOCKING(&op, pwait2 ? real.epoll_pwait2(epfd, ev, max, ts, mask)
						 : real.epoll_pwait(epfd, ev, max, timeout, mask)));
		det_input_end(&op, res, ev, res > 0 ? (uint32_t)(res * sizeof(*ev)) : 0);
	}
	int e = errno;
	det_leave(t);
	errno = e;
	return (int)ret_of(res);
}

DET_IMPL int det_impl_epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *mask)
{
	return epoll_wait_event(epfd, ev, max, timeout, NULL, 0, mask, DET_RA());
}

DET_IMPL int det_impl_epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *timeout,
				   const sigset_t *mask)
{
	return epoll_wait_event(epfd, ev, max, -1, timeout, 1, mask, DET_RA());
}

DET_IMPL int det_impl_epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	return epoll_pwait(epfd, ev, max, timeout, NULL);
}
