/* tests/programs/spin_wait.c - one thread busy-waits on a plain flag that
 * another sets: no event while it spins, so strict mode can only go on
 * through its watchdog. */
#include <pthread.h>
#include <stdio.h>

static volatile int flag;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void *setter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	flag = 1;
	return NULL;
}

int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, setter, NULL);
	while (!flag) /* no event: strict mode's turn never passes by itself */
		;
	pthread_join(t, NULL);
	printf("flag seen\n");
	return 0;
}
