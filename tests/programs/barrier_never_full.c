/*
 * tests/programs/barrier_never_full.c - a barrier for three that only two
 * threads ever reach, on every run: both wait in it for ever (main also
 * would join the other). Every thread is blocked in an untimed wait only
 * another thread could end.
 */
#include <pthread.h>

static pthread_barrier_t gate;

static void *worker(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&gate);
	return NULL;
}

int main(void)
{
	pthread_t w;
	pthread_barrier_init(&gate, NULL, 3); /* the bug: one party too many */
	pthread_create(&w, NULL, worker, NULL);
	pthread_barrier_wait(&gate);
	pthread_join(w, NULL);
	return 0;
}
