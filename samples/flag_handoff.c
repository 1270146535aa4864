/*
 * flag_handoff - an unsynchronized flag hand-off: the producer raises a
 * plain `ready` flag before it has finished writing the data the flag
 * announces, and the consumer polls the flag without a lock (data races).
 *
 * The bug: `ready = 1` comes before `data = ...` (an order violation). A
 * consumer that sees the flag in between reads stale data.
 *
 * The interleaving that triggers it: producer sets ready, logs (an event),
 * consumer (polling with sched_yield) sees ready and reads data, producer
 * writes data. Natively rare (a short window); `detrec --chaos --strict`
 * finds it quickly, and a strict trace replays it every time.
 *
 * Output: "ok: N hand-offs" when every read saw fresh data, "BUG: hand-off
 * K read stale data ..." otherwise.
 *
 * Usage: flag_handoff [HANDOFFS]
 */
#include <pthread.h>
#include <sched.h>

#include "sample.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int ready;
static volatile long data, taken;
static long rounds, logged;

static void *producer(void *arg)
{
	(void)arg;
	for (long r = 1; r <= rounds; r++) {
		while (taken != r - 1)
			sched_yield();
		ready = 1; /* BUG: announced before the data is there */
		pthread_mutex_lock(&log_lock);
		logged++;
		pthread_mutex_unlock(&log_lock);
		data = r * 100;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	rounds = arg_long(argc, argv, 1, 2000);
	pthread_t p;
	pthread_create(&p, NULL, producer, NULL);
	for (long r = 1; r <= rounds; r++) {
		while (!ready)
			sched_yield();
		long d = data;
		if (d != r * 100)
			BUG("hand-off %ld read stale data %ld (expected %ld)", r, d, r * 100);
		ready = 0;
		taken = r;
	}
	pthread_join(p, NULL);
	printf("ok: %ld hand-offs\n", rounds);
	return 0;
}
