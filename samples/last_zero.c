/*
 * last_zero - the IRS thesis' "Last Zero" benchmark (after Abdulla et al.'s
 * DPOR work): 15 writer threads fill an array while a 16th scans it from
 * the top for its last zero. Every access is under that element's mutex,
 * so the result depends only on the order of the critical sections.
 *
 *     writer j (1..15): arr[j] = arr[j-1] + 1
 *     reader:           for (i = N; arr[i] != 0; i--) ;
 *
 * The bug: the program's author assumes the writers finish first (they
 * are started first) and checks that the scan ends at index 0.
 *
 * The interleaving that triggers it: the reader reaches index i before
 * writer i has written it (or writer i read arr[i-1] while it was still
 * 0), so the scan stops at i > 0.
 *
 * Output: "ok: last zero at index 0" in most runs, "BUG: the reader found
 * a zero at index I" in some. A trace of a failing run replays with the
 * same index every time.
 *
 * Usage: last_zero [ROUNDS]
 */
#include <pthread.h>

#include "sample.h"

#define N 15

static pthread_mutex_t cell[N + 1];
static long arr[N + 1];

static long get(int i)
{
	pthread_mutex_lock(&cell[i]);
	long v = arr[i];
	pthread_mutex_unlock(&cell[i]);
	return v;
}

static void set(int i, long v)
{
	pthread_mutex_lock(&cell[i]);
	arr[i] = v;
	pthread_mutex_unlock(&cell[i]);
}

static void *writer(void *arg)
{
	int j = (int)(long)arg;
	set(j, get(j - 1) + 1);
	return NULL;
}

static void *reader(void *arg)
{
	long *found = arg;
	int i;
	for (i = N; get(i) != 0; i--)
		;
	*found = i;
	return NULL;
}

int main(int argc, char **argv)
{
	long rounds = arg_long(argc, argv, 1, 1);
	for (int i = 0; i <= N; i++)
		pthread_mutex_init(&cell[i], NULL);
	for (long r = 0; r < rounds; r++) {
		pthread_t w[N + 1], rd;
		long found = -1;
		for (int i = 0; i <= N; i++)
			arr[i] = 0;
		for (long j = 1; j <= N; j++)
			pthread_create(&w[j], NULL, writer, (void *)j);
		pthread_create(&rd, NULL, reader, &found);
		for (int j = 1; j <= N; j++)
			pthread_join(w[j], NULL);
		pthread_join(rd, NULL);
		if (found != 0)
			BUG("the reader found a zero at index %ld in round %ld", found, r);
	}
	printf("ok: last zero at index 0 in %ld rounds\n", rounds);
	return 0;
}
