/*
 * tests/programs/race_fd.c - a data race that decides which pipe main reads:
 * as race_path.c, but the event that goes another way is an input (a read),
 * whose "object" is its file descriptor. Recorded, the wait lets the worker
 * win (main reads pipe a); replayed, main reads first and reads pipe b, and
 * det's divergence names both descriptors.
 *
 * Output: "read a" or "read b". Usage: race_fd
 */
#include <pthread.h>
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

static volatile int flag;
static volatile unsigned long sink;

static void *worker(void *arg)
{
	(void)arg;
	for (unsigned long i = 0; i < 20000000ul; i++) /* some computing, no events */
		sink += i;
	flag = 1; /* the race: no lock, no atomic */
	return NULL;
}

int main(void)
{
	int a[2], b[2];
	char c;
	if (pipe(a) || pipe(b) || write(a[1], "a", 1) != 1 || write(b[1], "b", 1) != 1)
		return 1;
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	poll(NULL, 0, 500); /* a wait det does not order (a sleep it would) */
	if (read(flag ? a[0] : b[0], &c, 1) != 1)
		return 1;
	printf("read %c\n", c);
	pthread_join(t, NULL);
	return 0;
}
