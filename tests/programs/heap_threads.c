/*
 * tests/programs/heap_threads.c - threads print where malloc put their
 * first block (tests/e2e/test_heap_addresses.py). glibc gives each thread
 * its heap at its first allocation; here the threads allocate in the
 * reverse of the order they start (each spins less than the one before
 * it), all alive at once (a barrier: no thread's heap is left for another),
 * so the addresses say in which order their heaps were made. A replay
 * must print the recording's addresses: a pointer a program prints, hashes
 * or compares is part of what it does.
 *
 * Usage: heap_threads [THREADS]   (default 4, at most 16)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_barrier_t all_allocated;
static pthread_mutex_t out = PTHREAD_MUTEX_INITIALIZER;
static long threads = 4;

static void *work(void *arg)
{
	long id = (long)arg;
	for (volatile long i = 0; i < 200000 * (threads - id); i++)
		;
	void *p = malloc(64);
	pthread_barrier_wait(&all_allocated);
	pthread_mutex_lock(&out);
	printf("thread %ld: %p\n", id, p);
	pthread_mutex_unlock(&out);
	pthread_barrier_wait(&all_allocated);
	free(p);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		threads = atol(argv[1]);
	if (threads < 1 || threads > 16)
		return 2;
	pthread_barrier_init(&all_allocated, NULL, (unsigned)threads);
	pthread_t t[16];
	for (long i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, work, (void *)i);
	for (long i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return 0;
}
