/* tests/programs/fail_kinds.c - three workers race to be first under a
 * lock; how the program ends depends on who won: worker 1 fails an
 * assertion, worker 2 exits with status 3, worker 3 passes. With
 * FAIL_ONCE=PATH set, the first run (the one that creates PATH) exits 4,
 * whoever won. */
#include <assert.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int winner;

static void *worker(void *arg)
{
	pthread_mutex_lock(&m);
	if (!winner)
		winner = (int)(long)arg;
	pthread_mutex_unlock(&m);
	return NULL;
}

int main(void)
{
	const char *once = getenv("FAIL_ONCE");
	int fd = once ? open(once, O_CREAT | O_EXCL | O_WRONLY, 0600) : -1;
	if (fd >= 0) { /* (O_EXCL: of two runs at once, exactly one makes it) */
		close(fd);
		printf("first run: failing once\n");
		return 4;
	}
	pthread_t t[3];
	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i + 1));
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("winner %d\n", winner);
	assert(winner != 1);
	return winner == 2 ? 3 : 0;
}
