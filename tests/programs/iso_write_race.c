/*
 * iso_write_race - a write-write data race between two threads on a global
 * and on a heap word, in the same synchronization interval: both threads
 * pass a barrier, store their own number, and pass it again.
 *
 * Natively the value left is whichever store came last (either number).
 * Under detrun --isolated the stores are committed in turn order, so the
 * output is the same on every run, and each racy variable is reported on
 * stderr once ("race: T1 and T2 wrote ... (winner+0)").
 *
 * Output: "winner = W, cell = C".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_barrier_t gate;
static long winner;
static long *cell;

static void *racer(void *arg)
{
	long me = (long)arg;
	pthread_barrier_wait(&gate);
	for (volatile int i = 0; i < 100000; i++)
		;
	winner = me;  /* racy write */
	cell[0] = me; /* racy write, heap */
	pthread_barrier_wait(&gate);
	return NULL;
}

int main(void)
{
	cell = calloc(4, sizeof *cell);
	pthread_barrier_init(&gate, NULL, 2);
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, racer, (void *)(i + 1));
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("winner = %ld, cell = %ld\n", winner, cell[0]);
	return 0;
}
