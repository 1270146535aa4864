/* tests/programs/detcheck_spin.c - two threads count under a spin lock made
 * of gcc's __atomic builtins (xchg with memory to take it, a lock-prefixed
 * add for a statistic), not pthread's: det sees none of it unless the
 * program is built with det-cc. detcheck must find each atomic on the line
 * marked "atomic here" (tests/e2e/test_detcheck.py); the release store that
 * gives the lock back is a plain mov, which no reading of the binary can
 * tell from any other. The Makefile also builds it with det-cc as
 * detcheck_spin.detcc. Prints the count, 200000. */
#include <pthread.h>
#include <stdio.h>

static int lock_word;
static long counter, spins;

static void take(void)
{
	while (__atomic_exchange_n(&lock_word, 1, __ATOMIC_ACQUIRE)) /* atomic here */
		__atomic_fetch_add(&spins, 1, __ATOMIC_RELAXED); /* atomic here */
}

static void give(void)
{
	__atomic_store_n(&lock_word, 0, __ATOMIC_RELEASE);
}

static void *work(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100000; i++) {
		take();
		counter++;
		give();
	}
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, work, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("%ld\n", counter);
	return 0;
}
