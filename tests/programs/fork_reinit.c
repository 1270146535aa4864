/*
 * tests/programs/fork_reinit.c - the parent locks a mutex, forks, and the
 * child initialises its copy of the mutex again (CPython does so to its GIL
 * after a fork) while the parent goes on locking its own.
 *
 * The child's copy is another object: its pthread_mutex_init must not end
 * the parent's (det's object table is shared by the program's processes,
 * keyed by process and address). tests/e2e/test_processes.py checks that
 * every lock of the parent's is one object, recorded and replayed.
 *
 * Usage: fork_reinit   (prints "parent locked N times")
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

int main(void)
{
	int n = 0;
	pthread_mutex_lock(&m);
	n++;
	pthread_mutex_unlock(&m);
	pid_t p = fork();
	if (p < 0) {
		perror("fork");
		return 1;
	}
	if (p == 0) {
		pthread_mutex_init(&m, NULL);
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
		_exit(0);
	}
	waitpid(p, NULL, 0);
	for (int i = 0; i < 3; i++) {
		pthread_mutex_lock(&m);
		n++;
		pthread_mutex_unlock(&m);
	}
	printf("parent locked %d times\n", n);
	return 0;
}
