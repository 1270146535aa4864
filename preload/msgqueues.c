/*
 * preload/msgqueues.c - message queues, POSIX (mq_send, mq_receive) and
 * System V (msgsnd, msgrcv): named kernel objects other processes share,
 * which the recording has already drained or filled by the time of replay.
 *
 * Rules of this file:
 *  - Those of preload/inputs.c, which holds what every input wrapper shares
 *    (preload/inputs.h): this file is one source of inputs, split out of it.
 *  - A receive is an input: its result, then the priority (POSIX) or the
 *    whole message with its type (System V); replay returns them and does
 *    not touch the queue. A send is an output, like a send on an external
 *    socket: recorded with a checksum, checked and not sent in replay.
 *    Both sides of a queue inside the program follow from that, and are
 *    hand-offs (include/det/events.h): replay keeps a receive after the
 *    send that let it through.
 */
#include "inputs.h"

#include <errno.h>
#include <mqueue.h>
#include <string.h>
#include <sys/msg.h>

enum { MQ_POSIX = 0, MQ_SYSV = 1 };

/* The receive both kinds share: `perform` fills buf (len bytes at most)
 * and returns the message's length; prefix (POSIX: the priority) is kept
 * before the bytes. */
static ssize_t msg_receive(struct det_thread *t, uint32_t aux, void *buf, size_t len, void *prefix,
			   uint32_t prefix_len, ssize_t (*perform)(void *), void *ctx, uint64_t ra)
{
	struct det_op op = {0};
	int64_t res;
	if (det_input_begin(&op, t, DET_EV_MSG_RECV, aux, ra)) {
		res = op.rec->result;
		const char *d = det_replay_data(op.rec);
		if (res >= 0) {
			if (op.rec->data_len != prefix_len + (uint64_t)res || (size_t)res > len)
				diverge_data(&op, "the program receives a message into a smaller buffer than it did");
			memcpy(prefix, d, prefix_len);
			memcpy(buf, d + prefix_len, (size_t)res);
		}
		det_input_end(&op, res, NULL, 0);
		return ret_of(res);
	}
	res = res_of(BLOCKING(&op, perform(ctx)));
	if (res >= 0)
		det_ops.rec_data(t, prefix, prefix_len); /* then the bytes, one data run */
	det_input_end(&op, res, buf, res >= 0 ? (uint32_t)res : 0);
	return ret_of(res);
}

static ssize_t msg_send(struct det_thread *t, uint32_t aux, const void *buf, size_t len,
			ssize_t (*perform)(void *), void *ctx, uint64_t ra)
{
	struct det_op op = {0};
	int64_t res;
	struct iovec iov = {(void *)buf, len};
	uint64_t h = hash_iov(&iov, 1, len);
	if (det_input_begin(&op, t, DET_EV_MSG_SEND, aux, ra)) {
		res = op.rec->result;
		if (res == DET_RESULT_PENDING) /* the sender died in it */
			det_ops.replay_vanish(&op);
		if (op.rec->data_len != 8 || h != *(const uint64_t *)det_replay_data(op.rec))
			diverge_data(&op, "the program sends another message than it did when recorded");
		det_input_end(&op, res, NULL, 0);
		/* strict: the turn it gave up while it waited in the send, which
		 * replay does not make (a sender that _exits next would never
		 * take it) */
		det_ops.replay_take_block(t);
		return ret_of(res);
	}
	/* A hand-off (include/det/events.h): it takes its place before it
	 * runs, so the receive it lets through comes after it. */
	det_ops.rec_data(t, &h, sizeof(h));
	det_ops.rec_call_begin(&op);
	res = res_of(BLOCKING(&op, perform(ctx)));
	det_ops.rec_call_end(&op, res);
	return ret_of(res);
}

struct mq_args {
	mqd_t q;
	char *buf;
	size_t len;
	unsigned prio;
	const struct timespec *abs;
	int id;
	long type;
	int flags;
};

