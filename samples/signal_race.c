/*
 * signal_race - a signal-handler race (after the green-threads report): a
 * SIGALRM timer handler and the main loop both update a two-field record
 * without blocking the signal.
 *
 * The bug: the main loop writes `count`, logs the update, then writes
 * `sum`; the handler reads both and checks sum == 10 * count. A timer tick
 * that lands between the two writes sees a torn record.
 *
 * The interleaving that triggers it: the signal delivered after `count++`
 * and before `sum += 10`, i.e. at the logging call. det holds a signal until
 * the thread's next call into det (here: the log lock) and records it
 * there, so replay delivers it at the same call.
 *
 * Output: "ok: N updates, M ticks" natively in most runs, "BUG: torn record
 * seen by the signal handler" in some. A trace of a failing run replays
 * with the tick at the same place, and the same BUG.
 *
 * Usage: signal_race [UPDATES]
 */
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>

#include "sample.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile long count, sum, ticks, torn, logged;

static void on_tick(int sig)
{
	(void)sig;
	ticks++;
	if (sum != 10 * count)
		torn++;
}

int main(int argc, char **argv)
{
	long updates = arg_long(argc, argv, 1, 300000);
	signal(SIGALRM, on_tick);
	struct itimerval it = {{0, 3000}, {0, 3000}};
	setitimer(ITIMER_REAL, &it, NULL);
	for (long i = 0; i < updates; i++) {
		count++;
		pthread_mutex_lock(&log_lock); /* log the update (not the record's lock) */
		logged++;
		pthread_mutex_unlock(&log_lock);
		sum += 10; /* a tick before this line sees a torn record */
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	if (torn)
		BUG("torn record seen by the signal handler (%ld of %ld ticks)", torn, ticks);
	printf("ok: %ld updates, %ld ticks\n", updates, ticks);
	return 0;
}
