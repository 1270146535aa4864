/* tests/programs/strict_crash_after.c - a thread dies of a plain NULL
 * write in code after its last event, and the other thread's events
 * happened between that event and the crash. The worker's last event wakes
 * main (in strict mode the turn goes to main there); main prints, takes the
 * cell away (a data race: no lock) and waits for the worker, which, back in
 * its turn, writes through the NULL pointer. With argv[1] = "abort", it
 * asserts first instead. (Natively the worker usually writes first.) */
#include <assert.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int cell;
static int *volatile slot = &cell;
static int use_assert;
static sem_t started;

static void *worker(void *arg)
{
	(void)arg;
	sem_post(&started);
	if (use_assert)
		assert(slot != NULL);
	*slot = 1;
	return NULL;
}

int main(int argc, char **argv)
{
	use_assert = argc > 1 && strcmp(argv[1], "abort") == 0;
	sem_init(&started, 0, 0);
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	sem_wait(&started);
	for (int i = 0; i < 5; i++) {
		char line[32];
		int n = snprintf(line, sizeof(line), "main %d\n", i);
		write(1, line, (size_t)n);
	}
	slot = NULL;
	write(1, "cell gone\n", 10);
	pthread_join(t, NULL);
	printf("the worker wrote first\n");
	return 0;
}
