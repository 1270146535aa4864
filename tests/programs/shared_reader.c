/*
 * tests/programs/shared_reader.c - threads that take lines in turns from
 * one FILE, as a worker pool reading one input does: argv[2] threads
 * (default 3) call fgets on the FILE of argv[1], which stdio's lock makes
 * safe, with some work per line, so which thread gets which line depends
 * on the run. Prints each thread's line count and sum, then the total.
 * Usage: shared_reader FILE [THREADS]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_THREADS 8

static FILE *in;

struct share {
	long lines, sum;
};

static void *take_lines(void *arg)
{
	struct share *s = arg;
	char line[64];
	while (fgets(line, sizeof(line), in)) {
		s->lines++;
		s->sum += atol(line);
		for (volatile int k = 0; k < 3000; k++)
			;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	int n = argc > 2 ? atoi(argv[2]) : 3;
	if (n < 1 || n > MAX_THREADS)
		return 2;
	in = fopen(argv[1], "r");
	if (!in)
		return 3;
	setvbuf(in, NULL, _IOFBF, 256); /* (many refills: each a read of det's) */
	struct share s[MAX_THREADS] = {{0, 0}};
	pthread_t t[MAX_THREADS];
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, take_lines, &s[i]);
	long total = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		printf("T%d %ld lines sum %ld\n", i + 1, s[i].lines, s[i].sum);
		total += s[i].sum;
	}
	printf("total %ld\n", total);
	return 0;
}
