/*
 * tests/programs/cancel_elsewhere.c - pthread_cancel of a thread that acts
 * on it at a cancellation point det does not wrap (fsync). By default the
 * thread also counts its rounds under a lock, so it calls into det right
 * after each such point; with the argument "quiet" it makes no call into det
 * at all once it loops; with "async" it makes none and spins, its
 * cancellation type asynchronous, so the request acts at once wherever it is.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int started, quiet, async_spin, fds[2];
static long rounds;

static void *worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&m);
	started = 1;
	pthread_cond_signal(&c);
	pthread_mutex_unlock(&m);
	if (async_spin) {
		pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
		for (volatile unsigned long spins = 0;; spins++)
			;
	}
	for (;;) {
		fsync(fds[1]); /* a cancellation point (EINVAL on a pipe) */
		if (!quiet) {
			pthread_mutex_lock(&m);
			rounds++;
			pthread_mutex_unlock(&m);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	quiet = argc > 1 && strcmp(argv[1], "quiet") == 0;
	async_spin = argc > 1 && strcmp(argv[1], "async") == 0;
	if (pipe(fds) != 0)
		return 1;
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	pthread_mutex_lock(&m);
	while (!started)
		pthread_cond_wait(&c, &m);
	pthread_mutex_unlock(&m);
	usleep(20000);
	pthread_cancel(t);
	void *ret;
	pthread_join(t, &ret);
	printf("canceled %d after %s rounds\n", ret == PTHREAD_CANCELED, rounds > 0 ? "some" : "no");
	return 0;
}
