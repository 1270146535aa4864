/*
 * tests/programs/thread_churn.c - main starts N threads (argv[1]) at once;
 * each takes a lock, adds its number to a sum and exits; main joins them
 * all at the end and prints the sum and the order the threads came in
 * (a function of the schedule). More threads are alive at once than
 * detrec's --rings in the tests: later ones wait for the rings of exited
 * ones.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long sum, order_hash;

static void *work(void *arg)
{
	long i = (long)arg;
	pthread_mutex_lock(&m);
	sum += i;
	order_hash = order_hash * 31 + i;
	pthread_mutex_unlock(&m);
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 32;
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	if (!t)
		return 1;
	for (long i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, work, (void *)i) != 0)
			return 1;
	for (long i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("%ld %ld\n", sum, order_hash);
	free(t);
	return 0;
}
