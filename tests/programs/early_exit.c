/* tests/programs/early_exit.c - main returns while its threads still run and
 * take locks: the trace must be complete up to the exit. */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void *busy(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&m);
		counter++;
		pthread_mutex_unlock(&m);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, busy, NULL);
	for (;;) {
		pthread_mutex_lock(&m);
		long c = counter;
		pthread_mutex_unlock(&m);
		if (c >= 1000)
			break;
	}
	printf("main leaves with the workers running\n");
	return 0;
}
