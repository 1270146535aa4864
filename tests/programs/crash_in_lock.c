/* tests/programs/crash_in_lock.c - a crash inside a call det wraps, certain
 * in every mode: pbzip2's bug. main deletes the work queue (destroys and
 * frees its mutex, sets the pointer to NULL) once the consumer has taken
 * every item, and then lets the consumer go round its loop once more: it
 * locks the queue's mutex, pthread_mutex_lock(NULL), and dies of SIGSEGV
 * inside the call, while main prints and then waits in pthread_join. The
 * event of that lock never completes, so the trace ends without it. With
 * argv[1] = "abort", a SIGSEGV handler says so and calls abort() (a crash
 * handler's usual end): SIGABRT, still inside the call; with "exit", the
 * handler calls _exit(3) there. First it says whether SIGSEGV and SIGABRT
 * were at their default action (det's recorder has its own entry there). */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ITEMS 8

struct queue {
	pthread_mutex_t *mut;
	pthread_cond_t not_empty;
	int items[ITEMS], head, count;
};

static struct queue *q;
static sem_t all_taken, go_on;

static int exit_on_fault;

static void died(int sig)
{
	(void)sig;
	static const char line[] = "fault in the consumer\n";
	write(1, line, sizeof(line) - 1);
	if (exit_on_fault)
		_exit(3);
	abort();
}

static void *consumer(void *arg)
{
	(void)arg;
	for (int taken = 0;;) {
		pthread_mutex_lock(q->mut);
		while (q->count == 0)
			pthread_cond_wait(&q->not_empty, q->mut);
		int item = q->items[q->head++];
		q->count--;
		pthread_mutex_unlock(q->mut);
		printf("consumed %d\n", item);
		fflush(stdout);
		if (++taken == ITEMS) {
			sem_post(&all_taken); /* main may delete the queue now */
			sem_wait(&go_on);     /* the bug: the consumer is not done with it */
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct sigaction segv, abrt;
	sigaction(SIGSEGV, NULL, &segv);
	sigaction(SIGABRT, NULL, &abrt);
	printf("SIGSEGV %s, SIGABRT %s\n", segv.sa_handler == SIG_DFL ? "default" : "handled",
	       abrt.sa_handler == SIG_DFL ? "default" : "handled");
	exit_on_fault = argc > 1 && strcmp(argv[1], "exit") == 0;
	if (argc > 1 && (exit_on_fault || strcmp(argv[1], "abort") == 0) && signal(SIGSEGV, died) != SIG_DFL)
		printf("signal() did not return the default action\n");
	q = calloc(1, sizeof(*q));
	q->mut = malloc(sizeof(*q->mut));
	pthread_mutex_init(q->mut, NULL);
	pthread_cond_init(&q->not_empty, NULL);
	sem_init(&all_taken, 0, 0);
	sem_init(&go_on, 0, 0);
	pthread_t t;
	pthread_create(&t, NULL, consumer, NULL);
	for (int i = 0; i < ITEMS; i++) {
		pthread_mutex_lock(q->mut);
		q->items[q->count++] = i;
		pthread_cond_signal(&q->not_empty);
		pthread_mutex_unlock(q->mut);
	}
	sem_wait(&all_taken);
	pthread_mutex_destroy(q->mut);
	free(q->mut);
	q->mut = NULL;
	printf("queue deleted\n");
	fflush(stdout);
	sem_post(&go_on);
	pthread_join(t, NULL); /* (the consumer never ends: the process dies first) */
	printf("the consumer ended\n");
	return 0;
}
