/* tests/programs/publish_late.c - use before publication, after noise: a
 * reader and a publisher each take a noise lock many times (so that two
 * runs order many events differently); then the publisher sets `config`
 * under `box_lock` and the reader reads it under the same lock. When the
 * reader's read runs before the publisher's write, it finds NULL: "BUG:
 * read before publish" and exit 1. For detdiff --bisect: the pair is the
 * reader's read and the publisher's write.
 *
 * Usage: publish_late [NOISE]   (default 200 noise sections per thread) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t box_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t noise_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *config;
static long noise_rounds = 200, noise;
static int failed;

static void make_noise(void)
{
	for (long i = 0; i < noise_rounds; i++) {
		pthread_mutex_lock(&noise_lock);
		noise++;
		pthread_mutex_unlock(&noise_lock);
	}
}

static void publish(void)
{
	pthread_mutex_lock(&box_lock);
	config = "verbose";
	pthread_mutex_unlock(&box_lock);
}

static void read_config(void)
{
	pthread_mutex_lock(&box_lock);
	failed = config == NULL;
	pthread_mutex_unlock(&box_lock);
}

static void *publisher(void *arg)
{
	(void)arg;
	make_noise();
	publish();
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	make_noise();
	read_config();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		noise_rounds = atol(argv[1]);
	pthread_t p, r;
	pthread_create(&p, NULL, publisher, NULL);
	pthread_create(&r, NULL, reader, NULL);
	pthread_join(p, NULL);
	pthread_join(r, NULL);
	if (failed) {
		printf("BUG: read before publish\n");
		return 1;
	}
	printf("ok: %s\n", config);
	return 0;
}
