/*
 * tests/programs/deadlock.c - two threads take two mutexes in opposite
 * orders, after a barrier that makes each hold its first one: every run
 * deadlocks (T1 holds a, waits for b; T2 holds b, waits for a).
 */
#include <pthread.h>

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t b = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both;

static void *one(void *arg)
{
	int first = arg != NULL;
	pthread_mutex_lock(first ? &a : &b);
	pthread_barrier_wait(&both);
	pthread_mutex_lock(first ? &b : &a);
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	pthread_barrier_init(&both, NULL, 2);
	pthread_create(&t[0], NULL, one, (void *)1);
	pthread_create(&t[1], NULL, one, NULL);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	return 0;
}
