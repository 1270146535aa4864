/*
 * iso_limits - what detrun --isolated refuses once a second thread exists,
 * and how a run ends: argv[1] says which.
 *   fork, signal, mmap: refused in one line, the run ends with status 125;
 *   munmap_part: the program unmaps one page of a two-page private
 *             mapping it made before the thread (a region now): refused;
 *   deadlock: the main thread joins a worker while holding the lock the
 *             worker needs (every thread blocked: status 125);
 *   exit:     the worker calls exit(7): the program's status is 7;
 *   none:     the control, which ends normally.
 *
 * Output: "started", then "survived: WHAT" if the run was not ended.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int done;

static void *worker(void *arg)
{
	if (!strcmp(arg, "exit")) {
		printf("worker exits\n");
		exit(7);
	}
	pthread_mutex_lock(&lock);
	done = 1;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "none";
	pthread_t t;
	char *before = NULL;
	if (!strcmp(what, "munmap_part")) {
		before = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (before == MAP_FAILED)
			return 3;
	}
	if (!strcmp(what, "deadlock"))
		pthread_mutex_lock(&lock);
	pthread_create(&t, NULL, worker, (void *)what);
	printf("started\n");
	fflush(stdout);
	if (!strcmp(what, "fork")) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(0);
		waitpid(pid, NULL, 0);
	} else if (!strcmp(what, "signal")) {
		signal(SIGUSR1, on_usr1);
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_usr1;
		sigaction(SIGUSR1, &sa, NULL);
	} else if (before) {
		munmap(before, 4096);
	} else if (!strcmp(what, "mmap")) {
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return 3;
	}
	pthread_join(t, NULL);
	printf("survived: %s (done = %d)\n", what, done);
	return 0;
}
