/*
 * wrapped_heap_lock - a heap-allocated queue whose mutex the program locks
 * only through its own one-line wrappers (static, so gcc -O2 inlines them),
 * as many programs do (pigz's possess/release): det's tools name the mutex
 * by the expression that reaches it (`q->mut`) and show each lock's site
 * as the wrapper's caller, not the wrapper.
 *
 * Two workers push ITEMS items each; main joins them, prints the count,
 * destroys the mutex, frees the queue and forgets it (q = NULL). With the
 * argument `late`, main then allocates a block of the queue's size (malloc
 * hands back the freed one) kept in the static `scratch`, and two threads,
 * given the old queue, lock its mutex (a use after free, as consumers
 * outliving their queue do), in either order: the tools say that mutex
 * was destroyed there before, and gdb does not name it as a part of
 * `scratch`'s block, whose type has no mutex. The mutex sits past the first
 * 16 bytes, which malloc reuses, so the late lock reads the destroyed mutex
 * (glibc: EINVAL) and never blocks.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITEMS 50

struct queue {
	long items;
	char pad[56];
	pthread_mutex_t mut;
};

static struct queue *q;
static char *scratch;

static void lock(pthread_mutex_t *m) { pthread_mutex_lock(m); }
static void unlock(pthread_mutex_t *m) { pthread_mutex_unlock(m); }

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < ITEMS; i++) {
		lock(&q->mut);
		q->items++;
		unlock(&q->mut);
	}
	return NULL;
}

static void *late(void *arg)
{
	struct queue *old = arg;
	lock(&old->mut);
	unlock(&old->mut);
	return NULL;
}

int main(int argc, char **argv)
{
	q = calloc(1, sizeof *q);
	if (!q)
		return 2;
	pthread_mutex_init(&q->mut, NULL);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("items %ld\n", q->items);
	pthread_mutex_destroy(&q->mut);
	struct queue *volatile old = q; /* (volatile: the compiler does not see the use after free) */
	free(q);
	q = NULL;
	if (argc > 1 && strcmp(argv[1], "late") == 0) {
		scratch = malloc(sizeof(struct queue));
		if (!scratch)
			return 2;
		for (int i = 0; i < 2; i++)
			pthread_create(&t[i], NULL, late, old);
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		free(scratch);
	}
	return 0;
}
