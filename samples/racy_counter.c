/*
 * racy_counter - a lost update: two threads increment a shared counter
 * without a lock (a data race), logging now and then between the read and
 * the write.
 *
 * The bug: `v = counter; ...; counter = v + 1` is not atomic. When the other
 * thread increments in between, one increment is lost.
 *
 * The interleaving that triggers it: T1 reads counter, T2 reads and writes
 * it, T1 writes its stale value. Natively this happens anywhere; under
 * `detrec --strict` only at events (here, the log lock), which makes the
 * lost update part of the recorded schedule: a strict trace replays with
 * the same final count every time. (An ordered, non-strict replay cannot:
 * the race is between events.)
 *
 * Output: "ok: counter = 2N" when no update was lost, "BUG: lost updates:
 * counter = C, expected 2N" otherwise (most native runs).
 *
 * Usage: racy_counter [INCREMENTS]
 */
#include <pthread.h>

#include "sample.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static long counter, logged;
static long n;

static void *incrementer(void *arg)
{
	(void)arg;
	for (long i = 0; i < n; i++) {
		long v = counter; /* racy read */
		if (i % 16 == 0) {
			pthread_mutex_lock(&log_lock);
			logged++;
			pthread_mutex_unlock(&log_lock);
		}
		counter = v + 1; /* racy write */
	}
	return NULL;
}

int main(int argc, char **argv)
{
	n = arg_long(argc, argv, 1, 20000);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, incrementer, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (counter != 2 * n)
		BUG("lost updates: counter = %ld, expected %ld", counter, 2 * n);
	printf("ok: counter = %ld\n", counter);
	return 0;
}
