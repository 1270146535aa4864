/* tests/programs/forker.c - forks (MODE fork), runs a command (system),
 * or execs (exec). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "fork";
	if (!strcmp(mode, "fork")) {
		pid_t p = fork();
		if (p == 0)
			_exit(3);
		int st;
		waitpid(p, &st, 0);
		printf("child exited %d\n", WEXITSTATUS(st));
	} else if (!strcmp(mode, "system")) {
		printf("system: %d\n", system("true"));
	} else {
		execl("/bin/true", "true", (char *)NULL);
		perror("execl");
	}
	return 0;
}
