/* tests/programs/strict_tail.c - main ends the program while, in strict
 * mode, the worker waits for its turn just after an unlock, before the plain
 * write that follows it. That write never happened in the recording, so
 * replay must not let it happen either: main prints what it saw. */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static volatile long published; /* written after the unlock, outside the lock */

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&m);
		long c = ++counter;
		pthread_mutex_unlock(&m);
		for (volatile int i = 0; i < 2000; i++)
			; /* work between two events */
		published = c;
	}
	return NULL;
}

int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	long c;
	do {
		pthread_mutex_lock(&m);
		c = counter;
		pthread_mutex_unlock(&m);
	} while (c < 1000);
	for (volatile int i = 0; i < 2000000; i++)
		; /* time for a worker running on (it must not) to publish */
	printf("counter %ld, published %ld\n", c, published);
	return 0;
}
