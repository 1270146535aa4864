/* tests/programs/first_last.c - main creates three workers that each note
 * their number in a shared order under a lock. Fails (exit 1) when the
 * worker created first ran last: a bug of depth 1 for PCT, found when that
 * worker's random priority is below main's and the other workers' (1 in 4
 * runs on average). */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int order[3], pos;

static void *worker(void *arg)
{
	pthread_mutex_lock(&m);
	order[pos++] = (int)(long)arg;
	pthread_mutex_unlock(&m);
	return NULL;
}

int main(void)
{
	pthread_t t[3];
	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i + 1));
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("order %d %d %d\n", order[0], order[1], order[2]);
	if (order[2] == 1) {
		printf("BUG: the first worker ran last\n");
		return 1;
	}
	return 0;
}
