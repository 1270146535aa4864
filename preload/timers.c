/*
 * preload/timers.c - POSIX timers and message queues that notify in a new
 * thread (SIGEV_THREAD), run by det instead of glibc.
 *
 * glibc runs such a timer with a helper thread of its own that waits for the
 * timer's signal and starts a thread for every expiry, both created inside
 * libc where det's pthread_create never sees them: the callbacks would run
 * unrecorded, beside threads that are. det does the same with the program's
 * own calls: one helper thread (created with pthread_create, so recorded)
 * takes each expiry with sigwaitinfo (a recorded input) and starts a
 * detached thread for the callback with pthread_create.
 *
 * Rules of this file:
 *  - timer_create is a front-end on the program's stack: it calls exported
 *    functions (pthread_once, pthread_create, mutexes) as the program would,
 *    so each is an event; only the kernel's timer_create is called directly.
 *  - A timer names its callback by its index in a table, not by a pointer:
 *    the index is the siginfo value sigwaitinfo records, and it is the same
 *    in replay, where the helper gets the recorded value.
 *  - Only while det runs a program; otherwise glibc's way. Of a timer
 *    notification's attributes only the stack size is kept.
 *  - mq_notify: glibc's helper is a thread of its own too, reading the
 *    kernel's note from a netlink socket. det's reader is a thread the call
 *    starts with pthread_create; its read of the note is a recorded input
 *    (in replay the note comes from the trace: the stand-in queue gets no
 *    message), and it calls the function itself.
 */
#include "runtime.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* The signal the kernel sends the helper: blocked there, so only its
 * sigwaitinfo takes it. */
#define TIMER_SIG (SIGRTMAX - 1)
#define MAX_TIMERS 1024

struct notify {
	void (*fn)(union sigval);
	union sigval value;
	size_t stack;    /* the attributes' stack size, or 0 */
};

static struct notify notify_table[MAX_TIMERS];
static int notify_count;
static pthread_mutex_t notify_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t helper_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t helper_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t helper_ready = PTHREAD_COND_INITIALIZER;
static pid_t helper_tid; /* the kernel's, for SIGEV_THREAD_ID (real in every mode) */

static void *notify_main(void *arg)
{
	struct notify *n = arg;
	n->fn(n->value);
	return NULL;
}

static void *helper_main(void *arg)
{
	(void)arg;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, TIMER_SIG);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pthread_mutex_lock(&helper_lock);
	helper_tid = (pid_t)det_sys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	pthread_cond_broadcast(&helper_ready);
	pthread_mutex_unlock(&helper_lock);
	for (;;) {
		siginfo_t info;
		if (sigwaitinfo(&set, &info) != TIMER_SIG)
			continue;
		int i = info.si_value.sival_int;
		if (i < 0 || i >= MAX_TIMERS)
			continue;
		pthread_mutex_lock(&notify_lock);
		struct notify *n = i < notify_count ? &notify_table[i] : NULL;
		pthread_mutex_unlock(&notify_lock);
		if (!n)
			continue;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (n->stack)
			pthread_attr_setstacksize(&attr, n->stack);
		pthread_t th;
		pthread_create(&th, &attr, notify_main, n);
		pthread_attr_destroy(&attr);
	}
	return NULL;
}

static void start_helper(void)
{
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_t th;
	pthread_mutex_lock(&helper_lock);
	if (pthread_create(&th, &attr, helper_main, NULL) == 0)
		while (!helper_tid)
			pthread_cond_wait(&helper_ready, &helper_lock);
	pthread_mutex_unlock(&helper_lock);
	pthread_attr_destroy(&attr);
}

