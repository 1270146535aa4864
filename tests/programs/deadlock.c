/*
 * tests/programs/deadlock.c - two threads take two mutexes in opposite
 * orders, after a barrier that makes each hold its first one: every run
 * deadlocks (T1 holds `ledger`, waits for `shared->lock`; T2 the other way).
 * `shared->lock` is on the heap, reached from the static pointer `shared`:
 * the tests check how every tool names both.
 */
#include <pthread.h>
#include <stdlib.h>

struct account {
	long balance;
	pthread_mutex_t lock;
};

static pthread_mutex_t ledger = PTHREAD_MUTEX_INITIALIZER;
static struct account *shared;
static pthread_barrier_t both;

static void *one(void *arg)
{
	int mine = arg != NULL;
	pthread_mutex_lock(mine ? &ledger : &shared->lock);
	pthread_barrier_wait(&both);
	pthread_mutex_lock(mine ? &shared->lock : &ledger);
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	shared = calloc(1, sizeof(*shared));
	pthread_mutex_init(&shared->lock, NULL);
	pthread_barrier_init(&both, NULL, 2);
	pthread_create(&t[0], NULL, one, (void *)1);
	pthread_create(&t[1], NULL, one, NULL);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	return 0;
}