static ssize_t do_mq_receive(void *p)
{
	struct mq_args *a = p;
	return real.mq_timedreceive(a->q, a->buf, a->len, &a->prio, a->abs);
}

static ssize_t do_mq_send(void *p)
{
	struct mq_args *a = p;
	return real.mq_timedsend(a->q, a->buf, a->len, a->prio, a->abs);
}

/* abs NULL: mq_receive (glibc's mq_timedreceive wants one). */
static ssize_t mq_receive_input(mqd_t q, char *buf, size_t len, unsigned *prio, const struct timespec *abs)
{
	DET_ENTER(t);
	if (!t)
		return real.mq_timedreceive(q, buf, len, prio, abs);
	struct mq_args a = {.q = q, .buf = buf, .len = len, .abs = abs};
	ssize_t r = msg_receive(t, MQ_POSIX, buf, len, &a.prio, sizeof(a.prio), do_mq_receive, &a, DET_RA());
	int e = errno;
	det_leave(t);
	if (r >= 0 && prio)
		*prio = a.prio;
	errno = e;
	return r;
}

DET_IMPL ssize_t det_impl_mq_timedreceive(mqd_t q, char *buf, size_t len, unsigned *prio, const struct timespec *abs)
{
	return mq_receive_input(q, buf, len, prio, abs);
}

DET_IMPL ssize_t det_impl_mq_receive(mqd_t q, char *buf, size_t len, unsigned *prio)
{
	return mq_receive_input(q, buf, len, prio, NULL);
}

static int mq_send_output(mqd_t q, const char *buf, size_t len, unsigned prio, const struct timespec *abs)
{
	DET_ENTER(t);
	if (!t)
		return real.mq_timedsend(q, buf, len, prio, abs);
	struct mq_args a = {.q = q, .buf = (char *)buf, .len = len, .prio = prio, .abs = abs};
	ssize_t r = msg_send(t, MQ_POSIX, buf, len, do_mq_send, &a, DET_RA());
	int e = errno;
	det_leave(t);
	errno = e;
	return (int)r;
}

DET_IMPL int det_impl_mq_timedsend(mqd_t q, const char *buf, size_t len, unsigned prio, const struct timespec *abs)
{
	return mq_send_output(q, buf, len, prio, abs);
}

DET_IMPL int det_impl_mq_send(mqd_t q, const char *buf, size_t len, unsigned prio)
{
	return mq_send_output(q, buf, len, prio, NULL);
}

/* System V: the message is a long type, then the text. */
static ssize_t do_msgrcv(void *p)
{
	struct mq_args *a = p;
	return real.msgrcv(a->id, a->buf, a->len, a->type, a->flags);
}

static ssize_t do_msgsnd(void *p)
{
	struct mq_args *a = p;
	return real.msgsnd(a->id, a->buf, a->len, a->flags);
}

DET_IMPL ssize_t det_impl_msgrcv(int id, void *msg, size_t len, long type, int flags)
{
	DET_ENTER(t);
	if (!t)
		return real.msgrcv(id, msg, len, type, flags);
	struct mq_args a = {.id = id, .buf = msg, .len = len, .type = type, .flags = flags};
	/* the type is the prefix; the text follows it in msg */
	ssize_t r = msg_receive(t, MQ_SYSV, (char *)msg + sizeof(long), len, msg, sizeof(long), do_msgrcv, &a,
				DET_RA());
	int e = errno;
	det_leave(t);
	errno = e;
	return r;
}

DET_IMPL int det_impl_msgsnd(int id, const void *msg, size_t len, int flags)
{
	DET_ENTER(t);
	if (!t)
		return real.msgsnd(id, msg, len, flags);
	struct mq_args a = {.id = id, .buf = (char *)msg, .len = len, .flags = flags};
	ssize_t r = msg_send(t, MQ_SYSV, msg, sizeof(long) + len, do_msgsnd, &a, DET_RA());
	int e = errno;
	det_leave(t);
	errno = e;
	return (int)r;
}
