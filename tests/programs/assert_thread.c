/*
 * tests/programs/assert_thread.c - an assertion fails in a worker while
 * main waits to join it: every run aborts in T1 at the line marked ASSERT,
 * with main blocked in pthread_join (which is no deadlock).
 */
#include <assert.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long balance = 100;

static void *withdraw(void *arg)
{
	long amount = *(long *)arg;
	pthread_mutex_lock(&lock);
	balance -= amount;
	pthread_mutex_unlock(&lock);
	assert(balance >= 0 && "overdrawn"); /* ASSERT */
	return NULL;
}

int main(void)
{
	long amount = 150;
	pthread_t t;
	pthread_create(&t, NULL, withdraw, &amount);
	pthread_join(t, NULL);
	printf("balance %ld\n", balance);
	return 0;
}
