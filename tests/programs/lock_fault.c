/*
 * tests/programs/lock_fault.c - a crash inside a pthread call: main
 * frees the queue and clears the pointer to it while the consumer waits at
 * a gate; the consumer then locks the queue's mutex through the cleared
 * pointer, and pthread_mutex_lock faults (at address 0x40, the mutex's
 * offset). Every run dies of SIGSEGV in T1, at the line marked CRASH.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct queue {
	char items[64];
	pthread_mutex_t lock;
	int count;
};

static struct queue *shared;
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;

static void *consumer(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&gate);
	struct queue *q = shared;
	pthread_mutex_unlock(&gate);
	pthread_mutex_lock(&q->lock); /* CRASH */
	q->count--;
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

int main(void)
{
	shared = calloc(1, sizeof(*shared));
	pthread_mutex_init(&shared->lock, NULL);
	pthread_mutex_lock(&gate);
	pthread_t t;
	pthread_create(&t, NULL, consumer, NULL);
	free(shared);
	shared = NULL;
	pthread_mutex_unlock(&gate);
	pthread_join(t, NULL);
	puts("not reached");
	return 0;
}
