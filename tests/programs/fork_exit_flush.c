/*
 * tests/programs/fork_exit_flush.c - processes whose output reaches a
 * shared pipe only as they exit, as most forking test programs' does when
 * a harness captures it: stdout to a pipe is fully buffered, so each
 * printf stays in the process's buffer and exit() writes it (glibc's last
 * flush, after the exit handlers). argv[1] children (default 3) print a
 * line and exit at once; the parent sleeps 0.2 s first (skipped in
 * replay), prints and exits without waiting for them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3;
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0)
			return 2;
		if (pid == 0) {
			printf("child %d of %d\n", i, n);
			exit(0);
		}
	}
	struct timespec pause = {0, 200000000};
	nanosleep(&pause, NULL);
	printf("parent after %d children\n", n);
	return 0;
}
