/*
 * iso_kept_aba - a value that goes back to what a thread last saw: the
 * main thread takes a token (1 -> 0) in a heap word it wrote just before,
 * then waits for it to come back; the worker gives it back (0 -> 1). When
 * the main thread's page stays private between rounds, the worker's 1
 * equals what the main thread saw before its own 0: an update that looks
 * only at "the memfd differs from the page as of my last update" misses
 * it (the main thread's own 0 was committed by a wait that blocked, so its
 * view was not updated in between), and the main thread waits forever
 * (pigz's join_all did, on a global).
 *
 * Output: "tokens 200".
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static long *token; /* heap: 1 when the main thread may take it */

#define ROUNDS 200

/* gives the token back when it finds it taken (polling: the main thread
 * takes it and goes straight to its wait, no signal in between) */
static void *giver(void *arg)
{
	(void)arg;
	int given = 0;
	for (long polls = 0; given < ROUNDS && polls < 100000; polls++) {
		pthread_mutex_lock(&lock);
		if (*token == 0) {
			*token = 1;
			given++;
			pthread_cond_broadcast(&cond);
		}
		pthread_mutex_unlock(&lock);
		sched_yield();
	}
	return NULL;
}

int main(void)
{
	token = calloc(512, sizeof *token);
	pthread_t t;
	pthread_create(&t, NULL, giver, NULL);
	int taken = 0;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < ROUNDS; i++) {
		while (*token != 1)
			pthread_cond_wait(&cond, &lock);
		*token = 0; /* committed by the wait that follows, which blocks */
		token[1]++; /* (more writes to the page: it stays private) */
		taken++;
	}
	pthread_mutex_unlock(&lock);
	pthread_join(t, NULL);
	printf("tokens %d\n", taken);
	return 0;
}
