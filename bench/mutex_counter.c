/*
 * bench/mutex_counter.c - the green-threads report's benchmark 1: THREADS
 * threads each do ITERS mutex-protected increments of one counter.
 * Usage: mutex_counter [ITERS] [THREADS]   (defaults: 1000000 2)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter, iters;

static void *work(void *arg)
{
	(void)arg;
	for (long i = 0; i < iters; i++) {
		pthread_mutex_lock(&lock);
		counter++;
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	iters = argc > 1 ? atol(argv[1]) : 1000000;
	int n = argc > 2 ? atoi(argv[2]) : 2;
	pthread_t t[64];
	for (int i = 0; i < n && i < 64; i++)
		pthread_create(&t[i], NULL, work, NULL);
	for (int i = 0; i < n && i < 64; i++)
		pthread_join(t[i], NULL);
	printf("counter %ld\n", counter);
	return counter == iters * n ? 0 : 1;
}
