/*
 * tests/programs/killed_after_write.c - a child writes a byte into a pipe
 * and waits; the parent reads it, kills the child and reaps it. (In a
 * recording the kill can land after the child's write reached the pipe but
 * before the write's return was logged, as a parent-death signal did to a
 * grandchild under load: the test makes that trace by hand.)
 */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	int p[2];
	if (pipe(p))
		return 1;
	pid_t c = fork();
	if (c == 0) {
		close(p[0]);
		if (write(p[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	char b = 0;
	ssize_t n = read(p[0], &b, 1);
	printf("read %zd byte(s): %c\n", n, n == 1 ? b : '-');
	kill(c, SIGKILL);
	int st;
	waitpid(c, &st, 0);
	printf("child killed by %s\n", WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ? "SIGKILL" : "something else");
	return 0;
}
