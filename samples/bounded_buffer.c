/*
 * bounded_buffer - producer/consumer with `if` where `while` belongs.
 *
 * The bug: a consumer waits for "not empty" with `if (count == 0)
 * cond_wait(...)`. With two consumers, a woken consumer can find the item
 * already taken by the other one and takes from an empty buffer.
 *
 * The interleaving that triggers it:
 *     C1: lock; count == 0; wait            P: lock; put; signal; unlock
 *     C2: lock; count == 1; take; unlock    C1: wakes, count == 0, takes -> BUG
 *
 * Output: "ok: N items produced and consumed, checksum S" in most runs,
 * "BUG: consumer took from an empty buffer" in some. A trace of a failing
 * run replays with the BUG every time.
 *
 * Usage: bounded_buffer [ITEMS]
 */
#include <pthread.h>

#include "sample.h"

#define CAP 64

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static long buf[CAP];
static int head, count;
static long items, consumed, checksum;

static void *producer(void *arg)
{
	(void)arg;
	for (long i = 1; i <= items + 2; i++) { /* +2: one stop marker per consumer */
		pthread_mutex_lock(&lock);
		while (count == CAP)
			pthread_cond_wait(&not_full, &lock);
		buf[(head + count++) % CAP] = i <= items ? i : -1;
		pthread_cond_signal(&not_empty);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		if (count == 0) /* BUG: must be while */
			pthread_cond_wait(&not_empty, &lock);
		if (count == 0)
			BUG("consumer took from an empty buffer (after %ld items)", consumed);
		long v = buf[head];
		head = (head + 1) % CAP;
		count--;
		pthread_cond_signal(&not_full);
		if (v > 0) {
			consumed++;
			checksum += v;
		}
		pthread_mutex_unlock(&lock);
		if (v < 0)
			return NULL;
		spin(3000); /* use the item */
	}
}

int main(int argc, char **argv)
{
	items = arg_long(argc, argv, 1, 20000);
	pthread_t p, c[2];
	pthread_create(&c[0], NULL, consumer, NULL);
	pthread_create(&c[1], NULL, consumer, NULL);
	pthread_create(&p, NULL, producer, NULL);
	pthread_join(p, NULL);
	pthread_join(c[0], NULL);
	pthread_join(c[1], NULL);
	printf("ok: %ld items produced and consumed, checksum %ld\n", consumed, checksum);
	return 0;
}
