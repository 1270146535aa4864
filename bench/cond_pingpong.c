/*
 * bench/cond_pingpong.c - the green-threads report's benchmark 2: two
 * threads strictly alternate ROUNDS times through a flag, a mutex and a
 * condition variable (every hand-off sleeps in the kernel).
 * Usage: cond_pingpong [ROUNDS]   (default 100000)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int flag;
static long rounds;

static void *player(void *arg)
{
	int id = (int)(long)arg;
	for (long i = 0; i < rounds; i++) {
		pthread_mutex_lock(&lock);
		while (flag != id)
			pthread_cond_wait(&cond, &lock);
		flag = (id + 1) % 2;
		pthread_cond_signal(&cond);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	rounds = argc > 1 ? atol(argv[1]) : 100000;
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, player, (void *)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("%ld hand-offs\n", 2 * rounds);
	return 0;
}
