/*
 * tests/programs/fork_atfork_lock.c - a thread forks while another takes a
 * mutex over and over, and the program's at-fork handlers take that mutex
 * before the fork and let it go after (so the child finds it free and its
 * counter whole). libc runs the handlers inside fork: in strict mode the
 * forking thread held the turn there while its prepare handler waited for
 * the other thread, which needed the turn to unlock (a recording that
 * never ended).
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void before(void)
{
	pthread_mutex_lock(&lock);
}

static void after(void)
{
	pthread_mutex_unlock(&lock);
}

static void *busy(void *arg)
{
	(void)arg;
	for (int i = 0; i < 5000; i++) {
		pthread_mutex_lock(&lock);
		counter++;
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

static void *forker(void *arg)
{
	(void)arg;
	pid_t c = fork();
	if (c == 0) {
		pthread_mutex_lock(&lock); /* free: after() ran in the child too */
		int whole = counter >= 0 && counter <= 5000;
		pthread_mutex_unlock(&lock);
		_exit(whole ? 5 : 6);
	}
	int st;
	waitpid(c, &st, 0);
	return (void *)(long)(WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

int main(void)
{
	pthread_atfork(before, after, after);
	pthread_t b, f;
	void *code;
	pthread_create(&b, NULL, busy, NULL);
	pthread_create(&f, NULL, forker, NULL);
	pthread_join(f, &code);
	pthread_join(b, NULL);
	printf("child exited %ld, counter %ld\n", (long)code, counter);
	return 0;
}
