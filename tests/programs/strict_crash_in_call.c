/* tests/programs/strict_crash_in_call.c - pbzip2's bug, made certain in
 * strict mode: main deletes the work queue (destroys and frees its mutex,
 * sets the pointer to NULL) once the consumer has taken every item, while
 * the consumer still goes round its loop once more and locks the queue's
 * mutex: pthread_mutex_lock(NULL) dies of SIGSEGV inside the call. The
 * consumer yields after each item (in strict mode the turn goes to main
 * there, which deletes the queue before the consumer gets it back). A
 * SIGSEGV handler says which thread died doing what, and where, then dies
 * of it (with argv[1] = "exit": calls _exit(3)). */
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ITEMS 8

struct queue {
	pthread_mutex_t *mut;
	pthread_cond_t *not_empty;
	int items[ITEMS], head, count;
};

static struct queue *q;
static sem_t all_taken;
static pthread_mutex_t stats = PTHREAD_MUTEX_INITIALIZER;
static long work;
static _Thread_local const char *who = "main", *doing = "starting";
static int exit_on_fault;

static void died(int sig, siginfo_t *info, void *uc)
{
	(void)uc;
	char line[160];
	int n = snprintf(line, sizeof(line), "%s in %s %s, at address %p\n", strsignal(sig), who, doing,
			 info->si_addr);
	write(1, line, (size_t)n);
	if (exit_on_fault)
		_exit(3);
	signal(sig, SIG_DFL); /* the fault comes again, and kills */
}

static void *consumer(void *arg)
{
	(void)arg;
	who = "the consumer";
	for (int taken = 0;;) {
		doing = "locking the queue";
		pthread_mutex_lock(q->mut);
		doing = "taking an item";
		while (q->count == 0)
			pthread_cond_wait(q->not_empty, q->mut);
		int item = q->items[q->head++];
		q->count--;
		pthread_mutex_unlock(q->mut);
		printf("consumed %d\n", item);
		fflush(stdout);
		if (++taken == ITEMS)
			sem_post(&all_taken); /* main may delete the queue now */
		sched_yield();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	exit_on_fault = argc > 1 && strcmp(argv[1], "exit") == 0;
	struct sigaction a = {.sa_sigaction = died, .sa_flags = SA_SIGINFO};
	sigaction(SIGSEGV, &a, NULL);
	q = calloc(1, sizeof(*q));
	q->mut = malloc(sizeof(*q->mut));
	q->not_empty = malloc(sizeof(*q->not_empty));
	pthread_mutex_init(q->mut, NULL);
	pthread_cond_init(q->not_empty, NULL);
	sem_init(&all_taken, 0, 0);
	pthread_t t;
	pthread_create(&t, NULL, consumer, NULL);
	for (int i = 0; i < ITEMS; i++) {
		pthread_mutex_lock(q->mut);
		q->items[q->count++] = i;
		pthread_cond_signal(q->not_empty);
		pthread_mutex_unlock(q->mut);
	}
	sem_wait(&all_taken);
	/* the bug: the consumer is not done with the queue */
	pthread_mutex_destroy(q->mut);
	free(q->mut);
	q->mut = NULL;
	printf("queue deleted\n");
	fflush(stdout);
	for (int i = 0; i < 1000000; i++) { /* more work while the consumer ends */
		pthread_mutex_lock(&stats);
		work++;
		pthread_mutex_unlock(&stats);
	}
	printf("the consumer survived\n"); /* (it waits for an item for ever) */
	return 0;
}
