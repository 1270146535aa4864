/*
 * timeout_race - a time-dependent bug: a request handler gives each job a
 * deadline measured with clock_gettime, and a job that misses it is
 * retried - but the retry path forgets to release the job's slot.
 *
 * The bug: when a worker is slow enough that a job misses its 40 us
 * deadline, the job is retried without releasing its slot; after enough
 * misses the pool runs out of slots.
 *
 * The interleaving / input that triggers it: the clock readings. A job
 * misses its deadline when the worker thread is descheduled or contended
 * (the workers share one lock), which the clock values record.
 *
 * Output: "ok: N jobs done, M retried" natively in most runs, "BUG: slot
 * leak: ..." in some. A trace of a failing run replays with the same clock
 * readings, so the same jobs miss their deadlines and the BUG repeats.
 *
 * Usage: timeout_race [JOBS]
 */
#include <pthread.h>
#include <time.h>

#include "sample.h"

#define SLOTS 3

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int free_slots = SLOTS;
static long jobs, done, retried;

static long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000L + ts.tv_nsec / 1000;
}

static void *worker(void *arg)
{
	long id = (long)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		if (done >= jobs) {
			pthread_mutex_unlock(&lock);
			return NULL;
		}
		if (free_slots == 0) {
			long d = done, r = retried; /* read under the lock */
			pthread_mutex_unlock(&lock);
			BUG("slot leak: no free slot after %ld jobs (%ld retried)", d, r);
		}
		free_slots--;
		pthread_mutex_unlock(&lock);
		long start = now_us();
		spin(2000 + (unsigned)(id * 500)); /* the job */
		long took = now_us() - start;
		pthread_mutex_lock(&lock);
		if (took > 40) {
			retried++; /* BUG: the slot is not given back */
		} else {
			done++;
			free_slots++;
		}
		pthread_mutex_unlock(&lock);
	}
}

int main(int argc, char **argv)
{
	jobs = arg_long(argc, argv, 1, 2000);
	pthread_t t[3];
	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("ok: %ld jobs done, %ld retried\n", done, retried);
	return 0;
}
