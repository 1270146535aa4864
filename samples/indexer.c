/*
 * indexer - the IRS thesis' "Indexer" benchmark (after Flanagan and
 * Godefroid): 15 threads insert 4 messages each into a 128-entry hash table
 * with open addressing. Here a slot is claimed by "compare-and-lock":
 * check the slot under its lock, and if it is free, take the lock again to
 * fill it.
 *
 * The bug: the check and the fill are two critical sections. Two threads
 * whose messages hash to the same slot can both find it free, and the
 * second fill overwrites the first message.
 *
 * The interleaving that triggers it (messages w1, w2 with hash(w1) ==
 * hash(w2) == h):
 *     T1: lock(h); table[h] == 0; unlock(h)
 *     T2: lock(h); table[h] == 0; unlock(h)
 *     T1: lock(h); table[h] = w1; unlock(h)
 *     T2: lock(h); table[h] = w2; unlock(h)     -> w1 is lost
 *
 * Output: "ok: 60 messages indexed" in most runs, "BUG: message W was
 * lost" in some. A trace of a failing run replays with the same lost
 * message every time.
 *
 * Usage: indexer [ROUNDS]
 */
#include <pthread.h>

#include "sample.h"

#define SIZE 128
#define MAX 4
#define THREADS 15

static pthread_mutex_t slot_lock[SIZE];
static long table[SIZE];

static long hash(long w)
{
	return (w * 7) % SIZE;
}

static int try_claim(long h, long w)
{
	pthread_mutex_lock(&slot_lock[h]);
	int free_slot = table[h] == 0;
	pthread_mutex_unlock(&slot_lock[h]);
	if (!free_slot)
		return 0;
	spin(3000);
	pthread_mutex_lock(&slot_lock[h]);
	table[h] = w; /* BUG: the slot may have been taken since the check */
	pthread_mutex_unlock(&slot_lock[h]);
	return 1;
}

static void *indexer(void *arg)
{
	long tid = (long)arg;
	for (long m = 1; m <= MAX; m++) {
		long w = m * 11 + tid;
		long h = hash(w);
		while (!try_claim(h, w))
			h = (h + 1) % SIZE;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long rounds = arg_long(argc, argv, 1, 5);
	for (int i = 0; i < SIZE; i++)
		pthread_mutex_init(&slot_lock[i], NULL);
	for (long r = 0; r < rounds; r++) {
		pthread_t t[THREADS];
		for (int i = 0; i < SIZE; i++)
			table[i] = 0;
		for (long i = 0; i < THREADS; i++)
			pthread_create(&t[i], NULL, indexer, (void *)i);
		for (int i = 0; i < THREADS; i++)
			pthread_join(t[i], NULL);
		/* every message must be in the table as often as it was sent
		 * (threads t and t+11 send some equal messages) */
		for (long tid = 0; tid < THREADS; tid++)
			for (long m = 1; m <= MAX; m++) {
				long w = m * 11 + tid, sent = 0, found = 0;
				for (long t2 = 0; t2 < THREADS; t2++)
					for (long m2 = 1; m2 <= MAX; m2++)
						sent += m2 * 11 + t2 == w;
				for (int i = 0; i < SIZE; i++)
					found += table[i] == w;
				if (found != sent)
					BUG("message %ld was lost in round %ld (sent %ld times, indexed %ld)", w, r,
					    sent, found);
			}
	}
	printf("ok: %d messages indexed in each of %ld rounds\n", THREADS * MAX, rounds);
	return 0;
}
