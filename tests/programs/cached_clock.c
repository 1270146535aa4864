/*
 * tests/programs/cached_clock.c - a clock thread publishes the time the
 * way servers cache it (memcached's current_time, a libevent or nginx
 * cached clock): it reads the clock and stores a tick that the worker
 * thread reads between its own locks, without a lock of its own. Here the
 * clock thread reads the clock 2 ms after its last lock (in replay that
 * wait is skipped), so when it stores the tick depends on where its clock
 * read is in the order, not on its lock. The worker takes another lock
 * whenever it sees the tick change and prints at which of its rounds.
 *
 * Usage: cached_clock   (prints the worker's rounds where the tick changed)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define TICKS 5
#define ROUNDS 400

static _Atomic long tick; /* the cached clock (a tick number: the test's output stays the same) */
static pthread_mutex_t clock_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t work_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;

static void *clock_thread(void *arg)
{
	(void)arg;
	for (long i = 1; i <= TICKS; i++) {
		pthread_mutex_lock(&clock_lock);
		pthread_mutex_unlock(&clock_lock);
		usleep(2000);
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts); /* what a server caches; the tick stands for it */
		atomic_store_explicit(&tick, i, memory_order_release);
	}
	return NULL;
}

int main(void)
{
	pthread_t c;
	pthread_create(&c, NULL, clock_thread, NULL);
	long last = 0;
	int changes = 0;
	for (int r = 0; r < ROUNDS && changes < TICKS; r++) {
		pthread_mutex_lock(&work_lock);
		long now = atomic_load_explicit(&tick, memory_order_acquire);
		if (now != last) {
			pthread_mutex_lock(&seen_lock);
			printf("round %d: tick %ld\n", r, now);
			pthread_mutex_unlock(&seen_lock);
			last = now;
			changes++;
		}
		pthread_mutex_unlock(&work_lock);
		usleep(50);
	}
	pthread_join(c, NULL);
	return 0;
}
