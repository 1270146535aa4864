/*
 * fork_output_order: several processes and threads write numbered lines to
 * one stdout they share (opened before fork), at once: a parent and two
 * forked children, each with two threads, each line through printf +
 * fflush and through write(2). What comes out depends on which process's
 * write reaches the shared open file first; a replay must print it in the
 * recorded order.
 *
 * usage: fork_output_order [LINES]   (lines per thread and way, default 40)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define KIDS 2
#define THREADS 2

static int lines = 40;
static int proc_no; /* 0: the parent */
static int go[2];   /* closed by the parent: everyone starts together */

static void *writer(void *arg)
{
	int th = (int)(long)arg;
	for (int i = 0; i < lines; i++) {
		printf("P%d T%d stdio %d\n", proc_no, th, i);
		fflush(stdout);
		char line[48];
		int n = snprintf(line, sizeof line, "P%d T%d raw %d\n", proc_no, th, i);
		if (write(1, line, (size_t)n) != n)
			exit(3);
	}
	return NULL;
}

static void run_process(void)
{
	char c;
	if (proc_no)
		close(go[1]);
	else
		close(go[1]), close(go[0]);
	if (proc_no && read(go[0], &c, 1) < 0)
		exit(4);
	pthread_t th[THREADS];
	for (int k = 0; k < THREADS; k++)
		if (pthread_create(&th[k], NULL, writer, (void *)(long)k) != 0)
			exit(5);
	for (int k = 0; k < THREADS; k++)
		pthread_join(th[k], NULL);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		lines = atoi(argv[1]);
	if (lines <= 0) {
		fprintf(stderr, "usage: fork_output_order [LINES]\n");
		return 2;
	}
	if (pipe(go) != 0)
		return 1;
	fflush(stdout);
	pid_t kids[KIDS];
	for (int k = 0; k < KIDS; k++) {
		kids[k] = fork();
		if (kids[k] < 0)
			return 1;
		if (kids[k] == 0) {
			proc_no = k + 1;
			run_process();
			fflush(stdout);
			_exit(0);
		}
	}
	run_process();
	int bad = 0;
	for (int k = 0; k < KIDS; k++) {
		int st;
		if (waitpid(kids[k], &st, 0) != kids[k] || !WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
	}
	printf("all done%s\n", bad ? " (a child failed)" : "");
	return bad;
}
