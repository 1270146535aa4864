/* tests/programs/long_pause.c - LOOPS lock/unlock pairs, a pause of SECONDS,
 * then one more pair; prints "done". For the ring's timestamps, which are
 * 32-bit deltas: a pause longer than 2^32 TSC ticks needs a whole one.
 * Usage: long_pause SECONDS LOOPS */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter;

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0;
	long loops = argc > 2 ? atol(argv[2]) : 1;
	for (long i = 0; i < loops; i++) {
		pthread_mutex_lock(&m);
		counter++;
		pthread_mutex_unlock(&m);
	}
	struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
	nanosleep(&ts, NULL);
	pthread_mutex_lock(&m);
	counter++;
	pthread_mutex_unlock(&m);
	printf("done\n");
	return counter == loops + 1 ? 0 : 1;
}
