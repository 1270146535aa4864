/*
 * tests/programs/race_path.c - a data race that decides which lock main
 * takes: a worker sets a plain flag after some computing; main reads it
 * after a timed poll of nothing. Recorded, the wait lets the worker win;
 * replayed, the poll's result comes from the recording at once and nothing
 * orders it after the worker (a sleep would be kept in its recorded place),
 * so main reads first. The schedule of synchronization events
 * is the same, so default replay takes another path at the same event: the
 * shape of divergence det calls a likely data race (--strict replays it).
 *
 * Output: "took a" or "took b". Usage: race_path
 */
#include <pthread.h>
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b = PTHREAD_MUTEX_INITIALIZER;
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
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	poll(NULL, 0, 500); /* a wait det does not order (a sleep it would) */
	pthread_mutex_t *m = flag ? &a : &b;
	pthread_mutex_lock(m);
	printf("took %s\n", m == &a ? "a" : "b");
	pthread_mutex_unlock(m);
	pthread_join(t, NULL);
	return 0;
}
