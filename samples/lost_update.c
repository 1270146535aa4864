/*
 * lost_update - two threads count hits in a plain shared counter: each
 * reads it and writes back the value plus one, with nothing in between.
 *
 * The bug: `v = hits; hits = v + 1;` is not atomic. If the other thread
 * writes the counter between this thread's read and its write, one hit is
 * lost.
 *
 * The interleaving that triggers it: T1 reads hits, T2 reads and writes
 * hits, T1 writes its stale value. The window holds no call (unlike
 * racy_counter's, which logs inside it): a scheduler that switches only at
 * calls (strict mode over a plain build) never splits it; built with
 * `det-cc --sched-points=memory` (samples/bin/lost_update.mem), strict
 * mode can switch between the read and the write, and
 * `detrec --chaos --strict` finds the lost hit.
 *
 * Output: "ok: hits = 2N", or "BUG: lost updates: hits = H, expected 2N".
 *
 * Build: det-cc (Makefile), and det-cc --sched-points=memory (.mem).
 * Usage: lost_update [HITS]
 */
#include <pthread.h>

#include "sample.h"

static volatile long hits;
static long n;
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;
static long reports;

static void *counter(void *arg)
{
	(void)arg;
	for (long i = 0; i < n; i++) {
		long v = hits;  /* read ... */
		hits = v + 1;   /* ... write back: another thread's write in between is lost */
		if (i % 4 == 3) { /* a report now and then, outside the window */
			pthread_mutex_lock(&report_lock);
			reports++;
			pthread_mutex_unlock(&report_lock);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	n = arg_long(argc, argv, 1, 8);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, counter, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (hits != 2 * n)
		BUG("lost updates: hits = %ld, expected %ld", hits, 2 * n);
	printf("ok: hits = %ld\n", hits);
	return 0;
}
