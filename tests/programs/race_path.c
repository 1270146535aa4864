/*
 * tests/programs/race_path.c - a data race that decides which way main goes:
 * a worker sets a plain flag after some computing; main reads it after a
 * timed poll of nothing. Recorded, the wait lets the worker win; replayed,
 * the poll's result comes from the recording at once and nothing orders it
 * after the worker (a sleep would be kept in its recorded place), so main
 * reads first. The schedule of synchronization events is the same, so
 * default replay takes another path at the same event: the shape of
 * divergence det calls a likely data race (--strict replays it).
 *
 * The event that goes another way is, by the argument:
 *   lock - which of two mutexes main takes;            output "took a"/"took b"
 *   read - which of two pipes main reads (an input,
 *          whose "object" is its file descriptor);     output "read a"/"read b"
 * Usage: race_path lock|read
 */
#include <pthread.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
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

static int take_lock(void)
{
	pthread_mutex_t *m = flag ? &a : &b;
	pthread_mutex_lock(m);
	printf("took %s\n", m == &a ? "a" : "b");
	pthread_mutex_unlock(m);
	return 0;
}

static int read_pipe(int pa[2], int pb[2])
{
	char c;
	if (read(flag ? pa[0] : pb[0], &c, 1) != 1)
		return 1;
	printf("read %c\n", c);
	return 0;
}

int main(int argc, char **argv)
{
	int reading = argc == 2 && strcmp(argv[1], "read") == 0;
	if (argc != 2 || (!reading && strcmp(argv[1], "lock") != 0)) {
		fprintf(stderr, "usage: race_path lock|read\n");
		return 2;
	}
	int pa[2], pb[2];
	if (reading && (pipe(pa) || pipe(pb) || write(pa[1], "a", 1) != 1 || write(pb[1], "b", 1) != 1))
		return 1;
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	poll(NULL, 0, 500); /* a wait det does not order (a sleep it would) */
	int rc = reading ? read_pipe(pa, pb) : take_lock();
	pthread_join(t, NULL);
	return rc;
}
