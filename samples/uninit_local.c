/*
 * uninit_local - producer/consumer whose consumer reads a local it never set.
 *
 * The bug: `note()` declares a scratch array for the items it has seen and
 * sums it without ever writing it (the loop that should fill it was
 * deleted). What it reads is whatever the calls before it left on the
 * stack: here, pthread_cond_wait and pthread_mutex_unlock, just returned.
 * Natively the value changes from run to run and build to build; it is the
 * kind of heisenbug an uninitialised read makes.
 *
 * The interleaving that triggers it: any. The value depends on what ran
 * below the consumer's stack pointer last, which depends on the schedule
 * (whether the consumer waited, and for how long) and, under a debugger
 * or recorder, on that tool's own code. Under det, det's work runs on its
 * own stack, so a replay reads exactly the bytes the recording read.
 *
 * Built with -z now (the Makefile): with lazy binding, which thread first
 * calls pthread_cond_wait through the program's PLT (and so leaves the
 * loader's resolver frames on its own stack) is a race of its own, outside
 * any synchronization, that no replay of the synchronization order fixes.
 *
 * Output: "consumed N items, checksum C, leftover L" where L is the sum of
 * the bytes found; it never prints BUG (the read is the bug), and a replay
 * prints the recording's line, L included.
 *
 * Usage: uninit_local [ITEMS]
 */
#include <pthread.h>
#include <stdint.h>

#include "sample.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static long mailbox; /* 0: empty; -1: no more items */
static long items;

/* The compiler sees the bug too; it stays, for det to reproduce. */
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
static __attribute__((noinline)) long note(long item)
{
	volatile long seen[48]; /* BUG: never filled in */
	long sum = item;
	for (int i = 0; i < 48; i++)
		sum += seen[i] & 0xffff;
	return sum;
}

/* One item at a time through a one-slot mailbox. */
static void *producer(void *arg)
{
	(void)arg;
	for (long i = 1; i <= items + 1; i++) {
		pthread_mutex_lock(&lock);
		while (mailbox != 0)
			pthread_cond_wait(&changed, &lock);
		mailbox = i <= items ? i : -1;
		pthread_cond_broadcast(&changed);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	items = arg_long(argc, argv, 1, 2000);
	pthread_t p;
	pthread_create(&p, NULL, producer, NULL);
	long consumed = 0, checksum = 0, leftover = 0;
	for (long v = 0; v >= 0;) {
		pthread_mutex_lock(&lock);
		while (mailbox == 0)
			pthread_cond_wait(&changed, &lock);
		v = mailbox;
		if (v > 0)
			mailbox = 0;
		pthread_cond_broadcast(&changed);
		pthread_mutex_unlock(&lock);
		if (v > 0) {
			consumed++;
			checksum += v;
			leftover += note(v) - v;
		}
	}
	pthread_join(p, NULL);
	printf("consumed %ld items, checksum %ld, leftover %ld\n", consumed, checksum, leftover);
	return 0;
}
