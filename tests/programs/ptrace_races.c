/*
 * tests/programs/ptrace_races.c - built with -static (Makefile): threads
 * whose interplay goes through the kernel, for detrec --ptrace's
 * serialization (tests/e2e/test_ptrace.py), where timing must not show:
 *  - joins: 30 times a thread is created and joined at once; whether the
 *    join waits (futex) or finds the thread gone depends on when the
 *    kernel cleared its tid word, at the end of its exit;
 *  - writes: two threads write their lines with raw write(2) calls (no
 *    stdio lock between them), each with a racy shared counter: the output
 *    is the order in which their writes reached the pipe.
 *
 * Rules: output is the only thing the test compares; its thread order
 * changes from run to run natively (under load at least).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile int shared; /* racy on purpose */

static void *quick(void *arg)
{
	shared += (int)(long)arg;
	return NULL;
}

static void *writer(void *arg)
{
	char line[64];
	for (int i = 0; i < 20; i++) {
		int n = snprintf(line, sizeof line, "%s %d shared %d\n", (const char *)arg, i, shared++);
		if (write(1, line, (size_t)n) != n)
			return (void *)1;
	}
	return NULL;
}

int main(void)
{
	for (long i = 0; i < 30; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, quick, (void *)i) != 0 || pthread_join(t, NULL) != 0)
			return 2;
	}
	printf("joined shared %d\n", shared);
	fflush(stdout);
	pthread_t a, b;
	if (pthread_create(&a, NULL, writer, "A") != 0 || pthread_create(&b, NULL, writer, "B") != 0)
		return 2;
	void *ra, *rb;
	pthread_join(a, &ra);
	pthread_join(b, &rb);
	return ra || rb ? 3 : 0;
}
