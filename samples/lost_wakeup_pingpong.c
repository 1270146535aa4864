/*
 * lost_wakeup_pingpong - the green-threads report's pre-fix ping-pong,
 * ported to pthreads: two threads hand a turn back and forth a million
 * times; a waiter drops the state lock before it starts waiting.
 *
 * The bug: between unlock(state) and cond_wait(wake) there is a window in
 * which the other thread can flip the flag and signal; the signal finds
 * nobody waiting and is lost. Then both wait for ever.
 *
 * The interleaving that triggers it:
 *     T1: lock(state); flag != 1; unlock(state)
 *     T2: lock(state); flag = 1; unlock(state); lock(wake); signal; unlock(wake)
 *     T1: lock(wake); cond_wait(wake)      <- the signal already happened
 *     T2: next round, waits too            -> both sleep for ever
 *
 * Output: "ok: N hand-offs" or a hang (record with `detrec --timeout`).
 * Natively it hangs in most runs of 1M hand-offs. The trace of a hanging
 * run replays into the same two sleeping threads every time.
 *
 * Usage: lost_wakeup_pingpong [ROUNDS]
 */
#include <pthread.h>

#include "sample.h"

static pthread_mutex_t state = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static int flag;
static long rounds;

static void *player(void *arg)
{
	int id = (int)(long)arg;
	for (long i = 0; i < rounds; i++) {
		pthread_mutex_lock(&state);
		while (flag != id) {
			pthread_mutex_unlock(&state);
			/* the window: the other player may signal right now */
			pthread_mutex_lock(&wake_lock);
			pthread_cond_wait(&wake, &wake_lock);
			pthread_mutex_unlock(&wake_lock);
			pthread_mutex_lock(&state);
		}
		flag = 1 - id;
		pthread_mutex_unlock(&state);
		pthread_mutex_lock(&wake_lock);
		pthread_cond_signal(&wake);
		pthread_mutex_unlock(&wake_lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	rounds = arg_long(argc, argv, 1, 1000000);
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, player, (void *)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("ok: %ld hand-offs\n", 2 * rounds);
	return 0;
}
