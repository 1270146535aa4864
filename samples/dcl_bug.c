/*
 * dcl_bug - double-checked locking done wrong: the first thread to need
 * the shared configuration builds it under a lock, but publishes the
 * pointer before it fills the object in. Other threads check the pointer
 * without the lock and use the object at once.
 *
 * The bug: `config = c; c->limit = 64;` - the pointer is visible while
 * the object is still empty. A thread that sees the pointer in between
 * reads limit 0.
 *
 * The interleaving that triggers it: T1 stores `config`, T2 loads it
 * (not NULL) and reads `config->limit` before T1 stores the limit. There
 * is no call between T1's two stores, so a scheduler that switches only at
 * calls (strict mode over a plain build) can never get in there; built
 * with `det-cc --sched-points=memory` (samples/bin/dcl_bug.mem), strict
 * mode can switch before any shared access, and `detrec --chaos --strict`
 * finds the window.
 *
 * Output: "ok: R uses, all saw limit 64", or "BUG: a thread used the
 * configuration before it was filled in (limit 0)".
 *
 * Build: det-cc (Makefile), and det-cc --sched-points=memory (.mem).
 * Usage: dcl_bug [THREADS]
 */
#include <pthread.h>
#include <stdlib.h>

#include "sample.h"

struct config {
	volatile int limit;
};

static pthread_mutex_t config_lock = PTHREAD_MUTEX_INITIALIZER;
static struct config *volatile config;
static long uses;

static struct config *get_config(void)
{
	if (!config) { /* first check, without the lock */
		pthread_mutex_lock(&config_lock);
		if (!config) {
			struct config *c = calloc(1, sizeof(*c));
			config = c;    /* BUG: published ... */
			c->limit = 64; /* ... before it is filled in */
		}
		pthread_mutex_unlock(&config_lock);
	}
	return config;
}

static void *worker(void *arg)
{
	(void)arg;
	struct config *c = get_config();
	if (c->limit != 64)
		BUG("a thread used the configuration before it was filled in (limit %d)", c->limit);
	__atomic_fetch_add(&uses, 1, __ATOMIC_RELAXED);
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = arg_long(argc, argv, 1, 3);
	pthread_t t[16];
	if (threads > 16)
		threads = 16;
	for (long i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (long i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("ok: %ld uses, all saw limit 64\n", uses);
	return 0;
}
