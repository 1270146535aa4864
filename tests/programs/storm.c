/* tests/programs/storm.c - counts SIGUSR1s sent from outside while two
 * threads take a lock; prints "ready" first and how many signals each
 * thread handled at the end (a function of where they arrived). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long counter;
static _Atomic long seen, when_sum;
static __thread long mine; /* this thread's progress: no race with the handler */

static void on_usr1(int s)
{
	(void)s;
	seen++;
	when_sum += mine; /* where in the receiving thread's run it landed */
}

static void *work(void *arg)
{
	long n = (long)arg;
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&m);
		counter++;
		pthread_mutex_unlock(&m);
		mine++;
		if (i % 1000 == 0)
			usleep(100);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	signal(SIGUSR1, on_usr1);
	printf("ready\n");
	fflush(stdout);
	pthread_t t;
	pthread_create(&t, NULL, work, (void *)n);
	work((void *)n);
	pthread_join(t, NULL);
	printf("signals %ld at %ld counter %ld\n", (long)seen, (long)when_sum, counter);
	return 0;
}
