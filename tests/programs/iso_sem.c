/*
 * iso_sem - semaphores between isolated threads: two producers put numbered
 * items into a ring guarded by counting semaphores (free slots, items) and
 * a mutex; the consumer takes them and folds the order it saw into a hash.
 * Natively the order (so the hash) varies; under detrun --isolated it is
 * the same on every run, and nothing is lost.
 *
 * Output: "items N, sum S, order H".
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>

#define RING 4
#define PER 500

static sem_t free_slots, items;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long ring[RING];
static int head, tail;

static void *producer(void *arg)
{
	long id = (long)arg;
	for (long i = 0; i < PER; i++) {
		sem_wait(&free_slots);
		pthread_mutex_lock(&lock);
		ring[tail] = id * 100000 + i;
		tail = (tail + 1) % RING;
		pthread_mutex_unlock(&lock);
		sem_post(&items);
	}
	return NULL;
}

int main(void)
{
	sem_init(&free_slots, 0, RING);
	sem_init(&items, 0, 0);
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, producer, (void *)(i + 1));
	unsigned long hash = 1469598103934665603ul, sum = 0;
	long n = 0;
	for (; n < 2 * PER; n++) {
		sem_wait(&items);
		pthread_mutex_lock(&lock);
		long v = ring[head];
		head = (head + 1) % RING;
		pthread_mutex_unlock(&lock);
		sem_post(&free_slots);
		sum += (unsigned long)v;
		hash = (hash ^ (unsigned long)v) * 1099511628211ul;
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("items %ld, sum %lu, order %lx\n", n, sum, hash);
	return 0;
}
