/* tests/programs/spinner.c - two threads take a lock for ever; prints a line
 * first so a test knows it is running. */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void *loop(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
	return NULL;
}

int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, loop, NULL);
	printf("running\n");
	fflush(stdout);
	loop(NULL);
}
