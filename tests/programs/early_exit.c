/* tests/programs/early_exit.c - main returns while its threads still run and
 * take locks: the trace must be complete up to the exit. Main waits until
 * both workers have counted (on a loaded machine one may not have started
 * by the time the other reached 1000). */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter, each[2];

static void *busy(void *arg)
{
	long *mine = arg;
	for (;;) {
		pthread_mutex_lock(&m);
		counter++;
		++*mine;
		pthread_mutex_unlock(&m);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, busy, &each[i]);
	for (;;) {
		pthread_mutex_lock(&m);
		long c = counter, both = each[0] && each[1];
		pthread_mutex_unlock(&m);
		if (c >= 1000 && both)
			break;
	}
	printf("main leaves with the workers running\n");
	return 0;
}
