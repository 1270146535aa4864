/*
 * tests/programs/stdio_inputs.c - a program that takes its inputs through
 * stdio, as most small tools do: 16 bytes of /dev/urandom with fread, the
 * first line of argv[1] with fgets, its lines with getline, numbers from
 * stdin with scanf, and /proc/uptime with fscanf; two threads read halves
 * of argv[1] through one FILE each. Prints all of it.
 * Usage: stdio_inputs FILE < numbers
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static const char *path;

static void *count_lines(void *arg)
{
	long *n = arg;
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	while (f && getline(&line, &cap, f) > 0)
		++*n;
	free(line);
	if (f)
		fclose(f);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	path = argv[1];
	unsigned char r[16];
	FILE *u = fopen("/dev/urandom", "r");
	if (!u || fread(r, 1, sizeof(r), u) != sizeof(r))
		return 3;
	fclose(u);
	printf("random ");
	for (size_t i = 0; i < sizeof(r); i++)
		printf("%02x", r[i]);
	char first[256] = "";
	FILE *f = fopen(path, "r");
	if (!f || !fgets(first, sizeof(first), f))
		return 4;
	fclose(f);
	printf("\nfirst %s", first);
	long a = 0, b = 0, sum = 0, x;
	pthread_t t1, t2;
	pthread_create(&t1, NULL, count_lines, &a);
	pthread_create(&t2, NULL, count_lines, &b);
	while (scanf("%ld", &x) == 1)
		sum += x;
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	double up = 0;
	FILE *s = fopen("/proc/uptime", "r");
	if (!s || fscanf(s, "%lf", &up) != 1)
		return 5;
	fclose(s);
	printf("lines %ld %ld sum %ld uptime %.2f\n", a, b, sum, up);
	return 0;
}
