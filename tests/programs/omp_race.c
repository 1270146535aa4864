/*
 * tests/programs/omp_race.c - an OpenMP program with data races (a loop
 * whose iterations depend on each other, a shared counter without a
 * reduction), a barrier, a critical section and an ordered loop: libgomp
 * waits for its team with futex calls of its own (an inline `syscall`),
 * which strict mode sees once detrec has them trapped.
 */
#include <omp.h>
#include <stdio.h>

static int a[1000];

int main(void)
{
	for (int i = 0; i < 1000; i++)
		a[i] = i;
#pragma omp parallel for num_threads(3)
	for (int i = 0; i < 999; i++)
		a[i + 1] = a[i] + 1; /* a race across the threads' chunks */
	long x = 0, crit = 0;
#pragma omp parallel num_threads(3)
	{
		for (int k = 0; k < 20000; k++)
			x++; /* a race: no reduction */
#pragma omp barrier
#pragma omp critical
		crit += omp_get_thread_num() + 1;
	}
	int order[12], n = 0;
#pragma omp parallel for ordered num_threads(3) schedule(dynamic)
	for (int i = 0; i < 12; i++) {
#pragma omp ordered
		order[n++] = i;
	}
	long sum = 0;
	for (int i = 0; i < 1000; i++)
		sum += a[i];
	printf("sum %ld x %ld crit %ld ordered %d..%d\n", sum, x, crit, order[0], order[11]);
	return crit == 6 && n == 12 ? 0 : 1;
}
