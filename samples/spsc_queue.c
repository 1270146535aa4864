/*
 * spsc_queue - a lock-free single-producer single-consumer ring buffer:
 * the producer writes a slot, then publishes the new tail with a release
 * store; the consumer reads the tail with an acquire load, takes the slot,
 * then publishes the new head. Each side spins while the ring is full or
 * empty. No pthread call between them at all.
 *
 * No bug: a correct lock-free queue, the control for atomics as events.
 * Recorded, it replays with the same sequence of full and empty spins (the
 * count printed below); in logical time every run spins the same number of
 * times.
 *
 * Output: "ok: N items in order, sum S; the consumer found the ring empty
 * E times", or "BUG: item K out of order" if the queue lost or reordered
 * one.
 *
 * Build: det-cc (Makefile). Usage: spsc_queue [ITEMS]
 */
#include <pthread.h>
#include <stdatomic.h>

#include "sample.h"

#define SLOTS 64

static long ring[SLOTS];
static atomic_ulong head, tail; /* head: next to take; tail: next to fill */
static long items, empties;

static void *producer(void *arg)
{
	(void)arg;
	for (long i = 1; i <= items; i++) {
		unsigned long t = atomic_load_explicit(&tail, memory_order_relaxed);
		while (t - atomic_load_explicit(&head, memory_order_acquire) == SLOTS)
			; /* full */
		ring[t % SLOTS] = i;
		atomic_store_explicit(&tail, t + 1, memory_order_release);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	items = arg_long(argc, argv, 1, 200000);
	pthread_t p;
	pthread_create(&p, NULL, producer, NULL);
	long sum = 0;
	for (long want = 1; want <= items; want++) {
		unsigned long h = atomic_load_explicit(&head, memory_order_relaxed);
		while (atomic_load_explicit(&tail, memory_order_acquire) == h)
			empties++; /* empty */
		long v = ring[h % SLOTS];
		atomic_store_explicit(&head, h + 1, memory_order_release);
		if (v != want)
			BUG("item %ld out of order: got %ld", want, v);
		sum += v;
	}
	pthread_join(p, NULL);
	printf("ok: %ld items in order, sum %ld; the consumer found the ring empty %ld times\n", items, sum,
	       empties);
	return 0;
}