EXPORT int timer_create(clockid_t clock, struct sigevent *ev, timer_t *id)
{
	det_init();
	if (!det_mode || !ev || ev->sigev_notify != SIGEV_THREAD || !det_tls.active) {
		struct sigevent live; /* a thread it names is this run's (pids.c) */
		return real.timer_create(clock, (struct sigevent *)det_live_sigevent(ev, &live), id);
	}
	pthread_once(&helper_once, start_helper);
	size_t stack = 0;
	if (ev->sigev_notify_attributes)
		pthread_attr_getstacksize(ev->sigev_notify_attributes, &stack);
	/* filled under the lock the helper reads it under: ordered in every replay */
	pthread_mutex_lock(&notify_lock);
	int i = notify_count < MAX_TIMERS && helper_tid ? notify_count++ : -1;
	if (i >= 0)
		notify_table[i] = (struct notify){ev->sigev_notify_function, ev->sigev_value, stack};
	pthread_mutex_unlock(&notify_lock);
	if (i < 0) {
		errno = EAGAIN;
		return -1;
	}
	struct sigevent mine;
	memset(&mine, 0, sizeof(mine));
	mine.sigev_notify = SIGEV_THREAD_ID;
	mine.sigev_signo = TIMER_SIG;
	mine.sigev_value.sival_int = i;
	mine._sigev_un._tid = helper_tid;
	return real.timer_create(clock, &mine, id);
}

/* The kernel's note on a queue's netlink socket: NOTIFY_COOKIE_LEN bytes,
 * the last one saying why (linux/mqueue.h). */
#define MQ_NOTE_LEN 32
#define MQ_NOTE_WOKENUP 1

struct mq_reader {
	int sock;
	void (*fn)(union sigval);
	union sigval value;
};

static void *mq_reader_main(void *arg)
{
	struct mq_reader r = *(struct mq_reader *)arg;
	free(arg);
	unsigned char note[MQ_NOTE_LEN];
	ssize_t n = recv(r.sock, note, sizeof(note), MSG_NOSIGNAL | MSG_WAITALL);
	close(r.sock);
	if (n == (ssize_t)sizeof(note) && note[MQ_NOTE_LEN - 1] == MQ_NOTE_WOKENUP)
		r.fn(r.value);
	return NULL;
}

/* The kernel's registration, an input (MQ_NOTIFY); returns 0 or -errno.
 * An entry on the det stack: mq_notify runs on the program's. */
DET_HIDDEN long det_mq_register(mqd_t q, const struct sigevent *ev);

DET_IMPL long det_impl_det_mq_register(mqd_t q, const struct sigevent *ev)
{
	DET_ENTER(t);
	if (!t)
		return det_sys(SYS_mq_notify, q, (long)ev, 0, 0, 0, 0);
	struct det_op op = {0};
	long r = det_input_begin(&op, t, DET_EV_MQ_NOTIFY, 0, DET_RA()) ? op.rec->result
									: det_sys(SYS_mq_notify, q, (long)ev, 0, 0, 0, 0);
	det_input_end(&op, r, NULL, 0);
	det_leave(t);
	return r;
}

EXPORT int mq_notify(mqd_t q, const struct sigevent *ev)
{
	det_init();
	if (!det_mode || !det_tls.active)
		return real.mq_notify(q, ev);
	if (!ev || ev->sigev_notify != SIGEV_THREAD) {
		struct sigevent live; /* (SIGEV_SIGNAL: the signal comes from the trace in replay) */
		long r = det_mq_register(q, det_live_sigevent(ev, &live));
		if (r < 0) {
			errno = (int)-r;
			return -1;
		}
		return 0;
	}
	static const unsigned char zeros[MQ_NOTE_LEN];
	struct mq_reader *r = malloc(sizeof(*r));
	if (!r) {
		errno = ENOMEM;
		return -1;
	}
	*r = (struct mq_reader){socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0), ev->sigev_notify_function,
				ev->sigev_value};
	struct sigevent mine;
	memset(&mine, 0, sizeof(mine));
	mine.sigev_notify = SIGEV_THREAD;
	mine.sigev_signo = r->sock;
	mine.sigev_value.sival_ptr = (void *)zeros;
	/* (the kernel's call: glibc's would start a reader of its own) */
	long k = r->sock < 0 ? -errno : det_mq_register(q, &mine);
	if (k < 0) {
		if (r->sock >= 0)
			close(r->sock);
		free(r);
		errno = (int)-k;
		return -1;
	}
	pthread_attr_t attr;
	if (ev->sigev_notify_attributes)
		attr = *ev->sigev_notify_attributes;
	else
		pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_t th;
	int err = pthread_create(&th, &attr, mq_reader_main, r);
	if (!ev->sigev_notify_attributes)
		pthread_attr_destroy(&attr);
	if (err) {
		det_mq_register(q, NULL);
		close(r->sock);
		free(r);
		errno = EAGAIN;
		return -1;
	}
	return 0;
}
