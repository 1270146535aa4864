/*
 * lock_order_inversion - the classic two-lock deadlock.
 *
 * The bug: transfer(a, b) locks a then b; the other thread transfers the
 * other way and locks b then a.
 *
 * The interleaving that triggers it:
 *     T1: lock(A)            T2: lock(B)
 *     T1: lock(B) blocks     T2: lock(A) blocks      -> deadlock
 *
 * Output: natively the program either prints "ok: N transfers each way" or
 * hangs (record it with `detrec --timeout 5`: the trace names the cycle,
 * "T1 holds mutex A and waits for mutex B; T2 holds B and waits for A").
 * A trace of a hanging run replays into the same deadlock every time.
 *
 * Usage: lock_order_inversion [TRANSFERS]
 */
#include <pthread.h>

#include "sample.h"

struct account {
	pthread_mutex_t lock;
	long balance;
};

static struct account a = {PTHREAD_MUTEX_INITIALIZER, 1000}, b = {PTHREAD_MUTEX_INITIALIZER, 1000};
static long transfers;

static void transfer(struct account *from, struct account *to, long amount)
{
	pthread_mutex_lock(&from->lock);
	spin(20);
	pthread_mutex_lock(&to->lock);
	from->balance -= amount;
	to->balance += amount;
	pthread_mutex_unlock(&to->lock);
	pthread_mutex_unlock(&from->lock);
}

static void *a_to_b(void *arg)
{
	(void)arg;
	for (long i = 0; i < transfers; i++)
		transfer(&a, &b, 1);
	return NULL;
}

static void *b_to_a(void *arg)
{
	(void)arg;
	for (long i = 0; i < transfers; i++)
		transfer(&b, &a, 1);
	return NULL;
}

int main(int argc, char **argv)
{
	transfers = arg_long(argc, argv, 1, 300);
	pthread_t t1, t2;
	pthread_create(&t1, NULL, a_to_b, NULL);
	pthread_create(&t2, NULL, b_to_a, NULL);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	if (a.balance + b.balance != 2000)
		BUG("money appeared or vanished: %ld", a.balance + b.balance);
	printf("ok: %ld transfers each way\n", transfers);
	return 0;
}
