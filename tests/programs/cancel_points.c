/*
 * tests/programs/cancel_points.c - pthread_cancel of threads waiting at
 * each kind of cancellation point det wraps: a condition wait (plain and
 * timed), a join, a semaphore, a sleep, a pipe read, stdio output, a
 * close() entered with the request already pending, and a
 * pthread_testcancel loop. Every thread's cleanup handler makes events (a
 * lock, a count); main cancels them one by one, joins them, and prints what
 * each cleanup saw. Replay must end each thread at the same point, with the
 * same output. With the argument "nosleep", no sleeping thread (logical
 * time keeps a sleeper in its turn order: others wait for its sleep).
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum { COND, TIMEDCOND, JOIN, SEM, SLEEP, READ, PRINT, CLOSE, TESTCANCEL, WORKERS };
static const char *const names[WORKERS] = {"cond", "timedcond", "join", "sem", "sleep", "read", "print", "close",
						 "testcancel"};

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER, ready_c = PTHREAD_COND_INITIALIZER;
static int ready, sent[WORKERS], cleaned[WORKERS];
static long rounds, round_call; /* the testcancel loop's progress when it ended */
static sem_t never;
static int pipe_fds[2];
static pthread_t threads[WORKERS], forever;
static FILE *devnull;

static void count_cleanup(void *arg)
{
	pthread_mutex_lock(&m);
	cleaned[(intptr_t)arg]++;
	pthread_mutex_unlock(&m);
}

static void unlock_cleanup(void *arg)
{
	(void)arg;
	pthread_mutex_unlock(&m); /* a canceled condition wait holds it again */
}

static void say_ready(void)
{
	pthread_mutex_lock(&m);
	ready++;
	pthread_cond_broadcast(&ready_c);
	pthread_mutex_unlock(&m);
}

static void *forever_main(void *arg)
{
	(void)arg;
	sem_wait(&never);
	return NULL;
}

static void *worker(void *arg)
{
	intptr_t kind = (intptr_t)arg;
	pthread_cleanup_push(count_cleanup, arg);
	switch (kind) {
	case COND:
	case TIMEDCOND:
		pthread_mutex_lock(&m);
		ready++;
		pthread_cond_broadcast(&ready_c);
		pthread_cleanup_push(unlock_cleanup, NULL);
		for (;;) {
			if (kind == COND) {
				pthread_cond_wait(&c, &m);
			} else {
				struct timespec ts;
				clock_gettime(CLOCK_REALTIME, &ts);
				ts.tv_sec += 3600;
				pthread_cond_timedwait(&c, &m, &ts);
			}
		}
		pthread_cleanup_pop(1);
		break;
	case JOIN:
		say_ready();
		pthread_join(forever, NULL);
		break;
	case SEM:
		say_ready();
		sem_wait(&never);
		break;
	case SLEEP:
		say_ready();
		for (;;)
			sleep(3600);
		break;
	case READ: {
		char b;
		say_ready();
		for (;;)
			if (read(pipe_fds[0], &b, 1) <= 0)
				break;
		break;
	}
	case PRINT:
		say_ready();
		for (long i = 0;; i++)
			fprintf(devnull, "line %ld of output nobody reads\n", i);
		break;
	case CLOSE: {
		/* the request comes while cancellation is off: it acts at the
		 * next cancellation point, the close (a pending result) */
		int was, done = 0;
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &was);
		say_ready();
		while (!done) {
			pthread_mutex_lock(&m);
			done = sent[CLOSE];
			pthread_mutex_unlock(&m);
		}
		pthread_setcancelstate(was, NULL);
		close(dup(pipe_fds[1]));
		break;
	}
	case TESTCANCEL:
		say_ready();
		for (long i = 0;; i++) {
			pthread_mutex_lock(&m);
			rounds = i;
			pthread_mutex_unlock(&m);
			/* several calls between two events: the one that acts is
			 * the same in replay */
			for (long k = 0; k < 3; k++) {
				round_call = k;
				pthread_testcancel();
			}
		}
		break;
	}
	pthread_cleanup_pop(0);
	return NULL;
}

int main(int argc, char **argv)
{
	int sleeper = !(argc > 1 && strcmp(argv[1], "nosleep") == 0);
	sem_init(&never, 0, 0);
	if (pipe(pipe_fds) != 0 || !(devnull = fopen("/dev/null", "w")))
		return 1;
	pthread_create(&forever, NULL, forever_main, NULL);
	for (intptr_t i = 0; i < WORKERS; i++)
		if (i != SLEEP || sleeper)
			pthread_create(&threads[i], NULL, worker, (void *)i);
	pthread_mutex_lock(&m);
	while (ready < WORKERS - !sleeper)
		pthread_cond_wait(&ready_c, &m);
	pthread_mutex_unlock(&m);
	for (int i = 0; i < WORKERS; i++) {
		void *ret;
		if (i == SLEEP && !sleeper)
			continue;
		int r = pthread_cancel(threads[i]);
		pthread_mutex_lock(&m);
		sent[i] = 1;
		pthread_mutex_unlock(&m);
		pthread_join(threads[i], &ret);
		pthread_mutex_lock(&m);
		printf("%s: cancel %d, canceled %d, cleanup %d\n", names[i], r, ret == PTHREAD_CANCELED, cleaned[i]);
		pthread_mutex_unlock(&m);
	}
	pthread_mutex_lock(&m);
	printf("testcancel loop ended in round %ld, call %ld\n", rounds, round_call);
	pthread_mutex_unlock(&m);
	pthread_cancel(forever);
	pthread_join(forever, NULL);
	printf("done\n");
	return 0;
}
