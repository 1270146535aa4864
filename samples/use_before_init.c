/*
 * use_before_init - an order violation: a worker uses shared state that the
 * main thread initializes only after starting it.
 *
 * The bug: main() starts the logger thread, then builds the configuration
 * it needs. Both sides take the config lock, so there is no data race: only
 * the order of the two critical sections decides.
 *
 * The interleaving that triggers it:
 *     T0: create(T1) ... (still busy)     T1: lock, config == NULL -> BUG
 *     T0: lock, config = &cfg, unlock
 *
 * Output: "ok: logged N lines to stdout" natively in most runs, and
 * "BUG: logger started before its configuration existed" in some (about one
 * run in ten on 2 cores). A trace of a failing run replays with the BUG
 * every time.
 *
 * Usage: use_before_init [LINES]
 */
#include <pthread.h>

#include "sample.h"

struct config {
	const char *prefix;
	long lines;
};

static pthread_mutex_t config_lock = PTHREAD_MUTEX_INITIALIZER;
static struct config *config;

static void *logger(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&config_lock);
	struct config *c = config;
	pthread_mutex_unlock(&config_lock);
	if (!c)
		BUG("logger started before its configuration existed");
	for (long i = 0; i < c->lines; i++)
		printf("%s line %ld\n", c->prefix, i);
	return NULL;
}

int main(int argc, char **argv)
{
	static struct config cfg = {"log:", 0};
	cfg.lines = arg_long(argc, argv, 1, 3);
	pthread_t t;
	pthread_create(&t, NULL, logger, NULL);
	spin(8000); /* open the log file, parse options... */
	pthread_mutex_lock(&config_lock);
	config = &cfg;
	pthread_mutex_unlock(&config_lock);
	pthread_join(t, NULL);
	printf("ok: logged %ld lines to stdout\n", cfg.lines);
	return 0;
}
