/*
 * tests/programs/rand_threads.c - threads that draw from libc's shared
 * generators, as test programs that pick random work do: argv[1] threads
 * (default 3) each draw argv[2] numbers (default 100000) from rand(), and
 * every tenth from lrand48() and drand48(), with some work between draws.
 * libc's own lock decides which thread gets which number. Prints each
 * thread's sums, then the totals (the same in every run). THREADS 0: main
 * draws alone, with no thread made.
 * Usage: rand_threads [THREADS] [DRAWS]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_THREADS 8

static long draws;

struct sums {
	long rand_sum, lrand_sum;
	double drand_sum;
};

static void *draw(void *arg)
{
	struct sums *s = arg;
	for (long i = 0; i < draws; i++) {
		s->rand_sum += rand() % 1000;
		if (i % 10 == 0) {
			s->lrand_sum += lrand48() % 1000;
			s->drand_sum += drand48();
		}
		for (volatile int k = 0; k < 40; k++)
			;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3;
	draws = argc > 2 ? atol(argv[2]) : 100000;
	if (n < 0 || n > MAX_THREADS)
		return 2;
	srand(7);
	srand48(7);
	struct sums s[MAX_THREADS] = {{0, 0, 0}};
	pthread_t t[MAX_THREADS];
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, draw, &s[i]);
	if (n == 0) {
		draw(&s[0]);
		printf("main rand %ld lrand48 %ld drand48 %.6f\n", s[0].rand_sum, s[0].lrand_sum, s[0].drand_sum);
		return 0;
	}
	long total = 0, ltotal = 0;
	double dtotal = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		printf("T%d rand %ld lrand48 %ld drand48 %.6f\n", i + 1, s[i].rand_sum, s[i].lrand_sum, s[i].drand_sum);
		total += s[i].rand_sum;
		ltotal += s[i].lrand_sum;
		dtotal += s[i].drand_sum;
	}
	printf("total %ld %ld %.3f\n", total, ltotal, dtotal);
	return 0;
}
