/*
 * bank_check_then_act - an atomicity violation across two critical sections.
 *
 * The bug: withdraw() checks the balance under the account lock, releases
 * it, then takes the lock again to subtract. Each critical section is
 * correct; together they are not atomic.
 *
 * The interleaving that triggers it: with one unit left,
 *     T1: lock, balance >= 1, unlock      T2: lock, balance >= 1, unlock
 *     T1: lock, balance -= 1, unlock      T2: lock, balance -= 1, unlock
 * and the balance ends at -1.
 *
 * Output: natively, "ok: N rounds, every account emptied exactly" in most
 * runs and "BUG: account went negative (-1) in round R" in some (a few per
 * hundred runs at the default 50 rounds on 2 cores). A trace of a failing
 * run replays with the same BUG line every time.
 *
 * Usage: bank_check_then_act [ROUNDS] [BALANCE]
 */
#include <pthread.h>

#include "sample.h"

static pthread_mutex_t account = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t round_start;
static long balance;
static long rounds, initial;

static int withdraw(long amount)
{
	pthread_mutex_lock(&account);
	int enough = balance >= amount;
	pthread_mutex_unlock(&account);
	if (!enough)
		return 0;
	spin(100); /* e.g. logging the request */
	pthread_mutex_lock(&account);
	balance -= amount;
	pthread_mutex_unlock(&account);
	return 1;
}

static void *customer(void *arg)
{
	(void)arg;
	for (long r = 0; r < rounds; r++) {
		pthread_barrier_wait(&round_start);
		while (withdraw(1))
			;
		pthread_barrier_wait(&round_start);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	rounds = arg_long(argc, argv, 1, 50);
	initial = arg_long(argc, argv, 2, 20);
	pthread_t t[2];
	pthread_barrier_init(&round_start, NULL, 3);
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, customer, NULL);
	for (long r = 0; r < rounds; r++) {
		pthread_mutex_lock(&account);
		balance = initial;
		pthread_mutex_unlock(&account);
		pthread_barrier_wait(&round_start); /* go */
		pthread_barrier_wait(&round_start); /* both customers done */
		pthread_mutex_lock(&account);
		long left = balance;
		pthread_mutex_unlock(&account);
		if (left != 0)
			BUG("account went negative (%ld) in round %ld", left, r);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("ok: %ld rounds, every account emptied exactly\n", rounds);
	return 0;
}
