/*
 * tests/programs/handler_ends.c - handlers that end in other ways than a
 * plain return, while their thread waits in sem_wait and a worker polls
 * what they write (usleep loops): argv[1] says how.
 *   longjmp  the handler siglongjmps out of main's wait; main goes on.
 *   nested   the SIGUSR1 handler polls for a second signal, whose SIGUSR2
 *            handler runs inside it, then sets the flag the worker polls.
 *   exit     the handler ends the program with exit(3).
 * The worker blocks both signals and sends them with kill(getpid()), so
 * only main takes them. Prints what happened.
 */
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t got1, got2, done1;
static const char *how;
static sigjmp_buf back;
static sem_t never, ready;

static void on_usr2(int sig)
{
	(void)sig;
	got2 = 1;
}

static void on_usr1(int sig)
{
	(void)sig;
	if (!strcmp(how, "nested")) {
		while (!got2) /* SIGUSR2's handler runs in one of these sleeps */
			usleep(1000);
		done1 = 1; /* (the worker polls it: the last thing before returning) */
		return;
	}
	got1 = 1;
	if (!strcmp(how, "longjmp"))
		siglongjmp(back, 1);
	printf("exit in handler\n");
	exit(3);
}

static void *worker(void *arg)
{
	(void)arg;
	sem_post(&ready);
	usleep(20000);
	kill(getpid(), SIGUSR1);
	if (!strcmp(how, "nested")) {
		usleep(5000);
		kill(getpid(), SIGUSR2);
		do
			usleep(1000);
		while (!done1);
	} else {
		do /* (a sleep before each read: see handler_in_waits.c) */
			usleep(1000);
		while (!got1);
	}
	sem_post(&never); /* (main no longer waits on it) */
	return NULL;
}

int main(int argc, char **argv)
{
	how = argc > 1 ? argv[1] : "nested";
	setvbuf(stdout, NULL, _IONBF, 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_usr2;
	sigaction(SIGUSR2, &sa, NULL);
	sem_init(&never, 0, 0);
	sem_init(&ready, 0, 0);
	sigset_t both, old;
	sigemptyset(&both);
	sigaddset(&both, SIGUSR1);
	sigaddset(&both, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &both, &old);
	pthread_t w;
	pthread_create(&w, NULL, worker, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	sem_wait(&ready);
	if (sigsetjmp(back, 1) == 0) {
		while (!done1)
			sem_wait(&never); /* EINTR once the handler returned */
		printf("handler returned: got1 %d got2 %d done1 %d\n", (int)got1, (int)got2, (int)done1);
	} else {
		printf("back from the handler by siglongjmp: got1 %d\n", (int)got1);
	}
	pthread_join(w, NULL);
	printf("joined\n");
	return 0;
}
