/* tests/programs/either_first.c - a failure no single swap undoes: two
 * workers each sign two registers, `first_lock`'s and `second_lock`'s,
 * in that order; the run fails (exit 1) when worker 1 signed either
 * register first. A failing run where worker 1 was first at both stays
 * failing when only one of the two orders is swapped; it passes only with
 * both. For detdiff --bisect: no single pair flips it.
 *
 * Usage: either_first */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t first_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t second_lock = PTHREAD_MUTEX_INITIALIZER;
static long first_signer, second_signer;

static void sign(pthread_mutex_t *m, long *signer, long me)
{
	pthread_mutex_lock(m);
	if (*signer == 0)
		*signer = me;
	pthread_mutex_unlock(m);
}

static void *worker(void *arg)
{
	long me = (long)arg;
	sign(&first_lock, &first_signer, me);
	sign(&second_lock, &second_signer, me);
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i + 1));
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (first_signer == 1 || second_signer == 1) {
		printf("BUG: worker 1 signed first (%ld, %ld)\n", first_signer, second_signer);
		return 1;
	}
	printf("ok: worker 2 signed both first\n");
	return 0;
}
