/*
 * tests/programs/many_objects.c - a program that makes far more
 * synchronization objects over its life than are alive at once, as a
 * server with a mutex per connection or an allocator does: argv[1] threads
 * (default 4) together make argv[2] objects (default 3000000), a third
 * each mutexes, condition variables and semaphores, each at its own
 * address in a 64 MiB arena the threads walk through (so addresses come
 * back only after a million objects), each used once or twice and then
 * destroyed. Every 1000th mutex of a thread is shared: all threads lock
 * it in turn, so the threads' objects are ordered against each other.
 * argv[3] "keep": destroys none (all stay alive). Prints the sum of the
 * values it saw.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_SLOTS (1u << 20) /* 64 bytes each: a slot holds one object */

union slot {
	pthread_mutex_t m;
	pthread_cond_t c;
	sem_t s;
	char pad[64];
};

static union slot *arena;
static long per_thread;
static int nthreads;
static pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;
static long shared_count;
static int keep;

static void *worker(void *arg)
{
	long me = (long)(intptr_t)arg, sum = 0;
	for (long i = 0; i < per_thread; i++) {
		union slot *o = &arena[(unsigned long)(i * nthreads + me) % ARENA_SLOTS];
		switch (i % 3) {
		case 0:
			pthread_mutex_init(&o->m, NULL);
			pthread_mutex_lock(&o->m);
			sum += pthread_mutex_trylock(&o->m) != 0;
			pthread_mutex_unlock(&o->m);
			if (!keep)
				pthread_mutex_destroy(&o->m);
			break;
		case 1:
			pthread_cond_init(&o->c, NULL);
			pthread_cond_signal(&o->c);
			if (!keep)
				pthread_cond_destroy(&o->c);
			sum++;
			break;
		default: {
			int v = 0;
			sem_init(&o->s, 0, 1);
			sem_wait(&o->s);
			sem_getvalue(&o->s, &v);
			sum += 1 - v;
			if (!keep)
				sem_destroy(&o->s);
		}
		}
		if (i % 1000 == 0) {
			pthread_mutex_lock(&shared);
			shared_count++;
			pthread_mutex_unlock(&shared);
		}
	}
	return (void *)(intptr_t)sum;
}

int main(int argc, char **argv)
{
	nthreads = argc > 1 ? atoi(argv[1]) : 4;
	long objects = argc > 2 ? atol(argv[2]) : 3000000;
	keep = argc > 3 && !strcmp(argv[3], "keep");
	if (nthreads < 1 || nthreads > 64 || objects < 1) {
		fprintf(stderr, "usage: many_objects [threads 1-64] [objects]\n");
		return 2;
	}
	per_thread = objects / nthreads;
	arena = calloc(ARENA_SLOTS, sizeof(*arena));
	if (!arena)
		return 1;
	pthread_t th[64];
	for (long i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
	long total = 0;
	for (int i = 0; i < nthreads; i++) {
		void *r;
		pthread_join(th[i], &r);
		total += (long)(intptr_t)r;
	}
	printf("%ld objects, sum %ld, shared %ld\n", per_thread * nthreads, total, shared_count);
	return 0;
}
