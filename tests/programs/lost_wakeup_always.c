/*
 * tests/programs/lost_wakeup_always.c - a lost wake-up on every run: the
 * signaller signals `ready` before the waiter waits (main joins it first),
 * and the waiter waits with no predicate loop, so nothing ever wakes it;
 * main then blocks joining the waiter. No wait-for cycle: every thread is
 * blocked in an untimed wait only another thread could end.
 */
#include <pthread.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready = PTHREAD_COND_INITIALIZER;

static void *signaller(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	pthread_cond_signal(&ready); /* nobody waits yet: the wake-up is lost */
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void *waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	pthread_cond_wait(&ready, &lock); /* the bug: no predicate to check first */
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(void)
{
	pthread_t s, w;
	pthread_create(&s, NULL, signaller, NULL);
	pthread_join(s, NULL);
	pthread_create(&w, NULL, waiter, NULL);
	pthread_join(w, NULL);
	return 0;
}
