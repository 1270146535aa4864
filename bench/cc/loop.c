/*
 * bench/cc/loop.c - compute-bound kernels for det-cc's cost (bench/llvm.py
 * builds this with clang-22 and with det-cc, and times them side by side).
 *   hash N    FNV-1a over a 1 MB buffer, N passes: a tight loop, one tick per byte
 *   matmul N  N x N double matrix product (i-k-j order, vectorizable)
 *   fib N     naive recursive Fibonacci: a tick at every call
 * Prints a checksum, so that the work cannot be optimized away.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash(long passes)
{
	static unsigned char buf[1 << 20];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 2654435761u >> 13);
	uint64_t h = 1469598103934665603ull;
	for (long p = 0; p < passes; p++)
		for (size_t i = 0; i < sizeof(buf); i++)
			h = (h ^ buf[i]) * 1099511628211ull;
	return h;
}

static uint64_t matmul(long n)
{
	double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n);
	double *c = calloc((size_t)(n * n), sizeof(double));
	for (long i = 0; i < n * n; i++) {
		a[i] = (double)(i % 7) + 0.5;
		b[i] = (double)(i % 5) - 1.0;
	}
	for (long i = 0; i < n; i++)
		for (long k = 0; k < n; k++)
			for (long j = 0; j < n; j++)
				c[i * n + j] += a[i * n + k] * b[k * n + j];
	double s = 0;
	for (long i = 0; i < n * n; i++)
		s += c[i];
	free(a);
	free(b);
	free(c);
	return (uint64_t)s;
}

static long fib(long n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s hash|matmul|fib N\n", argv[0]);
		return 2;
	}
	long n = atol(argv[2]);
	uint64_t r;
	if (!strcmp(argv[1], "hash"))
		r = hash(n);
	else if (!strcmp(argv[1], "matmul"))
		r = matmul(n);
	else if (!strcmp(argv[1], "fib"))
		r = (uint64_t)fib(n);
	else
		return 2;
	printf("%s %ld: %llu\n", argv[1], n, (unsigned long long)r);
	return 0;
}
