/*
 * tests/programs/two_locks.c - one pair of variables guarded by two
 * different locks: the writer keeps `x == y` under lock_a, moving x then y;
 * the checker reads them under lock_b, which excludes nothing (the bug).
 * When the checker looks between the writer's two stores (a data race
 * between det's events) it prints "BUG: ..." and aborts, with both threads
 * inside their critical sections.
 *
 * Timing, for the tests: the writer computes for a while after taking its
 * lock and before its first store, and the checker paces itself with a
 * sleep. A replay skips the sleep and lets the checker look as soon as its
 * turn comes, right after the writer's lock: before the first store. So a
 * default-mode replay of a failing run nearly always takes another way,
 * which det must explain.
 *
 * Usage: two_locks [CHECKS]   (default 2000)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER; /* the writer's */
static pthread_mutex_t lock_b = PTHREAD_MUTEX_INITIALIZER; /* the checker's: should be lock_a */
static volatile long x, y;
static volatile int done;
static long checks = 2000;

static void compute(long n)
{
	for (volatile long k = 0; k < n; k++)
		;
}

static void *writer(void *arg)
{
	(void)arg;
	while (!done) {
		pthread_mutex_lock(&lock_a);
		compute(400000);
		x = x + 1;
		compute(400000);
		y = y + 1;
		pthread_mutex_unlock(&lock_a);
	}
	return NULL;
}

static void *checker(void *arg)
{
	(void)arg;
	for (long i = 0; i < checks; i++) {
		pthread_mutex_lock(&lock_b);
		/* x again after y: if x did not move, the writer was between its
		 * stores when y was read (inside lock_a); a checker preempted
		 * between two plain reads could see the writer's old x and its
		 * new y after it had left (a failure with the writer outside) */
		long x0 = x, y0 = y, x1 = x;
		if (x0 == x1 && x0 != y0) {
			fprintf(stderr, "BUG: x %ld != y %ld at check %ld\n", x0, y0, i);
			abort();
		}
		pthread_mutex_unlock(&lock_b);
		usleep(200);
	}
	done = 1;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		checks = atol(argv[1]);
	pthread_t w, c;
	pthread_create(&w, NULL, writer, NULL);
	pthread_create(&c, NULL, checker, NULL);
	pthread_join(c, NULL);
	pthread_join(w, NULL);
	printf("ok: x == y == %ld\n", x);
	return 0;
}
