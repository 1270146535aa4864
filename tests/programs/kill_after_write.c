/*
 * tests/programs/kill_after_write.c - a signal that comes as a blocking
 * call returns its result: each round, a child whose SIGTERM handler calls
 * _exit writes "ready" into a pipe, and the parent, once it has read it,
 * kills the child and waits for it. The kill often reaches the child as
 * its write returns, before det has logged the write's result; det ran the
 * handler there, the write stayed "never finished", and replay took it
 * back: the parent's read waited for bytes that never came (a stall).
 * Prints each child's end.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 20

static void on_term(int sig)
{
	(void)sig;
	_exit(3);
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	int exited = 0;
	for (int i = 0; i < ROUNDS; i++) {
		int p[2];
		pipe(p);
		pid_t child = fork();
		if (child == 0) {
			signal(SIGTERM, on_term);
			write(p[1], "ready", 5);
			for (;;)
				pause();
		}
		char buf[8];
		ssize_t n = read(p[0], buf, sizeof buf);
		kill(child, SIGTERM);
		int st;
		waitpid(child, &st, 0);
		exited += n == 5 && WIFEXITED(st) && WEXITSTATUS(st) == 3;
		close(p[0]);
		close(p[1]);
	}
	printf("%d of %d children read and exited 3\n", exited, ROUNDS);
	return 0;
}
