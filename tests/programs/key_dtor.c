/*
 * tests/programs/key_dtor.c - threads whose thread-specific data destructor
 * locks a mutex and runs a pthread_once, as V8's do when a node worker
 * ends: calls into det after det's own key destructor has run for the
 * thread (its det stack is gone by then).
 *
 * Usage: key_dtor   (prints how many destructors ran)
 */
#include <pthread.h>
#include <stdio.h>

static pthread_key_t key;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int ran;

static void nothing(void)
{
}

static void dtor(void *p)
{
	(void)p;
	pthread_once(&once, nothing);
	pthread_mutex_lock(&m);
	ran++;
	pthread_mutex_unlock(&m);
}

static void *work(void *arg)
{
	pthread_setspecific(key, arg);
	return NULL;
}

int main(void)
{
	pthread_key_create(&key, dtor);
	pthread_t t[4];
	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, work, (void *)(i + 1));
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("%d destructors ran\n", ran);
	return 0;
}
