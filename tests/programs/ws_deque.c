/*
 * ws_deque - a work-stealing deque (Chase and Lev's, on a fixed array)
 * with a bug of the kind public suites of such queues hold: a thief claims
 * the slot it read with fetch_add on top instead of a compare-exchange, so
 * two thieves that read the same top both take its item (and top skips
 * one). The synchronization is __atomic builtins built by plain gcc: lock
 * xadd for a steal's claim, lock cmpxchg for the owner's last element,
 * xchg for seq_cst stores, plain loads; only detrec's patched atomics make
 * any of it an event that PCT can schedule around (a thief's claim is the
 * point where another thief must run).
 *
 * The owner pushes ITEMS items, taking one back now and then, then takes
 * the rest until the deque is empty; two thieves steal until it is and the
 * owner is done. Exit 1 (and a line) when an item was taken twice or not
 * at all. Usage: ws_deque [ITEMS]   (default 40)
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#define CAP 1024

static long top, bottom; /* steal from top, push and take at bottom */
static int buf[CAP];
static int items = 40;
static int *taken; /* how many times each item was taken */

static void push(int x)
{
	long b = __atomic_load_n(&bottom, __ATOMIC_RELAXED);
	buf[b % CAP] = x;
	__atomic_store_n(&bottom, b + 1, __ATOMIC_SEQ_CST); /* xchg */
}

/* The owner's take: -1 when empty. */
static int take(void)
{
	long b = __atomic_load_n(&bottom, __ATOMIC_RELAXED) - 1;
	__atomic_store_n(&bottom, b, __ATOMIC_SEQ_CST); /* xchg */
	long t = __atomic_load_n(&top, __ATOMIC_SEQ_CST);
	if (t > b) {
		__atomic_store_n(&bottom, b + 1, __ATOMIC_RELAXED);
		return -1;
	}
	int x = buf[b % CAP];
	if (t == b) { /* the last one: race the thieves for it */
		if (!__atomic_compare_exchange_n(&top, &t, t + 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			x = -1;
		__atomic_store_n(&bottom, b + 1, __ATOMIC_RELAXED);
	}
	return x;
}

/* A thief's steal: -1 when empty or when it lost the race. */
static int steal(void)
{
	long t = __atomic_load_n(&top, __ATOMIC_ACQUIRE);
	long b = __atomic_load_n(&bottom, __ATOMIC_ACQUIRE);
	if (t >= b)
		return -1;
	int x = buf[t % CAP];
	/* The bug: Chase-Lev compare-exchanges top from t to t+1 here, and
	 * gives up if another took it meanwhile. */
	__atomic_fetch_add(&top, 1, __ATOMIC_SEQ_CST);
	return x;
}

static int finished; /* the owner has taken all it could */

static void got(int x)
{
	__atomic_fetch_add(&taken[x], 1, __ATOMIC_RELAXED);
}

static void *thief(void *arg)
{
	(void)arg;
	for (;;) {
		int x = steal();
		if (x >= 0) {
			got(x);
			continue;
		}
		if (__atomic_load_n(&finished, __ATOMIC_SEQ_CST))
			return NULL;
		sched_yield(); /* (backing off, as work-stealing runtimes do) */
	}
}

int main(int argc, char **argv)
{
	if (argc > 1)
		items = atoi(argv[1]);
	if (items < 1 || items > CAP)
		return 2;
	taken = calloc((size_t)items, sizeof(*taken));
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, thief, NULL);
	for (int i = 0; i < items; i++) {
		push(i);
		if (i % 4 == 3) {
			int x = take();
			if (x >= 0)
				got(x);
		}
	}
	for (int x; (x = take()) >= 0;) /* the rest, until the deque is empty */
		got(x);
	__atomic_store_n(&finished, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < items; i++) {
		if (taken[i] != 1) {
			printf("item %d taken %d times\n", i, taken[i]);
			return 1;
		}
	}
	printf("%d items, each taken once\n", items);
	return 0;
}
