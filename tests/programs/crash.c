/* tests/programs/crash.c - a thread dies of the fault MODE names after some
 * synchronization: segv, abort, assert, fpe; or (caught-abort) it aborts
 * with a SIGABRT handler that jumps back, locks again and exits 3. */
#include <assert.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static const char *mode;
static volatile int zero;
static sigjmp_buf caught;

static void on_abort(int sig)
{
	siglongjmp(caught, sig);
}

static void *victim(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100; i++) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
	if (!strcmp(mode, "segv"))
		*(volatile int *)16 = 1;
	else if (!strcmp(mode, "abort"))
		abort();
	else if (!strcmp(mode, "assert"))
		assert(zero == 1);
	else if (!strcmp(mode, "fpe"))
		printf("%d\n", 1000 / zero);
	else if (!strcmp(mode, "caught-abort")) {
		signal(SIGABRT, on_abort);
		if (sigsetjmp(caught, 1) == 0)
			abort();
		pthread_mutex_lock(&m);
		printf("abort caught\n");
		fflush(stdout);
		exit(3); /* (with m held: main never takes it again) */
	}
	return NULL;
}

int main(int argc, char **argv)
{
	mode = argc > 1 ? argv[1] : "segv";
	pthread_t t;
	pthread_create(&t, NULL, victim, NULL);
	for (;;) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
}
