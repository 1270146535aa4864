/*
 * pingpong_ok - the control program: the green-threads report's correct
 * ping-pong (benchmark 2), two threads strictly alternating through a
 * flag, a mutex and a condition variable.
 *
 * No bug: the flag is only read and written under the mutex, and the
 * wait is a `while` around pthread_cond_wait, which releases the mutex
 * atomically. Every run prints the same line.
 *
 * Output: "ok: N hand-offs, last turn T" natively and under replay.
 *
 * Usage: pingpong_ok [ROUNDS]
 */
#include <pthread.h>

#include "sample.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_changed = PTHREAD_COND_INITIALIZER;
static int turn;
static long rounds, handoffs;

static void *player(void *arg)
{
	int id = (int)(long)arg;
	for (long i = 0; i < rounds; i++) {
		pthread_mutex_lock(&lock);
		while (turn != id)
			pthread_cond_wait(&turn_changed, &lock);
		turn = 1 - id;
		handoffs++;
		pthread_cond_signal(&turn_changed);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	rounds = arg_long(argc, argv, 1, 10000);
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, player, (void *)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (handoffs != 2 * rounds)
		BUG("%ld hand-offs, expected %ld", handoffs, 2 * rounds);
	printf("ok: %ld hand-offs, last turn %d\n", handoffs, turn);
	return 0;
}
