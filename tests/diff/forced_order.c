/*
 * tests/diff/forced_order.c - a multithreaded program whose schedule cannot
 * vary: every recorded event happens while every other thread is blocked in
 * a call that records nothing until it returns, so two recordings must have
 * the same order (detdiff says "identical").
 *
 * How: main starts each worker and waits until it has started; a token
 * (one semaphore per thread) then goes round the ring ROUNDS times, and only
 * its holder locks the shared mutex; at the end main lets each worker finish
 * and joins it before the next one.
 *
 * Usage: forced_order [ROUNDS] [THREADS]   (defaults: 5 3)
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX 16

static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;
static sem_t token[MAX + 1], done[MAX + 1], started;
static long counter, rounds;
static int nthreads;

static void *worker(void *arg)
{
	long me = (long)arg;
	sem_post(&started);
	for (long r = 0; r < rounds; r++) {
		sem_wait(&token[me]);
		pthread_mutex_lock(&counter_lock);
		counter++;
		pthread_mutex_unlock(&counter_lock);
		sem_post(&token[me == nthreads ? 0 : me + 1]);
	}
	sem_wait(&done[me]);
	return NULL;
}

int main(int argc, char **argv)
{
	rounds = argc > 1 ? atol(argv[1]) : 5;
	nthreads = argc > 2 ? atoi(argv[2]) : 3;
	if (nthreads < 1 || nthreads > MAX)
		return 2;
	pthread_t t[MAX + 1];
	sem_init(&started, 0, 0);
	for (int i = 0; i <= nthreads; i++) {
		sem_init(&token[i], 0, 0);
		sem_init(&done[i], 0, 0);
	}
	for (long i = 1; i <= nthreads; i++) {
		pthread_create(&t[i], NULL, worker, (void *)i);
		sem_wait(&started);
	}
	for (long r = 0; r < rounds; r++) {
		sem_post(&token[1]);
		sem_wait(&token[0]);
	}
	for (int i = 1; i <= nthreads; i++) {
		sem_post(&done[i]);
		pthread_join(t[i], NULL);
	}
	printf("counter %ld\n", counter);
	return counter == rounds * nthreads ? 0 : 1;
}
