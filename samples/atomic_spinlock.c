/*
 * atomic_spinlock - threads increment a counter under a spinlock made of
 * C11 atomics (atomic_exchange to take it, atomic_store to give it back),
 * with no pthread call on the way: a pthread-level recorder sees nothing
 * of who got the lock when. Built with det-cc, every atomic is an event.
 *
 * No bug: this is the control for lock-free synchronization. Recorded
 * (ordered or strict) it replays with the same order of lock holders; in
 * logical time (`detrun`) every run takes the lock in the same order, and
 * the per-thread tallies printed at the end are the same every time.
 *
 * Output: "ok: counter = T*N; turns: a b c ..." (how many times in a row
 * the lock changed hands, a schedule fingerprint), "BUG: ..." if the lock
 * let two threads in.
 *
 * Build: det-cc (Makefile). Usage: atomic_spinlock [INCREMENTS] [THREADS]
 */
#include <pthread.h>
#include <stdatomic.h>

#include "sample.h"

static atomic_int lock_word;
static long counter, n, handovers;
static int last_owner = -1;

static void spin_lock(void)
{
	while (atomic_exchange_explicit(&lock_word, 1, memory_order_acquire))
		while (atomic_load_explicit(&lock_word, memory_order_relaxed))
			;
}

static void spin_unlock(void)
{
	atomic_store_explicit(&lock_word, 0, memory_order_release);
}

static void *worker(void *arg)
{
	int me = (int)(long)arg;
	for (long i = 0; i < n; i++) {
		spin_lock();
		long v = counter;
		if (last_owner != me)
			handovers++;
		last_owner = me;
		counter = v + 1;
		spin_unlock();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	n = arg_long(argc, argv, 1, 100000);
	long threads = arg_long(argc, argv, 2, 2);
	pthread_t t[16];
	if (threads > 16)
		threads = 16;
	for (long i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (long i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	if (counter != threads * n)
		BUG("the spinlock let two threads in: counter = %ld, expected %ld", counter, threads * n);
	printf("ok: counter = %ld; the lock changed hands %ld times\n", counter, handovers);
	return 0;
}
