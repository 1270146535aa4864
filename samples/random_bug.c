/*
 * random_bug - a randomness-dependent bug: two threads place items in a
 * small open-addressing table at random start positions (getrandom), and
 * the insert skips the wrap-around at the end of the table.
 *
 * The bug: insert() probes from a random slot towards the end but never
 * wraps to slot 0, so when every slot after the start is taken the item is
 * dropped. Whether that happens depends on the random start positions and
 * on which thread fills which slot first.
 *
 * The input / interleaving that triggers it: random starts near the end of
 * a nearly full table (the bytes from getrandom are in the trace).
 *
 * Output: "ok: all N items stored" natively in most runs, "BUG: item K was
 * dropped" in some. A trace of a failing run replays with the same random
 * bytes and the same interleaving, so the same item is dropped.
 *
 * Usage: random_bug [ROUNDS]
 */
#include <pthread.h>
#include <sys/random.h>

#include "sample.h"

#define SIZE 64
#define ITEMS 28

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int table[SIZE];

static int insert(int item)
{
	unsigned char r;
	if (getrandom(&r, 1, 0) != 1)
		return 0;
	pthread_mutex_lock(&lock);
	for (int i = r % SIZE; i < SIZE; i++) /* BUG: no wrap-around */
		if (!table[i]) {
			table[i] = item;
			pthread_mutex_unlock(&lock);
			return 1;
		}
	pthread_mutex_unlock(&lock);
	return 0;
}

static void *filler(void *arg)
{
	long first = (long)arg;
	for (int item = (int)first; item <= ITEMS; item += 2)
		if (!insert(item))
			BUG("item %d was dropped", item);
	return NULL;
}

int main(int argc, char **argv)
{
	long rounds = arg_long(argc, argv, 1, 1);
	for (long r = 0; r < rounds; r++) {
		for (int i = 0; i < SIZE; i++)
			table[i] = 0;
		pthread_t t[2];
		for (long i = 0; i < 2; i++)
			pthread_create(&t[i], NULL, filler, (void *)(i + 1));
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
	}
	printf("ok: all %d items stored in each of %ld rounds\n", ITEMS, rounds);
	return 0;
}
