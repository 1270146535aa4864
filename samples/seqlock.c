/*
 * seqlock - one writer updates a pair (x, y = 2x) under a sequence lock:
 * it makes the sequence odd, writes, makes it even again. Readers copy
 * the pair and retry when the sequence was odd or changed meanwhile. All
 * accesses are C11 atomics (the data with relaxed order, fenced), so the
 * program is race-free, and no pthread call orders anything.
 *
 * No bug: the control for a reader/writer protocol made only of atomics.
 * Recorded, each reader retries exactly as often in every replay; in
 * logical time every run gives the same retry counts.
 *
 * Output: "ok: R reads, all consistent; retries: a b" (per reader), or
 * "BUG: torn read x=.. y=.." if a reader accepted a half-written pair.
 *
 * Build: det-cc (Makefile). Usage: seqlock [WRITES]
 */
#include <pthread.h>
#include <stdatomic.h>

#include "sample.h"

#define READERS 2

static atomic_uint seq;
static atomic_long x, y;
static atomic_int done;
static long writes, reads[READERS], retries[READERS];

static void *writer(void *arg)
{
	(void)arg;
	for (long i = 1; i <= writes; i++) {
		unsigned s = atomic_load_explicit(&seq, memory_order_relaxed);
		atomic_store_explicit(&seq, s + 1, memory_order_relaxed);
		atomic_thread_fence(memory_order_release);
		atomic_store_explicit(&x, i, memory_order_relaxed);
		atomic_store_explicit(&y, 2 * i, memory_order_relaxed);
		atomic_store_explicit(&seq, s + 2, memory_order_release);
	}
	atomic_store(&done, 1);
	return NULL;
}

static void *reader(void *arg)
{
	long me = (long)arg;
	for (;;) {
		int last = atomic_load(&done);
		unsigned s1 = atomic_load_explicit(&seq, memory_order_acquire);
		long a = atomic_load_explicit(&x, memory_order_relaxed);
		long b = atomic_load_explicit(&y, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		unsigned s2 = atomic_load_explicit(&seq, memory_order_relaxed);
		if ((s1 & 1) || s1 != s2) {
			retries[me]++;
			continue;
		}
		if (b != 2 * a)
			BUG("torn read x=%ld y=%ld", a, b);
		reads[me]++;
		if (last)
			return NULL;
	}
}

int main(int argc, char **argv)
{
	writes = arg_long(argc, argv, 1, 50000);
	pthread_t w, r[READERS];
	for (long i = 0; i < READERS; i++)
		pthread_create(&r[i], NULL, reader, (void *)i);
	pthread_create(&w, NULL, writer, NULL);
	pthread_join(w, NULL);
	for (long i = 0; i < READERS; i++)
		pthread_join(r[i], NULL);
	printf("ok: %ld reads, all consistent; retries: %ld %ld\n", reads[0] + reads[1], retries[0], retries[1]);
	return 0;
}
