/* tests/programs/destroy_busy.c - pthread_mutex_destroy of a mutex a
 * condition wait is in: glibc says EBUSY (the waiter still counts among the
 * mutex's users), as pbzip2 meets it when it deletes a queue a consumer
 * waits on. main knows the worker waits once it gets the mutex back from
 * the worker's wait; it tries to destroy it, says what it got, then lets the
 * worker go. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go_cond = PTHREAD_COND_INITIALIZER, ready_cond = PTHREAD_COND_INITIALIZER;
static int waiting, go;

static void *worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&m);
	waiting = 1;
	pthread_cond_signal(&ready_cond);
	while (!go)
		pthread_cond_wait(&go_cond, &m);
	pthread_mutex_unlock(&m);
	return NULL;
}

int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	pthread_mutex_lock(&m);
	while (!waiting)
		pthread_cond_wait(&ready_cond, &m);
	pthread_mutex_unlock(&m);
	int r = pthread_mutex_destroy(&m); /* the worker is in its wait */
	printf("destroy while waited on: %s\n", r ? strerror(r) : "done");
	pthread_mutex_lock(&m);
	go = 1;
	pthread_cond_signal(&go_cond);
	pthread_mutex_unlock(&m);
	pthread_join(t, NULL);
	printf("worker joined\n");
	return 0;
}
