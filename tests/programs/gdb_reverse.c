/*
 * tests/programs/gdb_reverse.c - two workers call a helper under a mutex
 * and main prints a numbered line between the phases, for gdb's reverse-*
 * commands in a det session (tests/gdb/test_gdb_reverse.py): reverse-step
 * enters add_twice's last line, reverse-finish goes back to its call,
 * reverse-next steps over it; each output line is printed once however
 * often the replay goes back.
 *
 * Built without optimization (the pragma): the tests name source lines, and
 * at -O1 gcc merges them.
 *
 * Usage: gdb_reverse [ITERS]   (default 20)
 */
#pragma GCC optimize("O0")
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long total;
static long iters = 20;

static long add_twice(long v)
{
	long twice = v * 2;
	total += twice;
	return total;
}

static void *worker(void *arg)
{
	long id = (long)arg;
	for (long i = 0; i < iters; i++) {
		pthread_mutex_lock(&lock);
		long now = add_twice(id);
		pthread_mutex_unlock(&lock);
		if (now < 0)
			abort();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		iters = atol(argv[1]);
	pthread_t t[2];
	printf("output line 1: starting\n");
	fflush(stdout);
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i + 1));
	pthread_join(t[0], NULL);
	printf("output line 2: T1 joined\n");
	fflush(stdout);
	pthread_join(t[1], NULL);
	printf("output line 3: total %ld\n", total);
	return 0;
}
