/*
 * tests/programs/mq_notify_thread.c - a POSIX message queue that calls a
 * function in a new thread when a message arrives (mq_notify with
 * SIGEV_THREAD), round after round: the function takes the message, passes
 * it on under a lock, and the main thread registers again before the next
 * send. The value handed to the function is the round's.
 *
 * glibc runs the function from a helper thread of its own, created inside
 * libc where det does not see it: the function's lock and condition
 * variable calls came from a thread det did not know, and the first replay
 * diverged (the main thread's wait ran before the message came).
 */
#include <fcntl.h>
#include <mqueue.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t arrived = PTHREAD_COND_INITIALIZER;
static char got[64];
static int got_round = -1;
static mqd_t q;

static void notified(union sigval v)
{
	char buf[64];
	unsigned prio;
	ssize_t n = mq_receive(q, buf, sizeof(buf), &prio);
	pthread_mutex_lock(&lock);
	snprintf(got, sizeof(got), "%.*s (priority %u)", n > 0 ? (int)n : 0, buf, prio);
	got_round = v.sival_int;
	pthread_cond_signal(&arrived);
	pthread_mutex_unlock(&lock);
}

int main(void)
{
	char name[64];
	snprintf(name, sizeof(name), "/det-mq-notify-%d", (int)getpid());
	struct mq_attr a = {.mq_maxmsg = 4, .mq_msgsize = 64};
	q = mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &a);
	if (q == (mqd_t)-1) {
		perror("mq_open");
		return 1;
	}
	mq_unlink(name);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (int round = 0; round < 5; round++) {
		struct sigevent ev;
		memset(&ev, 0, sizeof(ev));
		ev.sigev_notify = SIGEV_THREAD;
		ev.sigev_notify_function = notified;
		ev.sigev_value.sival_int = round;
		ev.sigev_notify_attributes = round % 2 ? &attr : NULL;
		if (mq_notify(q, &ev) != 0) {
			perror("mq_notify");
			return 1;
		}
		char msg[32];
		int n = snprintf(msg, sizeof(msg), "message %d", round);
		mq_send(q, msg, (size_t)n, (unsigned)round + 1);
		pthread_mutex_lock(&lock);
		while (got_round != round)
			pthread_cond_wait(&arrived, &lock);
		printf("round %d: %s\n", round, got);
		pthread_mutex_unlock(&lock);
	}
	return 0;
}
