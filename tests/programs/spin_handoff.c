/* tests/programs/spin_handoff.c - main busy-waits on a plain flag that
 * another thread sets after its own events, then takes a lock. An order
 * that puts main's lock before the setter's first event is valid by every
 * kind's rules (nothing joins or waits early), yet no run can follow it:
 * main cannot reach its lock until the setter has run. Bisection's stall
 * test replays such an order. */
#include <pthread.h>
#include <stdio.h>

static volatile int flag;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t after = PTHREAD_MUTEX_INITIALIZER;

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
	while (!flag)
		;
	pthread_mutex_lock(&after);
	pthread_mutex_unlock(&after);
	pthread_join(t, NULL);
	printf("flag seen\n");
	return 0;
}
