/*
 * iso_forever - two threads take one mutex in turn for ever (a counter
 * under it): a run only a timeout ends.
 *
 * Under detrec --isolated --timeout S the trace ends where the timeout
 * stopped it; its replay stops at the same limit, and the events both runs
 * have are the same ones.
 *
 * Output: none.
 */
#include <pthread.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long count;

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		count++;
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	pthread_join(t[0], NULL);
	return 0;
}
