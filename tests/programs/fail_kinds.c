/* tests/programs/fail_kinds.c - three workers race to be first under a
 * lock; how the program ends depends on who won: worker 1 fails an
 * assertion, worker 2 exits with status 3, worker 3 passes. With
 * FAIL_ONCE=PATH set, the first run (PATH does not exist yet) exits 4
 * and creates PATH, whoever won. */
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
	if (once && access(once, F_OK) != 0) {
		int fd = open(once, O_CREAT | O_WRONLY, 0600);
		if (fd >= 0)
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
