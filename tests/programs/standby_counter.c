/* Two threads count under one mutex until the program is killed, or (with
 * an argument N) until one of them has counted N times and writes through
 * a null pointer. A standby replica (detrec --follow --standby) holds its
 * state when it dies: `counter` there is the number of recorded locks. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
long counter;
static long crash_at;
static long *volatile nowhere; /* (null: the compiler cannot see it) */

static void __attribute__((noinline)) crash_here(long n)
{
	*nowhere = n;
}

static void *count(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		long n = ++counter;
		pthread_mutex_unlock(&lock);
		if (crash_at && n == crash_at)
			crash_here(n);
		usleep(200);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	crash_at = argc > 1 ? atol(argv[1]) : 0;
	printf("counting\n");
	fflush(stdout);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, count, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return 0;
}
