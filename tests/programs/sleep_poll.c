/*
 * sleep_poll.c - a thread waits for another's plain store by sleeping in a
 * loop (while (!flag) usleep(...)), the way test programs and daemons hand
 * off without a lock. The worker stores the flag in the middle of its work,
 * long before its next event, so how many sleeps the loop makes is timing:
 * a replay must let the loop sleep more or less often than recorded.
 *
 * Usage: sleep_poll [ROUNDS]   (default 3)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile int flag;
static pthread_mutex_t out = PTHREAD_MUTEX_INITIALIZER;

static long work(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += i * i % 7;
	return s;
}

static void *worker(void *arg)
{
	long round = (long)arg;
	long s = work(20000000 + round * 5000000);
	flag = 1;
	s += work(20000000);
	pthread_mutex_lock(&out);
	printf("worker %ld: %ld\n", round, s);
	pthread_mutex_unlock(&out);
	return NULL;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 3;
	for (long r = 0; r < rounds; r++) {
		pthread_t t;
		flag = 0;
		pthread_create(&t, NULL, worker, (void *)r);
		while (!flag)
			usleep(300);
		pthread_mutex_lock(&out);
		printf("main saw round %ld\n", r);
		pthread_mutex_unlock(&out);
		pthread_join(t, NULL);
	}
	return 0;
}
