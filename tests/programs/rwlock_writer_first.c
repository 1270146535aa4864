/*
 * rwlock_writer_first.c - a writer-preferring rwlock
 * (PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP): while a writer waits for
 * the readers to leave, a new reader must not get in. Main holds a read
 * lock, a writer blocks in wrlock, and main's tryrdlock and timedrdlock must
 * fail (EBUSY, ETIMEDOUT) until it lets go; then the writer runs.
 * Exit 0 when glibc's rule held, 1 when a reader got in.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static pthread_rwlock_t rw;
static volatile int writer_started, writer_done;

static void *writer(void *arg)
{
	(void)arg;
	writer_started = 1;
	pthread_rwlock_wrlock(&rw);
	writer_done = 1;
	pthread_rwlock_unlock(&rw);
	return NULL;
}

int main(void)
{
	pthread_rwlockattr_t attr;
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&rw, &attr);
	pthread_rwlock_rdlock(&rw);
	pthread_t t;
	pthread_create(&t, NULL, writer, NULL);
	while (!writer_started)
		usleep(1000);
	usleep(50000); /* the writer is in wrlock by now */
	int bad = 0;
	int r = pthread_rwlock_tryrdlock(&rw);
	printf("tryrdlock with a writer waiting: %s\n", r == EBUSY ? "EBUSY" : "got in");
	bad |= r != EBUSY;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 10000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	r = pthread_rwlock_timedrdlock(&rw, &until);
	printf("timedrdlock with a writer waiting: %s\n", r == ETIMEDOUT ? "ETIMEDOUT" : "got in");
	bad |= r != ETIMEDOUT;
	bad |= writer_done;
	pthread_rwlock_unlock(&rw);
	pthread_join(t, NULL);
	printf("writer done: %d\n", writer_done);
	return bad || !writer_done;
}
